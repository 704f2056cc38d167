import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CounterSpec } from "../../src/limits/counter-store.ts";
import { MemoryCounterStore } from "../../src/limits/memory-counter-store.ts";
import {
  dropKeys,
  keysWithTtl,
  MINUTE_START,
  redisStoreUnderTest,
  STORE_FACTORIES,
  type StoreUnderTest,
  TEST_REDIS_URL,
} from "./limit-fixtures.ts";

const MINUTE = 60_000;
const clock = (key: string, limit: number): CounterSpec => ({ key, limit, windowMs: MINUTE, kind: "clock" });
const fromFirst = (key: string, limit: number): CounterSpec => ({
  key,
  limit,
  windowMs: MINUTE,
  kind: "from-first",
});

describe.each(STORE_FACTORIES)("Counter store: one atomic take over several counters ($name)", ({ make }) => {
  let s: StoreUnderTest;
  beforeAll(async () => {
    s = await make();
  });
  afterAll(async () => {
    await s.store.close();
    if (s.prefix && TEST_REDIS_URL) await dropKeys(TEST_REDIS_URL, s.prefix);
  });

  for (const kind of ["clock", "from-first"] as const) {
    it(`atomicity (${kind}): 500 concurrent takes against a limit of 60 admit exactly 60`, async () => {
      const spec: CounterSpec = { key: `atomic-${kind}`, limit: 60, windowMs: MINUTE, kind };
      const results = await Promise.all(
        Array.from({ length: 500 }, () => s.store.take([spec], MINUTE_START + 5_000)),
      );
      expect(results.filter((r) => r.allowed)).toHaveLength(60);
      const counts = results.flatMap((r) => (r.allowed ? [r.counters[0]?.count] : []));
      expect(counts.sort((a, b) => (a ?? 0) - (b ?? 0))).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
      expect(s.fallbacks()).toBe(0);
    });
  }

  it("atomicity over two counters: 500 concurrent takes admit exactly the smaller limit, and count only those", async () => {
    const specs = [clock("pair-tier", 80), fromFirst("pair-endpoint", 60)];
    const results = await Promise.all(
      Array.from({ length: 500 }, () => s.store.take(specs, MINUTE_START + 5_000)),
    );
    expect(results.filter((r) => r.allowed)).toHaveLength(60);
    const after = await s.store.take([clock("pair-tier", 80)], MINUTE_START + 5_000);
    expect(after).toEqual({ allowed: true, counters: [{ count: 61, resetAt: MINUTE_START + MINUTE }] });
    expect(s.fallbacks()).toBe(0);
  });

  it("a stopped request counts toward none: a refusal by one counter leaves the others untouched", async () => {
    const specs = [clock("stop-a", 10), fromFirst("stop-b", 2)];
    const at = MINUTE_START + 1_000;
    expect((await s.store.take(specs, at)).allowed).toBe(true);
    expect((await s.store.take(specs, at)).allowed).toBe(true);
    expect(await s.store.take(specs, at)).toEqual({ allowed: false, refused: 1, resetAt: at + MINUTE });
    expect(await s.store.take(specs, at)).toEqual({ allowed: false, refused: 1, resetAt: at + MINUTE });
    expect(await s.store.take([clock("stop-a", 10)], at)).toEqual({
      allowed: true,
      counters: [{ count: 3, resetAt: MINUTE_START + MINUTE }],
    });
  });

  it("the first counter at its limit is the one reported when several are", async () => {
    const specs = [clock("both-a", 1), fromFirst("both-b", 1)];
    await s.store.take(specs, MINUTE_START);
    expect(await s.store.take(specs, MINUTE_START + 10)).toEqual({
      allowed: false,
      refused: 0,
      resetAt: MINUTE_START + MINUTE,
    });
  });

  it("clock window: the count resets at the start of the next clock minute", async () => {
    const spec = clock("clock-window", 2);
    expect(await s.store.take([spec], MINUTE_START + 50_000)).toEqual({
      allowed: true,
      counters: [{ count: 1, resetAt: MINUTE_START + MINUTE }],
    });
    await s.store.take([spec], MINUTE_START + 59_000);
    expect(await s.store.take([spec], MINUTE_START + 59_999)).toEqual({
      allowed: false,
      refused: 0,
      resetAt: MINUTE_START + MINUTE,
    });
    expect(await s.store.take([spec], MINUTE_START + MINUTE)).toEqual({
      allowed: true,
      counters: [{ count: 1, resetAt: MINUTE_START + 2 * MINUTE }],
    });
  });

  it("from-first window: starts with the first request counted and lasts a minute, across clock minutes", async () => {
    const spec = fromFirst("first-window", 2);
    const first = MINUTE_START + 30_000;
    expect(await s.store.take([spec], first)).toEqual({
      allowed: true,
      counters: [{ count: 1, resetAt: first + MINUTE }],
    });
    expect(await s.store.take([spec], MINUTE_START + MINUTE + 1_000)).toEqual({
      allowed: true,
      counters: [{ count: 2, resetAt: first + MINUTE }],
    });
    expect(await s.store.take([spec], first + MINUTE - 1)).toEqual({
      allowed: false,
      refused: 0,
      resetAt: first + MINUTE,
    });
    const next = first + MINUTE;
    expect(await s.store.take([spec], next)).toEqual({
      allowed: true,
      counters: [{ count: 1, resetAt: next + MINUTE }],
    });
  });

  it("a shared counter is compared with each request's own limit", async () => {
    const at = MINUTE_START + 2_000;
    for (let i = 0; i < 3; i++) expect((await s.store.take([fromFirst("shared", 3)], at)).allowed).toBe(true);
    expect((await s.store.take([fromFirst("shared", 3)], at)).allowed).toBe(false);
    expect(await s.store.take([fromFirst("shared", 5)], at)).toEqual({
      allowed: true,
      counters: [{ count: 4, resetAt: at + MINUTE }],
    });
  });
});

describe.runIf(TEST_REDIS_URL)("Redis counter store: keys always carry a TTL", () => {
  it("every key written by take has a PTTL > 0, no longer than its window plus a little slack, set when its window begins", async () => {
    const s = await redisStoreUnderTest(TEST_REDIS_URL ?? "");
    const redis = new Redis(TEST_REDIS_URL ?? "");
    try {
      const now = MINUTE_START + 15_000;
      await s.store.take([clock("ttl-clock", 5), fromFirst("ttl-first", 5)], now);
      // Twenty seconds on: a TTL renewed here would end 20 s earlier than the one the window began with.
      await s.store.take([clock("ttl-clock", 5), fromFirst("ttl-first", 5)], now + 20_000);
      await s.store.take([fromFirst("ttl-alone", 1)], now);
      await s.store.take([fromFirst("ttl-alone", 1)], now); // refused: writes nothing
      const keys = await keysWithTtl(redis, s.prefix);
      expect(keys.map(([key]) => key).sort()).toEqual(
        [`${s.prefix}ttl-alone`, `${s.prefix}ttl-clock:${MINUTE_START}`, `${s.prefix}ttl-first`].sort(),
      );
      for (const [key, ttl] of keys) {
        expect(ttl, key).toBeGreaterThan(0);
        expect(ttl, key).toBeLessThanOrEqual(MINUTE + 5_000);
      }
      // Each window's TTL is set when it begins: the clock window ends 45 s after the first take, the
      // first-request window 60 s after it (plus the slack), whatever came after.
      const ttls = new Map(keys);
      expect(ttls.get(`${s.prefix}ttl-clock:${MINUTE_START}`)).toBeGreaterThan(40_000);
      expect(ttls.get(`${s.prefix}ttl-first`)).toBeGreaterThan(MINUTE - 5_000);
      expect(s.fallbacks()).toBe(0);
    } finally {
      redis.disconnect();
      await s.store.close();
      await dropKeys(TEST_REDIS_URL ?? "", s.prefix);
    }
  });
});

describe("Memory counter store: memory does not grow", () => {
  it("drops counters whose window has ended", async () => {
    const store = new MemoryCounterStore();
    for (let i = 0; i < 100; i++) await store.take([clock(`k${i}`, 5), fromFirst(`f${i}`, 5)], MINUTE_START);
    expect(store.size).toBe(200);
    await store.take([clock("later", 5)], MINUTE_START + 2 * MINUTE);
    expect(store.size).toBe(1);
  });
});
