import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rawRequest } from "../helpers/raw-http.ts";
import { readJson } from "../helpers/read-json.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";
import { MINUTE_START, testClock } from "./limit-fixtures.ts";

const tiers = {
  slow: { multiplier: 1, requests_per_minute: 3 },
  medium: { multiplier: 2, requests_per_minute: 4 },
  fast: { multiplier: 4, requests_per_minute: 5 },
  ludicrous: { multiplier: 8, requests_per_minute: 6 },
};

describe("Rate limits / Tier limit: one counter per key, clock minute, each request against its own tier", () => {
  let t: TestApp;
  const clock = testClock();
  let handlerRuns = 0;
  beforeAll(async () => {
    t = await startTestApp({
      config: { tiers, installation: { default_tier: "slow" } },
      now: clock.now,
      keyApiPlugins: [
        async (app: FastifyInstance) => {
          app.post("/test/run", async () => {
            handlerRuns += 1;
            return { ran: true };
          });
        },
      ],
    });
  });
  afterAll(() => t.close());

  const models = (key: string, tier?: string) =>
    t.fetch("/v1/models", {
      headers: { authorization: `Bearer ${key}`, ...(tier === undefined ? {} : { "x-service-tier": tier }) },
    });
  const statuses = async (n: number, call: () => Promise<Response>) => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push((await call()).status);
    return out;
  };

  it("GET /v1/models is tier-limited: the default tier's N requests pass, request N+1 gets 429 rate_limit_exceeded", async () => {
    clock.set(MINUTE_START + 10_000);
    const { key } = await t.newKey();
    expect(await statuses(3, () => models(key))).toEqual([200, 200, 200]);
    const refused = await models(key);
    expect(refused.status).toBe(429);
    expect(await readJson(refused)).toEqual({
      error: {
        message: expect.stringMatching(/slow tier allows 3 requests per minute/),
        type: "rate_limit_exceeded",
        code: "rate_limit_exceeded",
        param: null,
        request_id: refused.headers.get("x-request-id"),
      },
    });
  });

  it("429 carries Retry-After = whole seconds to the next clock minute, and no X-RateLimit-Reset", async () => {
    const { key } = await t.newKey();
    const cases: Array<[number, string]> = [
      [10_000, "50"],
      [10_400, "50"],
      [59_001, "1"],
      [59_999, "1"],
    ];
    clock.set(MINUTE_START + 5 * 60_000);
    await statuses(3, () => models(key));
    for (const [offset, retryAfter] of cases) {
      clock.set(MINUTE_START + 5 * 60_000 + offset);
      const refused = await models(key);
      expect(refused.status).toBe(429);
      expect(refused.headers.get("retry-after")).toBe(retryAfter);
      expect(refused.headers.get("x-ratelimit-reset")).toBeNull();
      expect(refused.headers.get("x-ratelimit-limit")).toBeNull();
    }
  });

  it("the counter resets at the start of the next clock minute, not a minute after the first request", async () => {
    clock.set(MINUTE_START + 10 * 60_000 + 50_000);
    const { key } = await t.newKey();
    expect(await statuses(4, () => models(key))).toEqual([200, 200, 200, 429]);
    clock.set(MINUTE_START + 11 * 60_000 - 1);
    expect((await models(key)).status).toBe(429);
    clock.set(MINUTE_START + 11 * 60_000);
    expect(await statuses(4, () => models(key))).toEqual([200, 200, 200, 429]);
  });

  it("mixed tiers share the one counter, each request compared with its own tier's limit (slow 3, fast 5)", async () => {
    clock.set(MINUTE_START + 20 * 60_000);
    const { key } = await t.newKey();
    expect(await statuses(3, () => models(key, "slow"))).toEqual([200, 200, 200]);
    expect((await models(key, "slow")).status).toBe(429);
    expect(await statuses(3, () => models(key, "fast"))).toEqual([200, 200, 429]);
    const ludicrous = await models(key, "ludicrous");
    expect(ludicrous.status).toBe(200);
    const medium = await models(key, "medium");
    expect(medium.status).toBe(429);
    expect((await readJson(medium)).error.message).toMatch(/medium tier allows 4 requests per minute/);
  });

  it("X-Service-Tier is matched in any case; absent or empty means installation.default_tier", async () => {
    clock.set(MINUTE_START + 30 * 60_000);
    const { key } = await t.newKey();
    expect(await statuses(3, () => models(key, ""))).toEqual([200, 200, 200]);
    expect((await models(key)).status).toBe(429);
    expect(await statuses(2, () => models(key, "FaSt"))).toEqual([200, 200]);
    expect((await models(key, " FAST ")).status).toBe(429);
  });

  it("an unknown X-Service-Tier gets 400 invalid_value naming the header and the tiers, before anything is counted", async () => {
    clock.set(MINUTE_START + 40 * 60_000);
    const { key } = await t.newKey();
    for (const value of ["turbo", "auto", "default", "slow, fast"]) {
      for (let i = 0; i < 4; i++) {
        const response = await models(key, value);
        expect(response.status).toBe(400);
        expect(await readJson(response)).toEqual({
          error: {
            message: expect.stringMatching(/X-Service-Tier.*slow, medium, fast, ludicrous/),
            type: "invalid_request_error",
            code: "invalid_value",
            param: "X-Service-Tier",
            request_id: response.headers.get("x-request-id"),
          },
        });
      }
    }
    expect(await statuses(4, () => models(key))).toEqual([200, 200, 200, 429]);
  });

  it("a request without a valid key is refused before any limit and counts toward none", async () => {
    clock.set(MINUTE_START + 50 * 60_000);
    const { key, accountId } = await t.newKey();
    await t.admin("POST", `/accounts/${accountId}/disable`);
    expect(new Set(await statuses(10, () => models(key)))).toEqual(new Set([401]));
    await t.admin("POST", `/accounts/${accountId}/enable`);
    expect(await statuses(4, () => models(key))).toEqual([200, 200, 200, 429]);
    // At its limit, a bad key still gets 401, never 429.
    const badKey = await t.fetch("/v1/models", { headers: { authorization: "Bearer sk-short" } });
    expect(badKey.status).toBe(401);
  });

  it("a stopped request is not run, and is refused before its body is read", async () => {
    clock.set(MINUTE_START + 60 * 60_000);
    const { key } = await t.newKey();
    const post = () =>
      t.fetch("/v1/test/run", {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: "{}",
      });
    expect(await statuses(3, post)).toEqual([200, 200, 200]);
    expect(handlerRuns).toBe(3);
    const chunk = Buffer.alloc(256 * 1024, 0x20);
    const refused = await rawRequest(`${t.url}/v1/test/run`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${key}`,
        "content-type": "application/json",
        "content-length": chunk.length * 64,
      },
      chunk,
      chunks: 64,
    });
    expect(refused.status).toBe(429);
    expect(refused.bytesSent).toBeLessThan(chunk.length * 64);
    expect(handlerRuns).toBe(3);
  });
});
