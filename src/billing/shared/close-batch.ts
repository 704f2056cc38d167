import type { FastifyBaseLogger } from "fastify";
import type { Redis } from "ioredis";
import type { RecordedTotals, WrittenRecord } from "../../store/repositories/usage-writes.ts";
import { MONEY_TTL_SECONDS } from "./epoch-follower.ts";
import { keyMonthOf } from "./shared-hold.ts";

/**
 * The closes of one tick, sent as one script call (`CLOSE_SCRIPT` says how each reaches the
 * copies): holds ended with their records' costs, records that held nothing, and copies to load
 * again from PostgreSQL.
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

  /** Ends a hold, with what its record's write left, or giving it all back (no record). */
  hold(requestId: string, record?: WrittenRecord): void {
    if (record) {
      this.closing.held.push(
        requestId,
        String(record.costMicros),
        String(record.keyMonthAfter ?? -1),
        String(record.accountAfter ?? -1),
      );
    } else this.closing.held.push(requestId, "0", "-1", "-1");
    this.schedule();
  }

  /** A record that held nothing: its cost reaches its key month's copy and its account's (if charged). */
  unheld(keyMonth: string, accountId: string, record: WrittenRecord): void {
    const cost = String(record.costMicros);
    if (keyMonth !== "" && record.keyMonthAfter !== undefined) {
      this.closing.unheld.push("k", keyMonth, String(record.keyMonthAfter), cost);
    }
    if (record.accountAfter !== undefined) {
      this.closing.unheld.push("c", accountId, String(record.accountAfter), cost);
    }
    this.schedule();
  }

  /**
   * Totals read in PostgreSQL after a write: what each account is credited (a newer version
   * replaces an older one) and, `again`, copies whose next decision loads them from PostgreSQL, the
   * totals their floor (without, the totals only raise the floor of copies not loaded).
   */
  totals(totals: RecordedTotals, again: boolean): void {
    const flag = again ? "1" : "0";
    for (const row of totals.keyMonths) {
      this.closing.totals.push("k", keyMonthOf(row), String(row.spentMicros), "0", "-1", flag);
    }
    for (const row of totals.credits) {
      this.closing.totals.push(
        "c",
        row.accountId,
        String(row.spentMicros),
        String(row.credited?.micros ?? 0),
        String(row.credited?.version ?? -1),
        flag,
      );
    }
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    // In the tick's check phase: after every answer of this round, before the next requests are read.
    setImmediate(() => this.flush());
  }

  /** Sends what was added; resolves when Redis has taken it (a read after it sees it). */
  flush(): Promise<void> {
    this.scheduled = false;
    const { held, unheld, totals } = this.closing;
    if (held.length === 0 && unheld.length === 0 && totals.length === 0) return Promise.resolve();
    this.closing = emptyClosing();
    if (this.skip()) return Promise.resolve();
    const args = [this.prefix, String(MONEY_TTL_SECONDS), String(held.length / 4), ...held];
    args.push(String(unheld.length / 4), ...unheld, String(totals.length / 6), ...totals);
    // A close that fails leaves its holds to the sweep, which loads their copies again; the copies
    // of its records that held nothing are loaded again after the next close.
    return this.redis.zonaMoneyClose(0, ...args).then(
      () => undefined,
      (error: unknown) => {
        for (let i = 0; i < unheld.length; i += 4) {
          this.closing.totals.push(unheld[i] as string, unheld[i + 1] as string, "-1", "0", "-1", "1");
        }
        this.log?.warn(
          { err: error, holds: held.length / 4 },
          "could not close money holds in Redis; the sweep will",
        );
      },
    );
  }
}

function emptyClosing() {
  return {
    /** Per hold: request id, cost, key month's spend after, account's spend after. */
    held: [] as string[],
    /** Per copy of a record that held nothing: "k"|"c", its id, spend after, cost. */
    unheld: [] as string[],
    /** Per copy: "k"|"c", its id, spend, credited, version (-1: unchanged), load again 1|0. */
    totals: [] as string[],
  };
}
