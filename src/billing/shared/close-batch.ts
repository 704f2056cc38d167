import type { FastifyBaseLogger } from "fastify";
import type { Redis } from "ioredis";
import type { RecordedTotals } from "../../store/repositories/billing.ts";
import { MONEY_TTL_SECONDS } from "./epoch-follower.ts";
import { keyMonthOf } from "./shared-hold.ts";

/**
 * The closes of one tick, sent as one script call: holds ended and the copies brought up to what
 * PostgreSQL recorded (each spend only grows, so the larger total of the tick is the newer).
 */
export class CloseBatch {
  private readonly redis: Redis;
  private readonly prefix: string;
  private readonly log: FastifyBaseLogger | undefined;
  /** While Redis is away its copy is dropped at its return: closes would only fail. */
  private readonly skip: () => boolean;
  private closing = emptyClosing();
  private scheduled = false;

  constructor(deps: { redis: Redis; prefix: string; skip: () => boolean; log?: FastifyBaseLogger }) {
    this.redis = deps.redis;
    this.prefix = deps.prefix;
    this.skip = deps.skip;
    this.log = deps.log;
  }

  /** Adds a hold to end (when given) and totals to bring (when given); sent in this tick's check phase. */
  add(requestId: string | null, totals?: RecordedTotals): void {
    if (requestId !== null) this.closing.ids.push(requestId);
    if (totals) this.merge(totals);
    if (this.scheduled) return;
    this.scheduled = true;
    // In the tick's check phase: after every answer of this round, before the next requests are read.
    setImmediate(() => this.flush());
  }

  /**
   * Brings the tick's copies up to some totals. Every record of a usage batch comes with that batch's
   * totals (one object): merged once, not once per record (a batch of 64 keys' records would cost
   * 64 x 64 steps).
   */
  private merge(totals: RecordedTotals): void {
    if (this.closing.merged.has(totals)) return;
    this.closing.merged.add(totals);
    for (const row of totals.keyMonths) {
      const id = keyMonthOf(row);
      this.closing.keyMonths.set(id, Math.max(this.closing.keyMonths.get(id) ?? 0, row.spentMicros));
    }
    for (const row of totals.credits) {
      const seen = this.closing.credits.get(row.accountId);
      const credited = newerCredited(seen?.credited, row.credited);
      this.closing.credits.set(row.accountId, {
        spent: Math.max(seen?.spent ?? 0, row.spentMicros),
        ...(credited ? { credited } : {}),
      });
    }
  }

  /** Sends what was added; resolves when Redis has taken it (a read after it sees it). */
  flush(): Promise<void> {
    this.scheduled = false;
    const { ids, keyMonths, credits } = this.closing;
    if (ids.length === 0 && keyMonths.size === 0 && credits.size === 0) return Promise.resolve();
    this.closing = emptyClosing();
    if (this.skip()) return Promise.resolve();
    const args = [this.prefix, String(MONEY_TTL_SECONDS), String(ids.length), ...ids, String(keyMonths.size)];
    for (const [id, spent] of keyMonths) args.push(id, String(spent));
    args.push(String(credits.size));
    for (const [id, { spent, credited }] of credits) {
      args.push(id, String(spent), String(credited?.micros ?? 0), String(credited?.version ?? -1));
    }
    // A close that fails leaves its holds to the sweep, which closes them with PostgreSQL's totals.
    return this.redis.zonaMoneyClose(0, ...args).then(
      () => undefined,
      (error: unknown) => {
        this.log?.warn(
          { err: error, holds: ids.length },
          "could not close money holds in Redis; the sweep will",
        );
      },
    );
  }
}

/** Of two copies of what an account is credited, the one of the higher version. */
function newerCredited(
  a: { micros: number; version: number } | undefined,
  b: { micros: number; version: number } | undefined,
) {
  if (!a) return b;
  if (!b) return a;
  return b.version >= a.version ? b : a;
}

function emptyClosing() {
  return {
    ids: [] as string[],
    keyMonths: new Map<string, number>(),
    /** Per account: its spend, and what it is credited when a change said so. */
    credits: new Map<string, { spent: number; credited?: { micros: number; version: number } }>(),
    /** The totals merged into these copies already. */
    merged: new Set<RecordedTotals>(),
  };
}
