import type { FastifyBaseLogger } from "fastify";
import type { DeferredTakes } from "../../limits/deferred-takes.ts";
import type { Store } from "../../store/database.ts";
import { BillingRepository } from "../../store/repositories/billing.ts";
import { ServiceSecretsRepository } from "../../store/repositories/service-secrets.ts";
import type { SharedMoney } from "./shared-money.ts";

// A money command unanswered after this long counts Redis as away: money is decided in PostgreSQL.
const COMMAND_TIMEOUT_MS = 500;
const WARN_EVERY_MS = 10_000;

/**
 * Connects the distributed mode's money to Redis (its own connection, so that money commands keep
 * their order) and starts following its epoch. While Redis is away, money is decided in PostgreSQL.
 * `takes`: key limits that wait for a request's hold (taken in its script call), and their counters' prefix.
 */
export async function openSharedMoney(
  at: { url: string; prefix: string },
  store: Store,
  log?: FastifyBaseLogger,
  takes?: { deferred: DeferredTakes; prefix: string },
): Promise<SharedMoney> {
  // Imported here: an installation without Redis never loads ioredis.
  const [{ connectRedis, REDIS_CONNECT_TIMEOUT_MS }, { SharedMoney }] = await Promise.all([
    import("../../store/redis/connect-redis.ts"),
    import("./shared-money.ts"),
  ]);
  const redis = connectRedis(at.url, COMMAND_TIMEOUT_MS);
  let lastWarning = Number.NEGATIVE_INFINITY;
  redis.on("error", (error: Error) => {
    if (Date.now() - lastWarning < WARN_EVERY_MS) return;
    lastWarning = Date.now();
    log?.warn({ reason: error.message }, "Redis unreachable: money is decided in PostgreSQL meanwhile");
  });
  const money = new SharedMoney({
    redis,
    prefix: at.prefix,
    repo: new BillingRepository(store.db, store.named),
    // Not a secret: a value made once that every instance shares, which that table is for.
    firstEver: async (epoch) =>
      (await new ServiceSecretsRepository(store.db).getOrCreate("money.first-epoch", () => epoch)) === epoch,
    ...(log ? { log } : {}),
    ...(takes ? { takes } : {}),
  });
  // Start-up waits a moment for the connection; the first requests would be decided in PostgreSQL.
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, REDIS_CONNECT_TIMEOUT_MS);
    redis.once("ready", () => {
      clearTimeout(timer);
      resolve();
    });
  });
  money.start();
  return money;
}
