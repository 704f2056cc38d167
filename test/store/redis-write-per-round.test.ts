import type { Socket } from "node:net";
import type { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { connectRedis } from "../../src/store/redis/connect-redis.ts";
import { dropKeys, TEST_REDIS_URL, uniquePrefix } from "../limits/limit-fixtures.ts";

// The connection of the rate-limit counters and of the distributed money: every command sent in a
// round of the event loop leaves in one socket write (under load, one per round instead of one per
// request), and none waits past that round.

async function ready(redis: Redis): Promise<void> {
  if (redis.status === "ready") return;
  await new Promise<void>((resolve) => redis.once("ready", () => resolve()));
}

/** Counts the socket writes of the connection's current socket (each a system call). */
function countWrites(redis: Redis): () => number {
  const socket = (redis as unknown as { stream: Socket }).stream as Socket & {
    _write: (...args: unknown[]) => void;
    _writev: (...args: unknown[]) => void;
  };
  let writes = 0;
  for (const method of ["_write", "_writev"] as const) {
    const original = socket[method].bind(socket);
    socket[method] = (...args: unknown[]) => {
      writes += 1;
      original(...args);
    };
  }
  return () => writes;
}

/** Sends `count` INCRs of one key in the same round; the answers in order. */
function incrementsInOneRound(redis: Redis, key: string, count: number): Promise<number[]> {
  return Promise.all(Array.from({ length: count }, () => redis.incr(key)));
}

describe.runIf(TEST_REDIS_URL)("Redis connection: one socket write per round of the event loop", () => {
  const prefix = uniquePrefix();
  let redis: Redis | undefined;

  afterEach(async () => {
    redis?.disconnect();
    redis = undefined;
    await dropKeys(TEST_REDIS_URL ?? "", prefix);
  });

  it("twenty commands sent in one round leave in one write, and each gets its own answer", async () => {
    redis = connectRedis(TEST_REDIS_URL ?? "", 2_000);
    await ready(redis);
    const writes = countWrites(redis);
    const answers = await incrementsInOneRound(redis, `${prefix}a`, 20);
    expect(answers).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(writes()).toBe(1);
  });

  it("a command sent in a later round leaves in that round: nothing waits for more", async () => {
    redis = connectRedis(TEST_REDIS_URL ?? "", 2_000);
    await ready(redis);
    const writes = countWrites(redis);
    await incrementsInOneRound(redis, `${prefix}b`, 3);
    // From a timer (the timers phase) and from a check-phase callback: each answered on its own.
    const fromTimer = await new Promise<number>((resolve, reject) => {
      setTimeout(() => redis?.incr(`${prefix}b`).then(resolve, reject), 5);
    });
    const fromCheck = await new Promise<number>((resolve, reject) => {
      setImmediate(() => redis?.incr(`${prefix}b`).then(resolve, reject));
    });
    expect([fromTimer, fromCheck]).toEqual([4, 5]);
    expect(writes()).toBe(3);
  });

  it("after a reconnect the new socket gathers its writes too", async () => {
    redis = connectRedis(TEST_REDIS_URL ?? "", 2_000);
    await ready(redis);
    const first = (redis as unknown as { stream: Socket }).stream;
    redis.disconnect(true);
    await new Promise<void>((resolve) => redis?.once("ready", () => resolve()));
    expect((redis as unknown as { stream: Socket }).stream).not.toBe(first);
    const writes = countWrites(redis);
    const answers = await incrementsInOneRound(redis, `${prefix}c`, 10);
    expect(answers).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
    expect(writes()).toBe(1);
  });
});
