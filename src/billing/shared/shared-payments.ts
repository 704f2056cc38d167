import type { Settled, SettleFacts } from "../../store/repositories/billing.ts";
import type { RecordedTotals, UsageRecordRow, WrittenRecord } from "../../store/repositories/usage-writes.ts";
import type { Charge } from "../charge.ts";
import type { PaymentTools } from "../payment-tools.ts";
import { Reservation } from "../reservation.ts";
import { EXPIRED_FACTS, usageRow } from "../usage-row.ts";
import { RedisAway } from "./away-from-redis.ts";
import type { SharedHold } from "./shared-hold.ts";
import type { SharedMoney } from "./shared-money.ts";

/**
 * How requests pay where Redis decides (several instances on PostgreSQL and Redis): a hold in
 * Redis, the record in PostgreSQL, then the hold closed with what the record left. While Redis is
 * away, reservations are rows in PostgreSQL, closed there too.
 */
export class SharedPayments {
  private readonly shared: SharedMoney;
  private readonly tools: PaymentTools;

  constructor(shared: SharedMoney, tools: PaymentTools) {
    this.shared = shared;
    this.tools = tools;
  }

  async reserve(charge: Charge, amount: number, now: Date): Promise<Reservation> {
    const hold = this.tools.holdOf(charge, amount, now, "r");
    const onRedis = await this.decide(hold, charge, () => this.tools.holdInDatabase(charge, amount, now));
    this.tools.settlements.opened(charge.requestId);
    // A reservation row (made, or carried there while Redis was away) closes in the database.
    return new Reservation(charge.requestId, amount, {
      close: (id, facts) =>
        !onRedis || this.shared.wasCarried(id)
          ? this.closeInDatabase(id, charge, amount, facts)
          : this.closeHeld(hold, charge, facts),
    });
  }

  /** The 402 `reserve` would throw now, without holding anything. */
  async checkFits(charge: Charge, amount: number, now: Date, inDatabase: () => Promise<void>): Promise<void> {
    await this.decide(this.tools.holdOf(charge, amount, now, "r"), charge, inDatabase, true);
  }

  /** A durable reservation: Redis decides, then the row is written (unchecked: decided already). */
  async reserveDurable(charge: Charge, amount: number, now: Date): Promise<void> {
    const hold = this.tools.holdOf(charge, amount, now, "d");
    if (!(await this.decide(hold, charge, () => this.tools.holdInDatabase(charge, amount, now)))) return;
    try {
      await this.tools.holdInDatabase(charge, amount, now, true);
    } catch (error) {
      this.shared.close(hold.requestId);
      throw error;
    }
    this.shared.written(hold.requestId);
  }

  /**
   * Redis decides a hold (or `dry`, only checks it), throwing 402 when it does not fit; while Redis is away,
   * `inDatabase` decides instead, and this resolves false.
   */
  private async decide(
    hold: SharedHold,
    charge: Charge,
    inDatabase: () => Promise<void>,
    dry = false,
  ): Promise<boolean> {
    try {
      this.tools.refuse(await this.shared.hold(hold, charge.principal.monthlyLimitMicros, dry));
      return true;
    } catch (error) {
      if (!(error instanceof RedisAway)) throw error;
      this.tools.decidedInDatabase();
      await inDatabase();
      return false;
    }
  }

  /**
   * A reservation row closed (or found closed): whatever Redis still holds of it goes, and the copies
   * it changed are loaded again (the transaction's totals their floor).
   */
  settled(requestId: string, settled: Settled | undefined): void {
    if (settled) this.shared.closeAgain(requestId, settled.totals);
    else this.shared.close(requestId);
  }

  /** A key month's spent and reserved as Redis decides; undefined while Redis is away. */
  async keySpend(
    keyId: string,
    month: string,
  ): Promise<{ spentMicros: number; reservedMicros: number } | undefined> {
    try {
      const [spentMicros, reservedMicros] = await this.shared.read({ keyId, month });
      return { spentMicros, reservedMicros };
    } catch {
      return undefined;
    }
  }

  /** Closes the holds past their expiry; how many. */
  sweep(nowMs: number): Promise<number> {
    return this.shared.sweep(nowMs, (hold) => this.settleSwept(hold));
  }

  /**
   * A record that held nothing: Redis's copy of the key's spend follows, should the key get a limit.
   * A retried write may have been written by the attempt that seemed to fail: the copies are then
   * loaded again, with PostgreSQL's totals.
   */
  async recorded(row: UsageRecordRow, written: WrittenRecord | undefined, attempt: number): Promise<void> {
    const of = {
      keyId: row.keyId ?? null,
      month: row.month,
      accountId: row.accountId,
      prepaid: row.prepaid === true,
    };
    if (attempt > 1) this.shared.closeAgain(null, await this.shared.totalsOf(of));
    else if (written) this.shared.closeUnheld(of, written);
  }

  /**
   * Closes a hold in Redis: the record (and its cost) is written to PostgreSQL first, the answer
   * waits for that; the hold then ends with what the write left of the key's spend and the credits.
   */
  private closeHeld(hold: SharedHold, charge: Charge, facts: SettleFacts): Promise<boolean> {
    const costMicros = Math.max(0, Math.min(facts.costMicros, hold.amountMicros));
    const row = usageRow(hold.requestId, hold, charge, { ...facts, costMicros });
    return this.tools.close(
      hold.requestId,
      charge,
      hold.amountMicros,
      { ...facts, costMicros },
      "batched",
      async (attempt) => {
        const written = await this.tools.usage.record(row);
        // A retry may find its record written by the attempt that seemed to fail: PostgreSQL says.
        if (attempt > 1 || !written) this.shared.closeAgain(hold.requestId, await this.shared.totalsOf(hold));
        else this.shared.closeWritten(hold.requestId, written);
      },
      () => this.shared.close(hold.requestId),
    );
  }

  /** Closes a reservation row (made or carried while Redis was away) by its transaction. */
  private closeInDatabase(
    requestId: string,
    charge: Charge,
    amount: number,
    facts: SettleFacts,
  ): Promise<boolean> {
    return this.tools.close(requestId, charge, amount, facts, "direct", async () => {
      this.settled(requestId, await this.tools.repo.settle(requestId, facts));
    });
  }

  /**
   * Writes in PostgreSQL what a hold past its expiry leaves (a request's record at no cost, a
   * durable reservation released); the totals to close it with.
   */
  private async settleSwept(hold: SharedHold): Promise<RecordedTotals> {
    if (hold.kind === "r") {
      await this.tools.usage.record(usageRow(hold.requestId, hold, hold, { ...EXPIRED_FACTS }));
    }
    if (hold.kind === "d") {
      await this.tools.settlements.retried(() =>
        this.tools.repo.settle(hold.requestId, { ...EXPIRED_FACTS }),
      );
    }
    return this.shared.totalsOf(hold);
  }
}
