import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  FakeModerationServer,
  FakeOllamaServer,
  FakeOpenAiServer,
  FakePiperServer,
  FakeTeiServer,
  FakeWhisperServer,
  formValues,
  isMultipart,
  toneWav,
} from "../fakes/index.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";

// Every test sends few requests; the limits themselves are tested in test/limits.
const WIDE_LIMITS = {
  tiers: { slow: { multiplier: 1, requests_per_minute: 100_000 } },
  rate_limits: { endpoint_limits: { audio_speech: 100_000, audio_transcriptions: 100_000 } },
};

/** An answer of the app, read whole. */
interface Answer {
  status: number;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are checked by assertions, not by types.
  body: any;
}

async function read(response: Response): Promise<Answer> {
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: response.status, text, body };
}

/** The JSON objects of the `data:` lines of an event stream. */
function events(text: string): Array<Record<string, unknown>> {
  return text
    .split("\n")
    .filter((line) => line.startsWith("data: ") && line !== "data: [DONE]")
    .map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>);
}

function post(t: TestApp, key: string, path: string, body: unknown): Promise<Answer> {
  return t
    .fetch(path, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    })
    .then(read);
}

/** The model name the fake received in its last JSON request. */
function modelSent(fake: { lastRequest: { body: unknown } }): unknown {
  return (fake.lastRequest.body as Record<string, unknown>).model;
}

describe("text engines receive their own model names, clients see the catalogue id", () => {
  // vLLM started as `vllm serve google/gemma-3-27b-it` (object form), Ollama with `gemma3:4b` (map
  // form), a server whose names are the catalogue ids (plain list), and one declared with a name it
  // does not have.
  const vllm = new FakeOpenAiServer({
    models: ["google/gemma-3-27b-it", "BAAI/bge-m3", "BAAI/bge-reranker-v2-m3"],
  });
  const ollama = new FakeOllamaServer({ models: ["gemma3:4b"] });
  const plain = new FakeOpenAiServer({ models: ["plain-chat"] });
  const misnamed = new FakeOpenAiServer({ models: ["google/gemma-3-12b-it"] });
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    await Promise.all([vllm.start(), ollama.start(), plain.start(), misnamed.start()]);
    t = await startTestApp({
      config: {
        ...WIDE_LIMITS,
        installation: { zones: [{ id: "ch" }] },
        models: [
          { id: "gemma3.8-27b", kind: "chat" },
          { id: "gemma3.8-4b", kind: "chat", local_server: true },
          { id: "plain-chat", kind: "chat" },
          { id: "misnamed-chat", kind: "chat" },
          { id: "bge-m3", kind: "embedding" },
          { id: "bge-reranker-v2-m3", kind: "rerank" },
        ],
        machines: [
          {
            name: "vllm",
            zone: "ch",
            protocol: "openai",
            url: vllm.url,
            models: [
              { id: "gemma3.8-27b", upstream: "google/gemma-3-27b-it" },
              { id: "bge-m3", upstream: "BAAI/bge-m3" },
              { id: "bge-reranker-v2-m3", upstream: "BAAI/bge-reranker-v2-m3" },
            ],
          },
          {
            name: "ollama",
            zone: "ch",
            protocol: "ollama",
            url: ollama.url,
            models: { "gemma3.8-4b": "gemma3:4b" },
          },
          { name: "plain", zone: "ch", protocol: "openai", url: plain.url, models: ["plain-chat"] },
          {
            name: "misnamed",
            zone: "ch",
            protocol: "openai",
            url: misnamed.url,
            models: [{ id: "misnamed-chat", upstream: "google/gemma-3-27b-it" }],
          },
        ],
      },
    });
    ({ key } = await t.newKey());
  });
  afterAll(async () => {
    await t?.close();
    await Promise.all([vllm.close(), ollama.close(), plain.close(), misnamed.close()]);
  });
  beforeEach(() => {
    for (const fake of [vllm, ollama, plain, misnamed]) fake.clearRequests();
  });

  const chat = (model: string, stream = false) =>
    post(t, key, "/v1/chat/completions", {
      model,
      stream,
      messages: [{ role: "user", content: "Say hello" }],
    });
  const complete = (model: string, stream = false) =>
    post(t, key, "/v1/completions", { model, stream, prompt: "Once upon a time", max_tokens: 8 });

  const table: Array<[string, string, FakeOpenAiServer | FakeOllamaServer, string]> = [
    ["openai, object form", "gemma3.8-27b", vllm, "google/gemma-3-27b-it"],
    ["ollama, map form", "gemma3.8-4b", ollama, "gemma3:4b"],
    ["openai, plain list", "plain-chat", plain, "plain-chat"],
  ];

  for (const [form, model, fake, upstream] of table) {
    it(`${form}: chat sends ${upstream}, the answer names ${model}`, async () => {
      const answer = await chat(model);
      expect(answer.status).toBe(200);
      expect(answer.body.model).toBe(model);
      expect(modelSent(fake)).toBe(upstream);
    });

    it(`${form}: every streamed chat chunk names ${model}`, async () => {
      const answer = await chat(model, true);
      expect(answer.status).toBe(200);
      const chunks = events(answer.text);
      expect(chunks.length).toBeGreaterThan(1);
      expect(new Set(chunks.map((chunk) => chunk.model))).toEqual(new Set([model]));
      expect(modelSent(fake)).toBe(upstream);
      if (upstream !== model) expect(answer.text).not.toContain(upstream);
    });

    it(`${form}: completions, whole and streamed, send ${upstream} and name ${model}`, async () => {
      const whole = await complete(model);
      expect(whole.status).toBe(200);
      expect(whole.body.model).toBe(model);
      expect(modelSent(fake)).toBe(upstream);
      const streamed = await complete(model, true);
      expect(streamed.status).toBe(200);
      expect(new Set(events(streamed.text).map((chunk) => chunk.model))).toEqual(new Set([model]));
      expect(modelSent(fake)).toBe(upstream);
    });
  }

  it("openai embeddings and rerank send the upstream names and answer with the catalogue ids", async () => {
    const embeddings = await post(t, key, "/v1/embeddings", { model: "bge-m3", input: ["ciao", "salve"] });
    expect(embeddings.status).toBe(200);
    expect(embeddings.body.model).toBe("bge-m3");
    expect(modelSent(vllm)).toBe("BAAI/bge-m3");
    const rerank = await post(t, key, "/v1/rerank", {
      model: "bge-reranker-v2-m3",
      query: "gatto",
      documents: ["il gatto dorme", "il cane abbaia"],
    });
    expect(rerank.status).toBe(200);
    expect(rerank.body.model).toBe("bge-reranker-v2-m3");
    expect(modelSent(vllm)).toBe("BAAI/bge-reranker-v2-m3");
  });

  it("a name the engine does not have: the engine's 404 stays between Zona and the engine", async () => {
    for (const stream of [false, true]) {
      const answer = await chat("misnamed-chat", stream);
      expect(answer.status).toBe(502);
      expect(answer.body.error.type).toBe("bad_gateway");
      expect(answer.text).not.toContain("google/gemma");
      expect(misnamed.lastRequest.body).toMatchObject({ model: "google/gemma-3-27b-it" });
    }
  });
});

describe("audio, embedding and moderation engines receive their own model names", () => {
  const ollama = new FakeOllamaServer({ models: ["bge-m3:567m"] });
  const tei = new FakeTeiServer({ models: ["BAAI/bge-reranker-v2-m3"] });
  const speaches = new FakeWhisperServer({ models: ["Systran/faster-whisper-large-v3"] });
  const whisperCpp = new FakeWhisperServer({ style: "whisper.cpp" });
  const guard = new FakeModerationServer({ models: ["meta-llama/Llama-Guard-3-1B"] });
  const piper = new FakePiperServer({ models: ["it_IT-paola-medium", "en_US-amy-high"] });
  const fakes = [ollama, tei, speaches, whisperCpp, guard, piper];
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    await Promise.all(fakes.map((fake) => fake.start()));
    t = await startTestApp({
      config: {
        ...WIDE_LIMITS,
        installation: { zones: [{ id: "ch" }], fallback_zone: "ch-fallback" },
        engines: { piper_voices: { amy: "en_US-amy-high" } },
        models: [
          { id: "bge-m3", kind: "embedding" },
          { id: "bge-reranker-v2-m3", kind: "rerank" },
          { id: "asr-1", kind: "asr" },
          { id: "asr-1-hd", kind: "asr" },
          { id: "tts-1", kind: "tts" },
          { id: "guard", kind: "moderation" },
        ],
        machines: [
          {
            name: "ollama",
            zone: "ch",
            protocol: "ollama",
            url: ollama.url,
            models: { "bge-m3": "bge-m3:567m" },
          },
          {
            name: "tei",
            zone: "ch",
            protocol: "tei",
            url: tei.url,
            models: [{ id: "bge-reranker-v2-m3", upstream: "BAAI/bge-reranker-v2-m3" }],
          },
          {
            name: "speaches",
            zone: "ch",
            protocol: "whisper",
            url: speaches.url,
            models: { "asr-1": "Systran/faster-whisper-large-v3" },
          },
          {
            name: "whisper-cpp",
            zone: "ch-fallback",
            protocol: "whisper",
            url: whisperCpp.url,
            models: [
              { id: "asr-1", upstream: "ggml-large-v3-turbo" },
              { id: "asr-1-hd", upstream: "ggml-large-v3" },
            ],
          },
          {
            name: "guard",
            zone: "ch-fallback",
            protocol: "moderation",
            url: guard.url,
            models: [{ id: "guard", upstream: "meta-llama/Llama-Guard-3-1B" }],
          },
          { name: "piper", zone: "ch-fallback", protocol: "piper", url: piper.url, models: ["tts-1"] },
        ],
      },
    });
    ({ key } = await t.newKey());
  });
  afterAll(async () => {
    await t?.close();
    await Promise.all(fakes.map((fake) => fake.close()));
  });
  beforeEach(() => {
    for (const fake of fakes) fake.clearRequests();
  });

  const transcribe = async (fields: Record<string, string>) => {
    const form = new FormData();
    form.append("file", new Blob([toneWav({ seconds: 1 })], { type: "audio/wav" }), "tone.wav");
    for (const [name, value] of Object.entries(fields)) form.append(name, value);
    return read(
      await t.fetch("/v1/audio/transcriptions", {
        method: "POST",
        headers: { authorization: `Bearer ${key}` },
        body: form,
      }),
    );
  };

  it("ollama embeddings (map form) send bge-m3:567m and answer bge-m3", async () => {
    const answer = await post(t, key, "/v1/embeddings", { model: "bge-m3", input: "ciao" });
    expect(answer.status).toBe(200);
    expect(answer.body.model).toBe("bge-m3");
    expect(modelSent(ollama)).toBe("bge-m3:567m");
  });

  it("tei rerank sends no model name (TEI serves one) and answers the catalogue id", async () => {
    const answer = await post(t, key, "/v1/rerank", {
      query: "gatto",
      documents: ["il gatto dorme", "il cane abbaia"],
    });
    expect(answer.status).toBe(200);
    expect(answer.body.model).toBe("bge-reranker-v2-m3");
    expect(tei.lastRequest.path).toBe("/rerank");
    expect(modelSent(tei)).toBeUndefined();
  });

  it("whisper (speaches, map form): the model field carries the Hugging Face name", async () => {
    const answer = await transcribe({ model: "asr-1", response_format: "verbose_json" });
    expect(answer.status).toBe(200);
    const upload = speaches.lastRequest.body;
    expect(isMultipart(upload) ? formValues(upload, "model") : []).toEqual([
      "Systran/faster-whisper-large-v3",
    ]);
    expect(answer.text).not.toContain("Systran");
  });

  it("whisper (whisper.cpp, object form): asr-1-hd on the fallback server sends its upstream name", async () => {
    const answer = await transcribe({ model: "asr-1-hd" });
    expect(answer.status).toBe(200);
    const upload = whisperCpp.lastRequest.body;
    expect(isMultipart(upload) ? formValues(upload, "model") : []).toEqual(["ggml-large-v3"]);
    expect(speaches.requests).toHaveLength(0);
  });

  it("moderation sends its upstream name; piper reads amy with engines.piper_voices' en_US-amy-high", async () => {
    const answer = await t.fetch("/v1/audio/speech", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ input: "Good morning", voice: "amy" }),
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toBe("audio/wav");
    expect(modelSent(guard)).toBe("meta-llama/Llama-Guard-3-1B");
    // The content check's model is Zona's own: clients never see it.
    const listed = await t.fetch("/v1/models", { headers: { authorization: `Bearer ${key}` } });
    const ids = ((await listed.json()) as { data: Array<{ id: string }> }).data.map((model) => model.id);
    expect(ids).not.toContain("guard");
    const retrieved = await t.fetch("/v1/models/guard", { headers: { authorization: `Bearer ${key}` } });
    expect(retrieved.status).toBe(404);
    expect(piper.voicesAsked).toEqual(["en_US-amy-high"]);
    expect(piper.voicesRead).toEqual(["en_US-amy-high"]);
  });

  it("piper: the voices not configured keep their default models", async () => {
    const answer = await post(t, key, "/v1/audio/speech", { input: "Buongiorno", language: "it" });
    expect(answer.status).toBe(200);
    expect(piper.voicesAsked).toEqual(["it_IT-paola-medium"]);
  });
});
