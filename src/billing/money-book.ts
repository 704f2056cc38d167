import type { MoneySnapshot, ReserveRefusal } from "../store/repositories/billing.ts";
import type { UsageRecordRow } from "../store/repositories/usage-writes.ts";

/** What a hold takes from: its key's month (when there is a key) and its account's credits (prepaid). */
export interface HoldTarget {
  keyId: string | null;
  accountId: string;
  month: string;
  prepaid: boolean;
}

/** Money held in memory for one request in flight. */
export interface BookHold extends HoldTarget {
  requestId: string;
  /** The endpoint and model as recorded in usage, for the record the sweep writes. */
  endpoint: string;
  model: string | null;
  amountMicros: number;
  /** Epoch ms after which the sweep gives it back (a request that never ended). */
  expiresAt: number;
}

interface KeyMonth {
  spent: number;
  reserved: number;
}

interface Credit {
  balance: number;
  held: number;
}

/**
 * The embedded mode's authority for what is left: each key's month spend and each account's
 * credits, with the holds of requests in flight. One process owns the data, so every change passes
 * here, synchronously: a reservation is a few map operations instead of a database transaction. The
 * database follows through the usage journal (settled costs) and its own rows (durable holds).
 */
export class MoneyBook {
  private readonly keyMonths = new Map<string, KeyMonth>();
  private readonly credits = new Map<string, Credit>();
  private readonly holds = new Map<string, BookHold>();

  /** The book of a snapshot of the database, with the usage records not yet written to it. */
  static read(snapshot: MoneySnapshot, pending: readonly UsageRecordRow[]): MoneyBook {
    const book = new MoneyBook(snapshot);
    for (const row of pending) {
      book.spend(row.keyId ?? null, row.month, row.costMicros);
      if (row.prepaid) book.changeBalance(row.accountId, -row.costMicros);
    }
    return book;
  }

  private constructor(snapshot: MoneySnapshot) {
    for (const row of snapshot.keyMonths) {
      this.keyMonths.set(keyMonthId(row.keyId, row.month), {
        spent: row.spentMicros,
        reserved: row.reservedMicros,
      });
    }
    for (const row of snapshot.credits) {
      this.credits.set(row.accountId, { balance: row.balanceMicros, held: row.heldMicros });
    }
  }

  /** Why `amountMicros` would not fit now, as the database's reservation would say; undefined when it fits. */
  refusal(
    target: HoldTarget,
    amountMicros: number,
    monthlyLimitMicros: number | null,
  ): ReserveRefusal | undefined {
    if (target.keyId !== null && monthlyLimitMicros !== null) {
      const spend = this.keyMonths.get(keyMonthId(target.keyId, target.month));
      if ((spend?.spent ?? 0) + (spend?.reserved ?? 0) + amountMicros > monthlyLimitMicros) {
        return "spending_limit_reached";
      }
    }
    if (target.prepaid) {
      const credit = this.credits.get(target.accountId);
      // "No credits left" refuses even a request that would cost nothing.
      if ((credit?.balance ?? 0) - (credit?.held ?? 0) < Math.max(amountMicros, 1)) {
        return "insufficient_credits";
      }
    }
    return undefined;
  }

  /** Holds a request's highest possible cost until `close`, or says why not. */
  hold(hold: BookHold, monthlyLimitMicros: number | null): ReserveRefusal | undefined {
    const refusal = this.holdAmount(hold, hold.amountMicros, monthlyLimitMicros);
    if (refusal === undefined) this.holds.set(hold.requestId, hold);
    return refusal;
  }

  /**
   * Holds an amount whose release is not `close` (a durable reservation: its database row is closed
   * by whichever run finishes the job, which then calls `apply`).
   */
  holdAmount(
    target: HoldTarget,
    amountMicros: number,
    monthlyLimitMicros: number | null,
  ): ReserveRefusal | undefined {
    const refusal = this.refusal(target, amountMicros, monthlyLimitMicros);
    if (refusal !== undefined) return refusal;
    if (target.keyId !== null) this.keyMonth(target.keyId, target.month).reserved += amountMicros;
    if (target.prepaid) this.credit(target.accountId).held += amountMicros;
    return undefined;
  }

  /**
   * Ends a hold: the real cost (at most what was held) is spent, the rest given back. Undefined when
   * it is closed already (a request ending twice, or after the sweep released it).
   */
  close(requestId: string, costMicros: number): { hold: BookHold; costMicros: number } | undefined {
    const hold = this.holds.get(requestId);
    if (!hold) return undefined;
    this.holds.delete(requestId);
    const cost = Math.max(0, Math.min(costMicros, hold.amountMicros));
    this.apply(hold, hold.amountMicros, cost);
    return { hold, costMicros: cost };
  }

  /** Moves `heldMicros` out of the held amounts and `costMicros` into what was spent. */
  apply(target: HoldTarget, heldMicros: number, costMicros: number): void {
    if (target.keyId !== null) {
      const spend = this.keyMonth(target.keyId, target.month);
      spend.reserved -= heldMicros;
      spend.spent += costMicros;
    }
    if (target.prepaid) {
      const credit = this.credit(target.accountId);
      credit.held -= heldMicros;
      credit.balance -= costMicros;
    }
  }

  /** Adds the cost of a request that held nothing (a key without a limit on a postpaid installation). */
  spend(keyId: string | null, month: string, costMicros: number): void {
    if (keyId !== null && costMicros !== 0) this.keyMonth(keyId, month).spent += costMicros;
  }

  /** Adds to (or takes from) an account's credits: an operator's change. */
  changeBalance(accountId: string, deltaMicros: number): void {
    this.credit(accountId).balance += deltaMicros;
  }

  /** Request ids of holds past their expiry. */
  expired(nowMs: number): string[] {
    const ids: string[] = [];
    for (const hold of this.holds.values()) if (hold.expiresAt < nowMs) ids.push(hold.requestId);
    return ids;
  }

  keySpend(keyId: string, month: string): { spentMicros: number; reservedMicros: number } {
    const spend = this.keyMonths.get(keyMonthId(keyId, month));
    return { spentMicros: spend?.spent ?? 0, reservedMicros: spend?.reserved ?? 0 };
  }

  balance(accountId: string): { balanceMicros: number; heldMicros: number } {
    const credit = this.credits.get(accountId);
    return { balanceMicros: credit?.balance ?? 0, heldMicros: credit?.held ?? 0 };
  }

  private keyMonth(keyId: string, month: string): KeyMonth {
    const id = keyMonthId(keyId, month);
    let spend = this.keyMonths.get(id);
    if (!spend) {
      spend = { spent: 0, reserved: 0 };
      this.keyMonths.set(id, spend);
    }
    return spend;
  }

  private credit(accountId: string): Credit {
    let credit = this.credits.get(accountId);
    if (!credit) {
      credit = { balance: 0, held: 0 };
      this.credits.set(accountId, credit);
    }
    return credit;
  }
}

function keyMonthId(keyId: string, month: string): string {
  return `${keyId} ${month}`;
}
