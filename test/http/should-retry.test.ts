import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeOpenAiServer } from "../fakes/index.ts";
import { freePort } from "../helpers/free-port.ts";
import { rawRequest } from "../helpers/raw-http.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";

const CHAT = "gemma3.8-27b";
const ON_REQUEST = "gemma3.8-70b";
const BROKEN = "gemma3.8-broken";
const NOWHERE = "gemma3.8-nowhere";
const MB = 1024 * 1024;

type Call = (t: TestApp, key: string) => Promise<{ status: number; shouldRetry: string | null }>;

const post =
  (path: string, body: unknown, headers: Record<string, string> = {}): Call =>
  async (t, key) => {
    const response = await t.fetch(path, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });
    await response.arrayBuffer();
    return { status: response.status, shouldRetry: response.headers.get("x-should-retry") };
  };

const get =
  (path: string, headers: (key: string) => Record<string, string>): Call =>
  async (t, key) => {
    const response = await t.fetch(path, { headers: headers(key) });
    await response.arrayBuffer();
    return { status: response.status, shouldRetry: response.headers.get("x-should-retry") };
  };

const chat = (model: string, extra: Record<string, unknown> = {}) => ({
  model,
  messages: [{ role: "user", content: "hello" }],
  ...extra,
});
const withKey = (key: string) => ({ authorization: `Bearer ${key}` });

describe("errors the spec says not to retry carry x-should-retry: false, the others do not", () => {
  const engine = new FakeOpenAiServer();
  const broken = new FakeOpenAiServer();
  let t: TestApp;
  let key: string;
  let poorKey: string;

  beforeAll(async () => {
    const [ok, bad] = await Promise.all([engine.start(), broken.start()]);
    await broken.setMode("error500");
    const deadPort = await freePort();
    t = await startTestApp({
      config: {
        installation: { zones: [{ id: "ch-ti" }] },
        tiers: {
          slow: { multiplier: 1, requests_per_minute: 10_000 },
          ludicrous: { multiplier: 8, requests_per_minute: 1 },
        },
        models: [
          { id: CHAT, kind: "chat", prices: { input_per_million_tokens: 1, output_per_million_tokens: 2 } },
          { id: ON_REQUEST, kind: "chat", on_request: true },
          { id: BROKEN, kind: "chat" },
          { id: NOWHERE, kind: "chat" },
        ],
        machines: [
          { name: "ti-ok", zone: "ch-ti", protocol: "openai", url: ok.url, models: [CHAT, ON_REQUEST] },
          { name: "ti-broken", zone: "ch-ti", protocol: "openai", url: bad.url, models: [BROKEN] },
          {
            name: "ti-gone",
            zone: "ch-ti",
            protocol: "openai",
            url: `http://127.0.0.1:${deadPort}`,
            models: [NOWHERE],
          },
        ],
      },
      extend: (app) => {
        app.get("/v1-test/boom", () => {
          throw new Error("an unexpected failure");
        });
      },
    });
    key = (await t.newKey()).key;
    poorKey = (await t.newKey({ key: { monthly_limit: 0.000001 } })).key;
  });
  afterAll(async () => {
    await t.close();
    await engine.close();
    await broken.close();
  });

  // Spec "Retry guidance": 400, 401, 402, 404, 422, 501 and 503 model_activation_required are not
  // retried; 413 says "no" in the status table too.
  const final: Array<[string, number, Call]> = [
    ["400 unknown parameter", 400, post("/v1/chat/completions", chat(CHAT, { metadata: { a: "b" } }))],
    [
      "400 unknown X-Service-Tier",
      400,
      get("/v1/models", (key) => ({ ...withKey(key), "x-service-tier": "warp" })),
    ],
    ["401 invalid_api_key", 401, get("/v1/models", () => ({}))],
    ["402 spending_limit_reached", 402, (t) => post("/v1/chat/completions", chat(CHAT))(t, poorKey)],
    ["404 unknown_endpoint", 404, get("/v1/assistants", withKey)],
    ["404 model_not_found", 404, post("/v1/chat/completions", chat("gpt-4o"))],
    ["404 model_not_found of models.retrieve", 404, get("/v1/models/gpt-4o", withKey)],
    [
      "413 request over 64 MB",
      413,
      async (t, key) => {
        const response = await rawRequest(`${t.url}/v1/chat/completions`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${key}`,
            "content-type": "application/json",
            "content-length": 64 * MB + 1,
          },
          chunk: Buffer.alloc(64 * 1024, 0x20),
          chunks: 4,
        });
        const header = response.headers["x-should-retry"];
        return { status: response.status, shouldRetry: typeof header === "string" ? header : null };
      },
    ],
    ["422 invalid_value", 422, post("/v1/chat/completions", chat(CHAT, { temperature: 9 }))],
    ["501 stream_not_implemented", 501, post("/v1/responses", { model: CHAT, input: "hello", stream: true })],
    ["503 model_activation_required", 503, post("/v1/chat/completions", chat(ON_REQUEST))],
    ["app API 401 unauthorized", 401, get("/api/v1/chat/sessions", () => ({}))],
    ["app API 404 unknown path", 404, get("/api/v1/nothing-here", () => ({}))],
    [
      "operator API 401",
      401,
      get("/admin/v1/accounts", () => ({ authorization: "Bearer wrong-token-123456" })),
    ],
  ];
  it.each(
    final,
  )("spec Retry guidance, not retried: %s carries x-should-retry: false", async (_name, status, call) => {
    const answer = await call(t, key);
    expect(answer.status).toBe(status);
    expect(answer.shouldRetry).toBe("false");
  });

  // Spec "Retry guidance": 429 after Retry-After, 502 and 503 zone/model_unavailable with growing pauses, 500 once.
  const retried: Array<[string, number, Call]> = [
    [
      "429 tier limit",
      429,
      async (t) => {
        const own = (await t.newKey()).key;
        const tier = (key: string) => ({ ...withKey(key), "x-service-tier": "ludicrous" });
        await get("/v1/models", tier)(t, own);
        return get("/v1/models", tier)(t, own);
      },
    ],
    ["500 unexpected failure", 500, get("/v1-test/boom", () => ({}))],
    ["502 bad_gateway", 502, post("/v1/chat/completions", chat(BROKEN))],
    ["503 zone_unavailable", 503, post("/v1/chat/completions", chat(NOWHERE))],
  ];
  it.each(retried)("spec Retry guidance, retried: %s has no x-should-retry", async (_name, status, call) => {
    const answer = await call(t, key);
    expect(answer.status).toBe(status);
    expect(answer.shouldRetry).toBeNull();
  });

  it("a success has no x-should-retry", async () => {
    const answer = await get("/v1/models", withKey)(t, key);
    expect(answer).toEqual({ status: 200, shouldRetry: null });
  });

  it("the official openai SDK (default retries) sends a streamed /v1/responses and a 503 model_activation_required once each", async () => {
    const own = (await t.newKey()).key;
    const client = new OpenAI({ apiKey: own, baseURL: `${t.url}/v1` });
    const streamed = await client.responses
      .create({ model: CHAT, input: "hello", stream: true })
      .catch((error: unknown) => error);
    expect(streamed).toBeInstanceOf(OpenAI.APIError);
    expect(streamed).toMatchObject({ status: 501, code: "stream_not_implemented" });
    const inactive = await client.chat.completions
      .create({ model: ON_REQUEST, messages: [{ role: "user", content: "hello" }] })
      .catch((error: unknown) => error);
    expect(inactive).toMatchObject({ status: 503, type: "model_activation_required" });

    // The text endpoints share one endpoint counter of 60: two requests reached the server before this one.
    const third = await t.fetch("/v1/responses", {
      method: "POST",
      headers: { authorization: `Bearer ${own}`, "content-type": "application/json" },
      body: JSON.stringify({ model: CHAT, input: "hello", stream: true }),
    });
    expect(third.status).toBe(501);
    expect(third.headers.get("x-ratelimit-limit")).toBe("60");
    expect(third.headers.get("x-ratelimit-remaining")).toBe("57");
  });
});
