import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { statusError } from "../../src/engines/http/upstream-errors.ts";
import {
  type FakeErrorEcho,
  FakeImagesServer,
  FakeModerationServer,
  FakeOpenAiServer,
  FakePiperServer,
  type FakeServer,
  FakeTeiServer,
  FakeWhisperServer,
} from "../fakes/index.ts";
import { type CapturedLogs, captureLogs, type LogLine } from "../helpers/log-capture.ts";
import { lineWhere } from "../helpers/log-lines.ts";
import { CANARY, withCanary } from "../helpers/log-scan.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";
import { toneWav } from "../media/wav-fixtures.ts";

const CHAT = "gemma3.8-27b";

/** Every piece of the canary of six characters or more: a message cut anywhere still shows one. */
const CANARY_PARTS = Array.from({ length: CANARY.length - 5 }, (_, at) => CANARY.slice(at, at + 6));

function expectNoPartOfTheCanary(text: string): void {
  for (const part of CANARY_PARTS) expect(text).not.toContain(part);
}

const ECHOES: Array<{ echo: Exclude<FakeErrorEcho, "none">; status: number }> = [
  { echo: "json", status: 400 },
  { echo: "text", status: 500 },
];

describe("Logs: an upstream error that echoes the request is logged without its text", () => {
  const openai = new FakeOpenAiServer();
  const tei = new FakeTeiServer();
  const images = new FakeImagesServer();
  const piper = new FakePiperServer();
  const whisper = new FakeWhisperServer();
  const moderation = new FakeModerationServer();
  const fakes = [openai, tei, images, piper, whisper, moderation];
  let t: TestApp;
  let logs: CapturedLogs;
  let key: string;

  beforeAll(async () => {
    const [o, e, i, p, w, m] = await Promise.all(fakes.map((fake) => fake.start()));
    logs = captureLogs("trace");
    t = await startTestApp({
      logger: logs.logger,
      config: {
        // A transcription with a prompt goes to the fallback zone's server.
        installation: { zones: [{ id: "ch-ti" }], fallback_zone: "ch-fallback" },
        rate_limits: { endpoint_limits: { image_generations: 100_000 } },
        models: [
          { id: CHAT, kind: "chat" },
          { id: "bge-m3", kind: "embedding" },
          { id: "bge-reranker-v2-m3", kind: "rerank" },
          { id: "z-image-turbo", kind: "image" },
          { id: "tts-1", kind: "tts" },
          { id: "asr-1", kind: "asr" },
        ],
        machines: [
          { name: "ti-chat", zone: "ch-ti", protocol: "openai", url: o?.url, models: [CHAT] },
          {
            name: "ti-tei",
            zone: "ch-ti",
            protocol: "tei",
            url: e?.url,
            models: ["bge-m3", "bge-reranker-v2-m3"],
          },
          { name: "ti-images", zone: "ch-ti", protocol: "images", url: i?.url, models: ["z-image-turbo"] },
          { name: "ti-piper", zone: "ch-ti", protocol: "piper", url: p?.url, models: ["tts-1"] },
          { name: "ch-whisper", zone: "ch-fallback", protocol: "whisper", url: w?.url, models: ["asr-1"] },
          { name: "ti-moderation", zone: "ch-ti", protocol: "moderation", url: m?.url },
        ],
      },
    });
    key = (await t.newKey()).key;
  });
  afterAll(async () => {
    await t?.close();
    await Promise.all(fakes.map((fake) => fake.close()));
  });
  beforeEach(async () => {
    for (const fake of fakes) await fake.setMode("normal", { errorEcho: "none", errorStatus: 500 });
    logs.raw.length = 0;
  });

  const post = (path: string, body: unknown) =>
    t.fetch(path, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  const messages = [{ role: "user", content: withCanary("Summarise the minutes of Lugano's council") }];
  const transcribe = () => {
    const form = new FormData();
    form.append("model", "asr-1");
    form.append("prompt", withCanary("Lugano, Ceresio"));
    form.append("file", new Blob([new Uint8Array(toneWav({ dbfs: -20, seconds: 1 }))]), "a.wav");
    return t.fetch("/v1/audio/transcriptions", {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
      body: form,
    });
  };

  const surfaces: Array<{
    surface: string;
    failing: () => FakeServer;
    machine: string;
    send: () => Promise<Response>;
  }> = [
    {
      surface: "chat completions",
      failing: () => openai,
      machine: "ti-chat",
      send: () => post("/v1/chat/completions", { model: CHAT, messages }),
    },
    {
      surface: "chat completions, streamed",
      failing: () => openai,
      machine: "ti-chat",
      send: () => post("/v1/chat/completions", { model: CHAT, messages, stream: true }),
    },
    {
      surface: "completions",
      failing: () => openai,
      machine: "ti-chat",
      send: () => post("/v1/completions", { model: CHAT, prompt: withCanary("Once upon a time") }),
    },
    {
      surface: "embeddings",
      failing: () => tei,
      machine: "ti-tei",
      send: () => post("/v1/embeddings", { model: "bge-m3", input: [withCanary("alpha"), "beta"] }),
    },
    {
      surface: "rerank",
      failing: () => tei,
      machine: "ti-tei",
      send: () =>
        post("/v1/rerank", { query: withCanary("red apple"), documents: ["a red apple", withCanary("pie")] }),
    },
    {
      surface: "images",
      failing: () => images,
      machine: "ti-images",
      send: () =>
        post("/v1/images/generations", { model: "z-image-turbo", prompt: withCanary("A lighthouse") }),
    },
    {
      surface: "the content check of images",
      failing: () => moderation,
      machine: "ti-moderation",
      send: () =>
        post("/v1/images/generations", { model: "z-image-turbo", prompt: withCanary("A lighthouse") }),
    },
    {
      surface: "speech",
      failing: () => piper,
      machine: "ti-piper",
      send: () =>
        post("/v1/audio/speech", { model: "tts-1", voice: "paola", input: withCanary("Ciao a tutti") }),
    },
    {
      surface: "the content check of speech",
      failing: () => moderation,
      machine: "ti-moderation",
      send: () =>
        post("/v1/audio/speech", { model: "tts-1", voice: "paola", input: withCanary("Ciao a tutti") }),
    },
    {
      surface: "transcription",
      failing: () => whisper,
      machine: "ch-whisper",
      send: transcribe,
    },
  ];
  const cases = surfaces.flatMap((surface) => ECHOES.map((echo) => ({ ...surface, ...echo })));

  it.each(cases)("($surface, $echo $status)", async ({ failing, machine, send, echo, status }) => {
    const fake = failing();
    await fake.setMode("error500", { errorEcho: echo, errorStatus: status });
    const response = await send();
    const body = await response.text();
    expect(response.status).toBeGreaterThanOrEqual(500);
    // The engine did repeat the request, so the log had the chance to leak it.
    expect(fake.requests.length).toBeGreaterThan(0);
    const requestId = response.headers.get("x-request-id");
    await lineWhere(logs.lines(), (line) => line.msg === "request" && line.request_id === requestId);

    const failed = logs.lines().filter((line) => line.msg === "upstream attempt failed");
    expect(failed.length).toBeGreaterThan(0);
    expect(failed[0]).toMatchObject({
      request_id: requestId,
      machine,
      error_kind: "status",
      upstream_status: status,
      message_chars: expect.any(Number),
    });
    expect(failed[0]?.message_chars).toBeGreaterThan(CANARY.length);
    if (echo === "json") {
      expect(failed[0]).toMatchObject({ upstream_type: "BadRequestError", upstream_code: "400" });
    }
    expectNoPartOfTheCanary(logs.raw.join("\n"));
    // The client's answer is Zona's own words.
    expectNoPartOfTheCanary(body);
  });

  it("(chat completions, streamed, failing after the first chunks with the request in the error event)", async () => {
    await openai.setMode("errorMidStream", { errorEcho: "json", dropAfterChunks: 2 });
    const response = await post("/v1/chat/completions", { model: CHAT, messages, stream: true });
    expect(response.status).toBe(200);
    const body = await response.text();
    expect(body).toContain('"code":"upstream_error"');
    const requestId = response.headers.get("x-request-id");
    await lineWhere(logs.lines(), (line) => line.msg === "request" && line.request_id === requestId);

    const failed = logs.lines().find((line: LogLine) => line.msg === "stream failed after it started");
    expect(failed?.err).toMatchObject({
      type: "UpstreamError",
      message: "the upstream failed during the answer",
      error_kind: "status",
      upstream_status: 500,
      upstream_type: "InternalServerError",
      upstream_code: "500",
      message_chars: expect.any(Number),
    });
    expectNoPartOfTheCanary(logs.raw.join("\n"));
  });
});

describe("Logs: an upstream error logged as `err` is written without the engine's message", () => {
  const echoed = () =>
    statusError(
      400,
      JSON.stringify({
        error: { message: `bad request: ${withCanary("Tell me")}`, type: "BadRequestError", code: 400 },
      }),
      [],
    );

  it("(the error itself, and as the cause of another)", () => {
    const logs = captureLogs("trace");
    const error = echoed();
    // The error keeps the engine's words for whoever handles it; only its log form leaves them out.
    expect(error.message).toContain(CANARY);
    logs.logger.warn({ err: error }, "alone");
    logs.logger.warn({ err: new Error("the answer failed", { cause: echoed() }) }, "as a cause");
    logs.logger.warn({ err: new AggregateError([echoed()], "all failed") }, "in an aggregate");

    expectNoPartOfTheCanary(logs.raw.join("\n"));
    const [alone, cause, aggregate] = logs.lines();
    expect(alone?.err).toMatchObject({
      type: "UpstreamError",
      message: "the upstream answered 400",
      error_kind: "status",
      upstream_status: 400,
      upstream_type: "BadRequestError",
      upstream_code: "400",
      message_chars: "bad request: Tell me ".length + CANARY.length,
    });
    expect(alone?.err.stack).toMatch(/^UpstreamError: the upstream answered 400\n\s+at /);
    expect(cause?.err.message).toBe("the answer failed: the upstream answered 400");
    expect(aggregate?.err.aggregateErrors[0].message).toBe("the upstream answered 400");
  });
});
