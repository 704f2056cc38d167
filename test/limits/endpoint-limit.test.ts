import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.ts";
import { invalidRequest } from "../../src/errors/catalogue.ts";
import { ENDPOINT_LIMITS, endpointLimit } from "../../src/limits/endpoint-limits.ts";
import { readJson } from "../helpers/read-json.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";
import { MINUTE_START, testClock } from "./limit-fixtures.ts";

const MINUTE = 60_000;

// Test routes under /v1 declaring the real entries of the spec's table.
const testRoutes = async (app: FastifyInstance) => {
  app.post("/test/transcriptions", { config: endpointLimit("audioTranscriptions") }, async () => ({ ok: 1 }));
  app.post("/test/embeddings", { config: endpointLimit("embeddings") }, async () => ({ ok: 1 }));
  app.post("/test/images", { config: endpointLimit("imageGenerations") }, async () => ({ ok: 1 }));
  app.post("/test/invalid", { config: endpointLimit("videoCreate") }, async () => {
    throw invalidRequest("'prompt' is required.", { param: "prompt" });
  });
  app.post("/test/tiny", { config: { endpointLimit: { counter: "tiny", limit: 3 } } }, async () => ({
    ok: 1,
  }));
};

describe("Rate limits / Endpoint limit: per key, window from the first request, shared and own counters", () => {
  let t: TestApp;
  const clock = testClock();
  beforeAll(async () => {
    t = await startTestApp({
      config: {
        installation: { default_tier: "ludicrous" },
        tiers: {
          slow: { multiplier: 1, requests_per_minute: 3 },
          ludicrous: { multiplier: 8, requests_per_minute: 10_000 },
        },
      },
      now: clock.now,
      keyApiPlugins: [testRoutes],
    });
  });
  afterAll(() => t.close());

  const call = (key: string, path: string, headers: Record<string, string> = {}) =>
    t.fetch(`/v1/test/${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
      body: "{}",
    });
  const repeat = async (n: number, key: string, path: string) => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push((await call(key, path)).status);
    return out;
  };

  it("the table holds the spec's limits: shared 60/30/120/30/120, own counters 30/20/120/600/120/60", () => {
    const shared = Object.entries(ENDPOINT_LIMITS).filter(([, v]) => v.counter === "shared");
    expect(Object.fromEntries(shared.map(([name, v]) => [name, v.limit]))).toEqual({
      chatCompletions: 60,
      completions: 60,
      responses: 60,
      knowledgeBaseAsk: 30,
      embeddings: 120,
      rerank: 120,
      audioTranscriptions: 30,
      audioSpeech: 120,
    });
    const own = Object.entries(ENDPOINT_LIMITS).filter(([, v]) => v.counter !== "shared");
    expect(Object.fromEntries(own.map(([name, v]) => [name, v.limit]))).toEqual({
      imageGenerations: 30,
      videoCreate: 20,
      videoList: 120,
      videoRetrieve: 600,
      videoContent: 120,
      videoDelete: 60,
    });
    expect(new Set(own.map(([, v]) => v.counter)).size).toBe(own.length);
  });

  it("every limited response carries X-RateLimit-Limit and X-RateLimit-Remaining, counting down to 0", async () => {
    clock.set(MINUTE_START);
    const { key } = await t.newKey();
    for (let i = 1; i <= 30; i++) {
      const response = await call(key, "images");
      expect(response.status).toBe(200);
      expect(response.headers.get("x-ratelimit-limit")).toBe("30");
      expect(response.headers.get("x-ratelimit-remaining")).toBe(String(30 - i));
      expect(response.headers.get("x-ratelimit-reset")).toBeNull();
      expect(response.headers.get("retry-after")).toBeNull();
    }
  });

  it("an error answered after the limit check still carries the limit headers", async () => {
    clock.set(MINUTE_START);
    const { key } = await t.newKey();
    const response = await call(key, "invalid");
    expect(response.status).toBe(400);
    expect(response.headers.get("x-ratelimit-limit")).toBe("20");
    expect(response.headers.get("x-ratelimit-remaining")).toBe("19");
  });

  it('429: body exactly {"message":"Too Many Attempts."} with Retry-After, X-RateLimit-Limit, -Remaining 0 and -Reset', async () => {
    const first = MINUTE_START + 5 * MINUTE + 12_000;
    clock.set(first);
    const { key } = await t.newKey();
    expect(new Set(await repeat(30, key, "transcriptions"))).toEqual(new Set([200]));
    clock.set(first + 20_500);
    const refused = await call(key, "transcriptions");
    expect(refused.status).toBe(429);
    expect(refused.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await refused.text()).toBe('{"message":"Too Many Attempts."}');
    expect(refused.headers.get("retry-after")).toBe("40");
    expect(refused.headers.get("x-ratelimit-limit")).toBe("30");
    expect(refused.headers.get("x-ratelimit-remaining")).toBe("0");
    expect(refused.headers.get("x-ratelimit-reset")).toBe(String((first + MINUTE) / 1000));
  });

  it("the window starts with the first request counted, not at the clock minute, and ends a minute later", async () => {
    const first = MINUTE_START + 10 * MINUTE + 30_000;
    clock.set(first);
    const { key } = await t.newKey();
    await repeat(30, key, "transcriptions");
    clock.set(MINUTE_START + 11 * MINUTE); // a new clock minute: still the same window
    const stillRefused = await call(key, "transcriptions");
    expect(stillRefused.status).toBe(429);
    expect(stillRefused.headers.get("retry-after")).toBe("30");
    clock.set(first + MINUTE - 1);
    expect((await call(key, "transcriptions")).status).toBe(429);
    clock.set(first + MINUTE);
    const reopened = await call(key, "transcriptions");
    expect(reopened.status).toBe(200);
    expect(reopened.headers.get("x-ratelimit-remaining")).toBe("29");
  });

  it("spec example: after 30 requests to shared endpoints, transcriptions answer 429 while embeddings pass up to 120", async () => {
    clock.set(MINUTE_START + 20 * MINUTE);
    const { key } = await t.newKey();
    expect(new Set(await repeat(10, key, "transcriptions"))).toEqual(new Set([200]));
    expect(new Set(await repeat(20, key, "embeddings"))).toEqual(new Set([200]));
    const transcription = await call(key, "transcriptions");
    expect(transcription.status).toBe(429);
    expect(transcription.headers.get("x-ratelimit-limit")).toBe("30");
    const embedding = await call(key, "embeddings");
    expect(embedding.status).toBe(200);
    expect(embedding.headers.get("x-ratelimit-limit")).toBe("120");
    expect(embedding.headers.get("x-ratelimit-remaining")).toBe("89");
    expect(new Set(await repeat(89, key, "embeddings"))).toEqual(new Set([200]));
    const over = await call(key, "embeddings");
    expect(over.status).toBe(429);
    expect(over.headers.get("x-ratelimit-limit")).toBe("120");
  });

  it("an own-counter endpoint is not affected by the shared counter, nor the shared counter by it", async () => {
    clock.set(MINUTE_START + 30 * MINUTE);
    const { key } = await t.newKey();
    await repeat(30, key, "transcriptions");
    expect((await call(key, "transcriptions")).status).toBe(429);
    const image = await call(key, "images");
    expect(image.status).toBe(200);
    expect(image.headers.get("x-ratelimit-remaining")).toBe("29");
    await repeat(29, key, "images");
    expect((await call(key, "images")).status).toBe(429);
    expect((await call(key, "embeddings")).headers.get("x-ratelimit-remaining")).toBe("89");
  });

  it("counters are per API key: another key of the same account has its own", async () => {
    clock.set(MINUTE_START + 40 * MINUTE);
    const a = await t.newKey();
    const b = await t.admin("POST", `/accounts/${a.accountId}/keys`, { name: "second" });
    await repeat(30, a.key, "transcriptions");
    expect((await call(a.key, "transcriptions")).status).toBe(429);
    expect((await call(b.body.key, "transcriptions")).status).toBe(200);
  });

  it("when the tier and the endpoint limit are both reached, the tier limit answers; a stopped request counts toward neither", async () => {
    clock.set(MINUTE_START + 50 * MINUTE + 1_000);
    const { key } = await t.newKey();
    const slow = { "x-service-tier": "slow" };
    for (let i = 0; i < 3; i++) expect((await call(key, "tiny", slow)).status).toBe(200);
    const both = await call(key, "tiny", slow);
    expect(both.status).toBe(429);
    expect((await readJson(both)).error.type).toBe("rate_limit_exceeded");
    expect(both.headers.get("retry-after")).toBe("59");
    // The endpoint limit alone (a faster tier) answers with its own shape; the refused tier request counted nothing.
    const endpointOnly = await call(key, "tiny");
    expect(endpointOnly.status).toBe(429);
    expect(await endpointOnly.text()).toBe('{"message":"Too Many Attempts."}');
    const image = await call(key, "images", slow);
    expect(image.status).toBe(429);
    expect((await readJson(image)).error.code).toBe("rate_limit_exceeded");
    expect(image.headers.get("x-ratelimit-limit")).toBeNull();
    clock.set(MINUTE_START + 51 * MINUTE);
    const nextMinute = await call(key, "images", slow);
    expect(nextMinute.status).toBe(200);
    expect(nextMinute.headers.get("x-ratelimit-remaining")).toBe("29");
  });

  it("GET /v1/models is not endpoint-limited: no X-RateLimit-* headers", async () => {
    clock.set(MINUTE_START);
    const { key } = await t.newKey();
    const response = await t.fetch("/v1/models", { headers: { authorization: `Bearer ${key}` } });
    expect(response.status).toBe(200);
    expect([...response.headers.keys()].filter((name) => name.startsWith("x-ratelimit"))).toEqual([]);
  });
});

describe("Rate limits / Endpoint limit: an operator may change an endpoint's limit (rate_limits.endpoint_limits)", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({
      config: {
        tiers: { slow: { multiplier: 1, requests_per_minute: 10_000 } },
        rate_limits: { endpoint_limits: { audio_transcriptions: 2 } },
      },
      keyApiPlugins: [testRoutes],
    });
  });
  afterAll(() => t.close());

  it("the changed limit counts on the shared counter; the other endpoints keep the spec's", async () => {
    const { key } = await t.newKey();
    const call = (path: string) =>
      t.fetch(`/v1/test/${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: "{}",
      });
    const first = await call("transcriptions");
    expect(first.headers.get("x-ratelimit-limit")).toBe("2");
    expect((await call("transcriptions")).status).toBe(200);
    const refused = await call("transcriptions");
    expect(refused.status).toBe(429);
    expect(refused.headers.get("x-ratelimit-limit")).toBe("2");
    const embeddings = await call("embeddings");
    expect(embeddings.status).toBe(200);
    expect(embeddings.headers.get("x-ratelimit-limit")).toBe("120");
  });

  it("an unknown endpoint name is a configuration error", () => {
    expect(() => parseConfig({ rate_limits: { endpoint_limits: { chat: 5 } } })).toThrow(/endpoint_limits/);
  });
});
