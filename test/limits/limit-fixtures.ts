import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import type { CounterStore } from "../../src/limits/counter-store.ts";
import { MemoryCounterStore } from "../../src/limits/memory-counter-store.ts";
import { RedisCounterStore } from "../../src/limits/redis-counter-store.ts";

/** The Redis server of CI (redis://127.0.0.1:6379), when there is one. */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL;

/** 2030-01-01T12:00:00Z: the start of a clock minute, so tests place requests exactly within it. */
export const MINUTE_START = Date.UTC(2030, 0, 1, 12, 0, 0);

/** A clock the test moves; `now` is what the app reads. */
export function testClock(start = MINUTE_START) {
  const clock = {
    at: start,
    now: () => new Date(clock.at),
    set(at: number) {
      clock.at = at;
    },
  };
  return clock;
}

/** A key prefix of its own, so parallel test files never share Redis counters. */
export function uniquePrefix(): string {
  return `zona-test:${randomBytes(6).toString("hex")}:`;
}

/** A counter store under test, with the number of `take`s it answered without Redis. */
export interface StoreUnderTest {
  store: CounterStore;
  fallbacks(): number;
  /** The Redis keys the store wrote (Redis only). */
  prefix?: string;
}

/** The stores every store test runs on: memory always, Redis when TEST_REDIS_URL is set. */
export const STORE_FACTORIES: Array<{ name: string; make(): Promise<StoreUnderTest> }> = [
  { name: "memory", make: async () => ({ store: new MemoryCounterStore(), fallbacks: () => 0 }) },
  ...(TEST_REDIS_URL ? [{ name: "redis", make: () => redisStoreUnderTest(TEST_REDIS_URL) }] : []),
];

/**
 * A connected Redis counter store with its own prefix; a generous timeout, so that a busy CI box
 * does not fall back (tests assert it did not).
 */
export async function redisStoreUnderTest(
  url: string,
  prefix = uniquePrefix(),
): Promise<StoreUnderTest & { store: RedisCounterStore; prefix: string }> {
  let fallbacks = 0;
  const store = new RedisCounterStore({ url, timeoutMs: 2_000, prefix, onFallback: () => fallbacks++ });
  if (!(await store.ready(5_000))) throw new Error(`Redis at ${url} is not reachable`);
  return { store, prefix, fallbacks: () => fallbacks };
}

/** Every key under a prefix with its PTTL. */
export async function keysWithTtl(redis: Redis, prefix: string): Promise<Array<[string, number]>> {
  const keys = await redis.keys(`${prefix}*`);
  return Promise.all(keys.map(async (key): Promise<[string, number]> => [key, await redis.pttl(key)]));
}

/** Removes every key under a prefix. */
export async function dropKeys(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url);
  try {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
  } finally {
    redis.disconnect();
  }
}
