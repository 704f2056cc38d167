import type { FastifyBaseLogger } from "fastify";
import { redisKeyPrefixes } from "../config/redis-keys.ts";
import type { Config } from "../config/schema.ts";
import type { LimitMetrics } from "../metrics/limit-metrics.ts";
import type { CounterStore } from "./counter-store.ts";
import { MemoryCounterStore } from "./memory-counter-store.ts";

// Start-up waits this long for Redis; without it the first requests would be counted in the process.
const STARTUP_WAIT_MS = 2_000;

/** The counter store of the configuration: Redis when `server.redis_url` is set, else in the process. */
export async function createCounterStore(
  config: Config,
  deps: { log: FastifyBaseLogger; metrics: LimitMetrics },
): Promise<CounterStore> {
  const url = config.server.redis_url;
  if (!url) return new MemoryCounterStore();
  // Imported here: an installation without Redis never loads ioredis.
  const { RedisCounterStore } = await import("./redis-counter-store.ts");
  const store = new RedisCounterStore({
    url,
    timeoutMs: config.rate_limits.redis_timeout_ms,
    prefix: redisKeyPrefixes(config).counters,
    moneyPrefix: redisKeyPrefixes(config).money,
    log: deps.log,
    onFallback: () => deps.metrics.fallback.inc(),
  });
  if (!(await store.ready(STARTUP_WAIT_MS))) {
    deps.log.warn("Redis is not reachable yet: rate limits are counted in this process until it is");
  }
  return store;
}
