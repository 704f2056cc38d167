import { Redis } from "ioredis";
import { writePerRound } from "./write-per-round.ts";

/** How long a connection waits for Redis at most before its first command may fail. */
export const REDIS_CONNECT_TIMEOUT_MS = 2_000;
const MAX_RECONNECT_DELAY_MS = 2_000;

/**
 * A connection to Zona's Redis as the rate-limit counters and the distributed money use it: a
 * command is never queued while disconnected nor retried (the caller decides elsewhere meanwhile),
 * unanswered after `commandTimeoutMs` it fails, and the connection comes back with a growing,
 * jittered delay. RESP2: the scripts need nothing more, and every Redis-compatible server speaks it.
 */
export function connectRedis(url: string, commandTimeoutMs: number): Redis {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: commandTimeoutMs,
    connectTimeout: REDIS_CONNECT_TIMEOUT_MS,
    protocol: 2,
    retryStrategy: (times) =>
      Math.min(50 * 2 ** (times - 1), MAX_RECONNECT_DELAY_MS) + Math.floor(Math.random() * 100),
  });
  writePerRound(redis);
  return redis;
}
