import type { Redis } from "ioredis";
import type { BillingRepository } from "../../store/repositories/billing.ts";
import type { RecordedTotals } from "../../store/repositories/usage-writes.ts";
import { MONEY_TTL_SECONDS } from "./epoch-follower.ts";
import { holdText, keyMonthOf, type SharedHold } from "./shared-hold.ts";

/** A copy Redis keeps: a key's month, or an account's credits. */
export type CopyOf = { keyId: string; month: string } | { accountId: string };

/** Reads from PostgreSQL what Redis's copies of the money are made from. */
export class CopyLoader {
  private readonly redis: Redis;
  private readonly prefix: string;
  private readonly repo: BillingRepository;

  constructor(redis: Redis, prefix: string, repo: BillingRepository) {
    this.redis = redis;
    this.prefix = prefix;
    this.repo = repo;
  }

  /**
   * Makes a copy whole from PostgreSQL, in the epoch it was asked in, with the durable reservations
   * holding money of it as holds; false when that epoch is no longer the one in force.
   */
  async load(epoch: string, kind: "k" | "a", of: CopyOf): Promise<boolean> {
    const record = await this.repo.moneyOfRecord(of);
    const durable = record.durable.flatMap((row) => [
      row.requestId,
      holdText({
        requestId: row.requestId,
        keyId: row.keyId,
        month: row.month,
        accountId: row.accountId,
        prepaid: row.prepaid,
        amountMicros: row.amountMicros,
        kind: "d",
        endpoint: row.endpoint,
        model: row.model,
        expiresAt: row.expiresAt.getTime(),
      }),
    ]);
    const reply = await this.redis.zonaMoneyLoad(
      0,
      this.prefix,
      epoch,
      kind,
      "keyId" in of ? keyMonthOf(of) : of.accountId,
      String(record.micros),
      String(record.version),
      String(record.spentMicros),
      String(MONEY_TTL_SECONDS),
      String(record.durable.length),
      ...durable,
    );
    return reply[0] !== "epoch";
  }

  /** What PostgreSQL holds of a hold's key month and account, as totals to close it with. */
  async totalsOf(
    hold: Pick<SharedHold, "keyId" | "month" | "accountId" | "prepaid">,
  ): Promise<RecordedTotals> {
    const totals: RecordedTotals = { keyMonths: [], credits: [] };
    if (hold.keyId !== null) {
      const spend = await this.repo.moneyOfRecord({ keyId: hold.keyId, month: hold.month });
      totals.keyMonths.push({ keyId: hold.keyId, month: hold.month, spentMicros: spend.micros });
    }
    if (hold.prepaid) {
      const credit = await this.repo.moneyOfRecord({ accountId: hold.accountId });
      totals.credits.push({
        accountId: hold.accountId,
        spentMicros: credit.spentMicros,
        credited: { micros: credit.micros, version: credit.version },
      });
    }
    return totals;
  }
}
