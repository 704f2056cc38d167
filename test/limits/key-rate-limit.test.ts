import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readJson } from "../helpers/read-json.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";
import { STORE_KINDS } from "../helpers/test-store.ts";
import { MINUTE_START, testClock } from "./limit-fixtures.ts";

const tiers = {
  slow: { multiplier: 1, requests_per_minute: 5 },
  medium: { multiplier: 2, requests_per_minute: 6 },
  fast: { multiplier: 4, requests_per_minute: 8 },
  ludicrous: { multiplier: 8, requests_per_minute: 10 },
};

describe.each(STORE_KINDS)("a key's own requests_per_minute replaces the tier limit (%s)", (store) => {
  let t: TestApp;
  const clock = testClock();
  let minute = 0;
  beforeAll(async () => {
    t = await startTestApp({
      store,
      config: { tiers, installation: { default_tier: "slow" } },
      now: clock.now,
    });
  });
  afterAll(() => t.close());

  /** Every test counts in a clock minute of its own, a few seconds in. */
  const nextMinute = () => {
    minute += 1;
    clock.set(MINUTE_START + minute * 60_000 + 5_000);
  };
  const models = (key: string, tier?: string) =>
    t.fetch("/v1/models", {
      headers: { authorization: `Bearer ${key}`, ...(tier === undefined ? {} : { "x-service-tier": tier }) },
    });
  const statuses = async (n: number, call: () => Promise<Response>) => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push((await call()).status);
    return out;
  };
  const setRpm = async (keyId: string, value: number | null) => {
    const response = await t.admin("PATCH", `/keys/${keyId}`, { requests_per_minute: value });
    expect(response.status).toBe(200);
    expect(response.body.requests_per_minute).toBe(value);
  };

  it("a key with rpm 3 gets 429 rate_limit_exceeded on its 4th request of the minute; another key of the tier still passes", async () => {
    nextMinute();
    const small = await t.newKey({ key: { requests_per_minute: 3 } });
    const other = await t.newKey();
    expect(await statuses(3, () => models(small.key))).toEqual([200, 200, 200]);
    const refused = await models(small.key);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("55");
    expect(refused.headers.get("x-ratelimit-reset")).toBeNull();
    expect(await readJson(refused)).toEqual({
      error: {
        message: expect.stringMatching(/allows 3 requests per minute/),
        type: "rate_limit_exceeded",
        code: "rate_limit_exceeded",
        param: null,
        request_id: refused.headers.get("x-request-id"),
      },
    });
    expect(await statuses(6, () => models(other.key))).toEqual([200, 200, 200, 200, 200, 429]);
  });

  it("the key's limit holds whatever tier the request asks (each tier's table value is ignored for it)", async () => {
    for (const tier of ["slow", "medium", "fast", "ludicrous"]) {
      nextMinute();
      const { key } = await t.newKey({ key: { requests_per_minute: 2 } });
      expect(await statuses(3, () => models(key, tier))).toEqual([200, 200, 429]);
    }
    nextMinute();
    const { key } = await t.newKey({ key: { requests_per_minute: 7 } });
    // Higher than the slow tier's 5: the key passes the tier table's limit too.
    expect(await statuses(8, () => models(key))).toEqual([200, 200, 200, 200, 200, 200, 200, 429]);
  });

  it("raising it through the operator API takes effect at once, within the same minute (no cached old value)", async () => {
    nextMinute();
    const { key, keyId } = await t.newKey({ key: { requests_per_minute: 3 } });
    expect(await statuses(4, () => models(key))).toEqual([200, 200, 200, 429]);
    await setRpm(keyId, 6);
    // The refused request counted toward nothing: 3 so far, 3 more fit.
    expect(await statuses(4, () => models(key))).toEqual([200, 200, 200, 429]);
    await setRpm(keyId, 2);
    expect((await models(key)).status).toBe(429);
  });

  it("clearing it (null) restores the tier table's limit", async () => {
    nextMinute();
    const { key, keyId } = await t.newKey({ key: { requests_per_minute: 9 } });
    expect(await statuses(6, () => models(key))).toEqual([200, 200, 200, 200, 200, 200]);
    await setRpm(keyId, null);
    const refused = await models(key);
    expect(refused.status).toBe(429);
    expect((await readJson(refused)).error.message).toMatch(/slow tier allows 5 requests per minute/);
    expect(await statuses(2, () => models(key, "fast"))).toEqual([200, 200]);
    expect((await models(key, "fast")).status).toBe(429);
  });

  it("a bad value is refused (400 naming requests_per_minute) and the key keeps its limit", async () => {
    nextMinute();
    const { key, keyId } = await t.newKey({ key: { requests_per_minute: 2 } });
    for (const value of [0, -1, 1.5, "ten", true, 1_000_001]) {
      const response = await t.admin("PATCH", `/keys/${keyId}`, { requests_per_minute: value });
      expect(response.status).toBe(400);
      expect(response.body.error).toMatchObject({
        type: "invalid_request_error",
        param: "requests_per_minute",
      });
    }
    expect(await statuses(3, () => models(key))).toEqual([200, 200, 429]);
  });
});
