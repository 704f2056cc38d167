import type { FastifyBaseLogger } from "fastify";
import type { Redis, Result } from "ioredis";
import { connectRedis } from "../store/redis/connect-redis.ts";
import type { CounterSpec, CounterStore, TakeResult } from "./counter-store.ts";
import { MemoryCounterStore } from "./memory-counter-store.ts";
import { parseTakeReply, TAKE_SCRIPT, takeScriptArgs } from "./redis-take-script.ts";

declare module "ioredis" {
  interface RedisCommander<Context> {
    zonaRateLimitTake(numberOfKeys: number, ...keysAndArgs: string[]): Result<unknown, Context>;
  }
}

/** Prefix of every key Zona writes for rate limits with the default `server.redis_prefix`. */
export const REDIS_KEY_PREFIX = "zona:rl:";

const WARN_EVERY_MS = 10_000;

/** What a Redis counter store is built from. */
export interface RedisCounterStoreOptions {
  url: string;
  /** A command that has not answered after this long counts as failed (`rate_limits.redis_timeout_ms`). */
  timeoutMs: number;
  /** Key prefix; tests use their own so parallel runs never share counters. */
  prefix?: string;
  /** Prefix of the money's keys (`money()`); by default under `prefix`. */
  moneyPrefix?: string;
  log?: Pick<FastifyBaseLogger, "warn" | "info">;
  /** Called once per `take` answered in the process instead of Redis (the fallback metric). */
  onFallback?: () => void;
}

/**
 * Counters in Redis, exact across every instance sharing it: one Lua script per `take`.
 *
 * Policy when Redis is unreachable or slow (no request ever waits on it): a `take` that cannot
 * reach Redis, or gets no answer within `timeoutMs`, is decided by an in-process MemoryCounterStore
 * instead, so the limits still hold per instance (an installation of N instances admits up to N
 * times a limit while Redis is away). Each such call bumps `zona_rate_limit_fallback_total`; a
 * warning is logged at most once every 10 s. There is no offline queue and no retry of a command:
 * the client reconnects by itself with a backoff of at most 2 s, and the very next `take` after it
 * is back goes to Redis again. A command that timed out may still have counted in Redis; the
 * request is then counted twice, which errs on the side of the limit.
 */
export class RedisCounterStore implements CounterStore {
  private readonly redis: Redis;
  private readonly prefix: string;
  private readonly url: string;
  private readonly moneyPrefix: string;
  private readonly fallback = new MemoryCounterStore();
  private readonly log: Pick<FastifyBaseLogger, "warn" | "info"> | undefined;
  private readonly onFallback: (() => void) | undefined;
  private lastWarning = Number.NEGATIVE_INFINITY;
  private degraded = false;
  private lastError = "";

  constructor(options: RedisCounterStoreOptions) {
    this.prefix = options.prefix ?? REDIS_KEY_PREFIX;
    this.url = options.url;
    this.moneyPrefix = options.moneyPrefix ?? `${this.prefix}money:`;
    this.log = options.log;
    this.onFallback = options.onFallback;
    this.redis = connectRedis(options.url, options.timeoutMs);
    this.redis.defineCommand("zonaRateLimitTake", { lua: TAKE_SCRIPT });
    // Without a listener ioredis prints every connection error; they are logged here, throttled.
    this.redis.on("error", (error: Error) => {
      this.lastError = error.message;
      this.warn(error);
    });
  }

  async take(counters: CounterSpec[], now: number): Promise<TakeResult> {
    if (this.redis.status !== "ready") return this.fallBack(counters, now, "not connected");
    const { keys, args } = takeScriptArgs(counters, now, this.prefix);
    try {
      const reply = await this.redis.zonaRateLimitTake(keys.length, ...keys, ...args);
      if (this.degraded) {
        this.degraded = false;
        this.log?.info({}, "rate-limit counters are back on Redis");
      }
      return parseTakeReply(reply);
    } catch (error) {
      return this.fallBack(counters, now, error);
    }
  }

  money(): { url: string; prefix: string; counterPrefix: string } {
    return { url: this.url, prefix: this.moneyPrefix, counterPrefix: this.prefix };
  }

  /** Readiness: Redis answers PING now; never waits for a reconnection. */
  async ping(): Promise<void> {
    if (this.redis.status !== "ready") {
      throw new Error(`not connected${this.lastError ? ` (${this.lastError})` : ""}`);
    }
    await this.redis.ping();
  }

  /** Resolves true once connected, false if Redis is not ready within `timeoutMs` (start-up). */
  ready(timeoutMs: number): Promise<boolean> {
    if (this.redis.status === "ready") return Promise.resolve(true);
    return new Promise((resolve) => {
      const onReady = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.redis.off("ready", onReady);
        resolve(false);
      }, timeoutMs);
      this.redis.once("ready", onReady);
    });
  }

  async close(): Promise<void> {
    try {
      if (this.redis.status === "ready") await this.redis.quit();
    } catch {
      // Closing anyway: a Redis that cannot answer QUIT has nothing left to lose.
    } finally {
      this.redis.disconnect();
    }
    await this.fallback.close();
  }

  private fallBack(counters: CounterSpec[], now: number, cause: unknown): TakeResult {
    this.degraded = true;
    this.onFallback?.();
    this.warn(cause);
    return this.fallback.takeNow(counters, now);
  }

  private warn(cause: unknown): void {
    const at = Date.now();
    if (at - this.lastWarning < WARN_EVERY_MS) return;
    this.lastWarning = at;
    const reason = cause instanceof Error ? cause.message : String(cause);
    this.log?.warn({ reason }, "Redis unreachable or slow: rate limits counted in this process");
  }
}
