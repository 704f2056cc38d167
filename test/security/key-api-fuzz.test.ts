import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ENDPOINT_NAMES } from "../../src/config/names.ts";
import {
  FakeImagesServer,
  FakeModerationServer,
  FakeOllamaServer,
  FakeOpenAiServer,
  FakePiperServer,
  FakeTeiServer,
  FakeVideosServer,
  FakeWhisperServer,
} from "../fakes/index.ts";
import { documentFixture, type KbStack, startKbStack } from "../knowledge/kb-stack.ts";
import { dataUri, MAGIC } from "../text/text-app.ts";
import {
  expectHealthy,
  expectSaneAnswer,
  FUZZ_SEED,
  type FuzzCase,
  fuzzRuns,
  jsonCases,
  pathCases,
  StatusTally,
} from "./hostile-values.ts";

// Every endpoint of the key API fed hostile input. FUZZ_RUNS=300 for a longer search.
const RUNS = fuzzRuns(20);
const CHAT = "gemma3.8-27b";

/** Field names of the key API's bodies (spec "Text generation parameters", "Speech", "Images", "Video"). */
const FIELDS = (
  "model messages prompt input stream stream_options max_tokens max_completion_tokens n " +
  "temperature top_p stop seed tools tool_choice response_format logprobs top_logprobs " +
  "logit_bias service_tier instructions max_output_tokens text encoding_format query " +
  "documents top_n return_documents question top_k voice language speed size seconds " +
  "input_reference metadata store __proto__"
).split(" ");

const user = (content: unknown) => ({ role: "user", content });
const PICTURE = dataUri(MAGIC.png);
const TOOL = { type: "function", function: { name: "f", parameters: { type: "object", properties: {} } } };

/** A JSON endpoint of the key API and a valid body of it (`{slug}`: the fuzz base). */
interface JsonEndpoint {
  name: string;
  path: string;
  valid: Record<string, unknown>;
  /** The valid body answers 2xx (not so for an unsupported path). */
  works?: false;
}

/** The JSON endpoints of the key API (src/routes/v1, spec "Summary (key API)"), with valid bodies. */
const JSON_ENDPOINTS: JsonEndpoint[] = [
  {
    name: "/v1/chat/completions",
    path: "/v1/chat/completions",
    valid: {
      model: CHAT,
      messages: [{ role: "system", content: "Be brief." }, user("hi")],
      max_tokens: 16,
      temperature: 0.5,
      stop: ["\n"],
      tools: [TOOL],
      tool_choice: "auto",
    },
  },
  {
    name: "/v1/chat/completions (stream)",
    path: "/v1/chat/completions",
    valid: {
      model: CHAT,
      messages: [user("hi")],
      stream: true,
      stream_options: { include_usage: true },
      max_completion_tokens: 16,
      response_format: { type: "json_object" },
    },
  },
  {
    name: "/v1/chat/completions (image parts)",
    path: "/v1/chat/completions",
    valid: {
      model: "vision-27b",
      messages: [
        user([
          { type: "text", text: "What is this?" },
          { type: "image_url", image_url: { url: PICTURE } },
        ]),
      ],
    },
  },
  {
    name: "/v1/chat/completions (local-model server)",
    path: "/v1/chat/completions",
    valid: { model: "local-8b", messages: [user("hi")], n: 1 },
  },
  {
    name: "/v1/completions",
    path: "/v1/completions",
    valid: { model: CHAT, prompt: ["hi"], max_tokens: 16, seed: 1 },
  },
  {
    name: "/v1/completions (stream)",
    path: "/v1/completions",
    valid: { model: CHAT, prompt: "hi", stream: true },
  },
  {
    name: "/v1/responses",
    path: "/v1/responses",
    valid: {
      model: CHAT,
      input: [user("hi")],
      instructions: "Be brief.",
      max_output_tokens: 16,
      text: { format: { type: "json_object" } },
      tools: [{ type: "function", name: "f", parameters: { type: "object", properties: {} } }],
    },
  },
  {
    name: "/v1/embeddings",
    path: "/v1/embeddings",
    valid: { model: "bge-m3", input: ["a fox", "a hen"], encoding_format: "base64" },
  },
  {
    name: "/v1/rerank",
    path: "/v1/rerank",
    valid: {
      model: "bge-reranker-v2-m3",
      query: "fox",
      documents: ["a fox", "a hen"],
      top_n: 1,
      return_documents: true,
    },
  },
  {
    name: "/v1/knowledge-bases/{slug}/ask",
    path: "/v1/knowledge-bases/{slug}/ask",
    valid: { question: "What do foxes eat?", top_k: 3, model: CHAT },
  },
  {
    name: "/v1/audio/speech",
    path: "/v1/audio/speech",
    valid: {
      model: "tts-1",
      input: "Ciao a tutti.",
      voice: "paola",
      language: "it",
      response_format: "wav",
      speed: 1,
    },
  },
  {
    name: "/v1/images/generations",
    path: "/v1/images/generations",
    valid: {
      model: "z-image-turbo",
      prompt: "A red fox in the snow",
      n: 1,
      size: "1024x1024",
      response_format: "url",
      seed: 7,
    },
  },
  {
    name: "/v1/videos",
    path: "/v1/videos",
    valid: { model: "wan-2.2-5b-fast", prompt: "A fox", seconds: 5, size: "1280x704" },
  },
  { name: "/v1/images/edits (unsupported)", path: "/v1/images/edits", valid: { prompt: "x" }, works: false },
];

/** The endpoints of the key API, each with the hostile requests it gets. */
const ENDPOINTS: Array<{
  method: string;
  name: string;
  auth?: false;
  cases: (slug: string) => fc.Arbitrary<FuzzCase>;
}> = [
  ...JSON_ENDPOINTS.map((endpoint) => ({
    method: "POST",
    name: endpoint.name,
    cases: (slug: string) => jsonCases(endpoint.path.replace("{slug}", slug), endpoint.valid, FIELDS),
  })),
  { method: "GET", name: "/v1/models", cases: () => pathCases("/v1/models", ["limit", "after"]) },
  { method: "GET", name: "/v1/models/{id}", cases: () => pathCases("/v1/models/{id}", []) },
  { method: "GET", name: "/v1/knowledge-bases", cases: () => pathCases("/v1/knowledge-bases", ["limit"]) },
  { method: "GET", name: "/v1/videos", cases: () => pathCases("/v1/videos", ["after", "limit", "order"]) },
  { method: "GET", name: "/v1/videos/{id}", cases: () => pathCases("/v1/videos/{id}", []) },
  {
    method: "GET",
    name: "/v1/videos/{id}/content",
    cases: () => pathCases("/v1/videos/{id}/content", ["variant"]),
  },
  { method: "DELETE", name: "/v1/videos/{id}", cases: () => pathCases("/v1/videos/{id}", []) },
  {
    method: "GET",
    name: "/v1/images/file/{id} (signed link, no key)",
    auth: false,
    cases: () => pathCases("/v1/images/file/{id}", ["expires", "signature"]),
  },
];

/** Every engine the key API reaches, as fakes. */
function startFakes() {
  const fakes = {
    chat: new FakeOpenAiServer(),
    ollama: new FakeOllamaServer(),
    tei: new FakeTeiServer({ wordEmbeddings: true }),
    whisper: new FakeWhisperServer(),
    piper: new FakePiperServer(),
    moderation: new FakeModerationServer(),
    images: new FakeImagesServer(),
    videos: new FakeVideosServer({ jobMs: 100 }),
  };
  return fakes;
}

const RAISED = 1_000_000;

describe("Hostile input on the key API (spec Errors / Shapes 1-5): property-based, fixed seed", () => {
  let s: KbStack;
  let fakes: ReturnType<typeof startFakes>;
  let key = "";
  let slug = "";
  const tally = new StatusTally();

  beforeAll(async () => {
    fakes = startFakes();
    const url = Object.fromEntries(
      await Promise.all(Object.entries(fakes).map(async ([name, fake]) => [name, (await fake.start()).url])),
    ) as Record<keyof typeof fakes, string>;
    const machine = (name: keyof typeof fakes, protocol: string, models?: string[]) => ({
      name,
      zone: "ch-ti",
      protocol,
      url: url[name],
      ...(models ? { models } : {}),
    });
    s = await startKbStack({
      fakes: { tei: fakes.tei, chat: fakes.chat },
      config: {
        // Loopback trusted: the signed-link endpoint's address limit is twenty times wider.
        installation: { zones: [{ id: "ch-ti" }], trusted_networks: ["127.0.0.0/8"] },
        tiers: { slow: { multiplier: 1, requests_per_minute: RAISED } },
        rate_limits: {
          endpoint_limits: Object.fromEntries(ENDPOINT_NAMES.map((name) => [name, RAISED])),
        },
        engines: { video_poll_interval_seconds: 0.02 },
        models: [
          { id: CHAT, kind: "chat" },
          { id: "vision-27b", kind: "chat", vision: true },
          { id: "local-8b", kind: "chat", local_server: true },
          { id: "bge-m3", kind: "embedding" },
          { id: "bge-reranker-v2-m3", kind: "rerank" },
          { id: "asr-1", kind: "asr" },
          { id: "tts-1", kind: "tts" },
          { id: "z-image-turbo", kind: "image" },
          { id: "wan-2.2-5b-fast", kind: "video" },
        ],
        machines: [
          machine("chat", "openai", [CHAT, "vision-27b"]),
          machine("ollama", "ollama", ["local-8b"]),
          machine("tei", "tei", ["bge-m3", "bge-reranker-v2-m3"]),
          machine("whisper", "whisper", ["asr-1"]),
          machine("piper", "piper", ["tts-1"]),
          machine("moderation", "moderation"),
          machine("images", "images", ["z-image-turbo"]),
          machine("videos", "videos", ["wan-2.2-5b-fast"]),
        ],
      },
    });
    // A base with a ready document, so that questions reach the search and the chat model.
    const owner = await s.user();
    slug = await s.createBase(owner, "Fuzz notes");
    const document = await s.ingest(owner, slug, documentFixture("notes.txt"), "notes.txt");
    expect(document.status).toBe("ready");
    key = (await s.keyOf(owner.accountId)).key;
  }, 60_000);

  afterAll(async () => {
    tally.print(`key API, ${RUNS} cases per endpoint, seed ${FUZZ_SEED}`);
    await s?.close();
    await Promise.all(Object.values(fakes ?? {}).map((fake) => fake.close()));
  });

  // Without this the fuzz could stay at the door: each nearly valid body starts from one that works.
  it.each(
    JSON_ENDPOINTS.filter((endpoint) => endpoint.works !== false),
  )("$name: the valid body the fuzz starts from is answered 2xx", async (endpoint) => {
    const response = await s.t.fetch(endpoint.path.replace("{slug}", slug), {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(endpoint.valid),
    });
    const text = await response.text();
    expect(response.status, text.slice(0, 300)).toBeLessThan(300);
  });

  it.each(
    ENDPOINTS,
  )("$method $name: malformed JSON, wrong types, huge numbers, deep nesting, invalid UTF-8, hostile ids and queries never give a 500, every error in the key API's shape", async (endpoint) => {
    await fc.assert(
      fc.asyncProperty(endpoint.cases(slug), async (request) => {
        const response = await s.t.fetch(request.path, {
          method: endpoint.method,
          headers: {
            ...(endpoint.auth === false ? {} : { authorization: `Bearer ${key}` }),
            ...(request.contentType ? { "content-type": request.contentType } : {}),
          },
          ...(request.body === undefined ? {} : { body: request.body }),
          // A case that hangs fails here, named, instead of at the test's timeout.
          signal: AbortSignal.timeout(20_000),
        });
        const text = await response.text();
        tally.add(`${endpoint.method} ${endpoint.name}`, response.status, text);
        expectSaneAnswer("key", response.status, text, response.headers.get("content-type"));
      }),
      { seed: FUZZ_SEED, numRuns: RUNS },
    );
    await expectHealthy(s.t);
  }, 300_000);
});
