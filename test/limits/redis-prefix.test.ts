import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Store } from "../../src/store/database.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";
import { openTestStore } from "../helpers/test-store.ts";
import { dropKeys, MINUTE_START, TEST_REDIS_URL, testClock } from "./limit-fixtures.ts";

const LIMIT = 3;

describe.runIf(TEST_REDIS_URL)("server.redis_prefix lets installations share one Redis", () => {
  const url = TEST_REDIS_URL ?? "";
  const ours = `zona-test-${randomBytes(6).toString("hex")}`;
  const theirs = `zona-test-${randomBytes(6).toString("hex")}`;
  const clock = testClock(MINUTE_START + 1_000);
  let store: Store;
  let redis: Redis;
  // Two instances of one installation (same prefix) and one of another installation.
  let first: TestApp;
  let second: TestApp;
  let other: TestApp;

  beforeAll(async () => {
    store = await openTestStore();
    redis = new Redis(url);
    const app = (prefix: string) =>
      startTestApp({
        store,
        now: clock.now,
        config: {
          server: { redis_url: url, redis_prefix: prefix },
          tiers: { slow: { multiplier: 1, requests_per_minute: LIMIT } },
        },
      });
    first = await app(ours);
    second = await app(ours);
    other = await app(theirs);
  });
  afterAll(async () => {
    await Promise.all([first, second, other].map((t) => t?.close()));
    await store?.close();
    redis?.disconnect();
    await dropKeys(url, `${ours}:`);
    await dropKeys(url, `${theirs}:`);
  });

  const models = (t: TestApp, key: string) =>
    t.fetch("/v1/models", { headers: { authorization: `Bearer ${key}` } }).then((r) => r.status);

  it("the same prefix shares the rate-limit counters; another prefix counts apart, under PREFIX:rl:", async () => {
    const { key, keyId } = await first.newKey();
    expect([await models(first, key), await models(second, key), await models(first, key)]).toEqual([
      200, 200, 200,
    ]);
    expect(await models(second, key)).toBe(429);
    // The other installation has its own counter for the same key id.
    expect([await models(other, key), await models(other, key), await models(other, key)]).toEqual([
      200, 200, 200,
    ]);
    expect(await models(other, key)).toBe(429);

    const tierKey = (prefix: string) => `${prefix}:rl:tier:${keyId}:${MINUTE_START}`;
    expect(await redis.get(tierKey(ours))).toBe(String(LIMIT));
    expect(await redis.get(tierKey(theirs))).toBe(String(LIMIT));
    expect(await redis.exists(tierKey("zona"))).toBe(0);
  });

  it("the BullMQ job queue lives under PREFIX:jobs: jobs of one installation are not seen by the other", async () => {
    const jobId = `prefix-${randomBytes(4).toString("hex")}`;
    // No worker runs jobs of this name: the job waits in the queue, where the test can see it.
    await first.app.services.jobs.add("prefix-probe", {}, { id: jobId });
    expect(await redis.exists(`${ours}:jobs:background:${jobId}`)).toBe(1);
    expect(await redis.exists(`${theirs}:jobs:background:${jobId}`)).toBe(0);
    expect(await redis.exists(`zona:jobs:background:${jobId}`)).toBe(0);
  });
});
