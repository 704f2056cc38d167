import type { Database } from "../database.ts";
import { desc, eq, sql } from "../drizzle.ts";
import { creditBalances, creditLedger } from "../schema.ts";
import { balanceLeft } from "./credits-left.ts";

/** One entry of an account's credit history. */
export type LedgerRow = typeof creditLedger.$inferSelect;

/** A prepaid balance and the part of it held by requests in flight, in micro-units. */
export interface Balance {
  balanceMicros: number;
  heldMicros: number;
}

/** What an operator's change leaves of an account's credits: the balance, and the two sums it is made of. */
export interface CreditsAfter {
  balanceMicros: number;
  creditedMicros: number;
  spentMicros: number;
  /** The version of `creditedMicros`, raised by every change. */
  version: number;
}

/**
 * Where the money is held elsewhere (the embedded money book, or Redis shared by instances):
 * decides whether a change of `amountMicros` may be made and takes it there while the balance's
 * row is locked; false refuses it. `after` is what the change leaves.
 */
export type TakeChange = (amountMicros: number, after: CreditsAfter) => boolean | Promise<boolean>;

/**
 * Prepaid balances and the ledger of operators' changes; every change writes both in one
 * transaction. A balance is what the account is credited minus what its usage spent.
 */
export class CreditsRepository {
  private readonly db: Database;
  constructor(db: Database) {
    this.db = db;
  }

  async balance(accountId: string): Promise<Balance> {
    const rows = await this.db
      .select({
        balanceMicros: balanceLeft(),
        heldMicros: creditBalances.heldMicros,
      })
      .from(creditBalances)
      .where(eq(creditBalances.accountId, accountId));
    return rows[0] ?? { balanceMicros: 0, heldMicros: 0 };
  }

  /**
   * Sets the balance; returns the new one, or undefined when it would be below what requests in
   * flight hold (they could not be paid).
   */
  async set(
    accountId: string,
    balanceMicros: number,
    note: string | null,
    take?: TakeChange,
  ): Promise<Balance | undefined> {
    return this.change(accountId, note, "set", (current) => balanceMicros - current, take);
  }

  /** Adds an amount (negative to take away); undefined when the balance would go below zero or below what is held. */
  async add(
    accountId: string,
    amountMicros: number,
    note: string | null,
    take?: TakeChange,
  ): Promise<Balance | undefined> {
    return this.change(accountId, note, "add", () => amountMicros, take);
  }

  async ledger(accountId: string, limit: number): Promise<LedgerRow[]> {
    return this.db
      .select()
      .from(creditLedger)
      .where(eq(creditLedger.accountId, accountId))
      .orderBy(desc(creditLedger.createdAt))
      .limit(limit);
  }

  private async change(
    accountId: string,
    note: string | null,
    kind: string,
    delta: (currentMicros: number) => number,
    take: TakeChange | undefined,
  ): Promise<Balance | undefined> {
    return this.db.transaction(async (tx) => {
      await tx.insert(creditBalances).values({ accountId }).onConflictDoNothing();
      // FOR UPDATE serialises concurrent changes of one balance.
      const locked = await tx
        .select({
          creditedMicros: creditBalances.creditedMicros,
          spentMicros: creditBalances.spentMicros,
          heldMicros: creditBalances.heldMicros,
          version: creditBalances.version,
        })
        .from(creditBalances)
        .where(eq(creditBalances.accountId, accountId))
        .for("update");
      const current = locked[0] ?? { creditedMicros: 0, spentMicros: 0, heldMicros: 0, version: 0 };
      const amount = delta(current.creditedMicros - current.spentMicros);
      const after: CreditsAfter = {
        balanceMicros: current.creditedMicros - current.spentMicros + amount,
        creditedMicros: current.creditedMicros + amount,
        spentMicros: current.spentMicros,
        version: current.version + 1,
      };
      const next = after.balanceMicros;
      if (take ? !(await take(amount, after)) : next < Math.max(0, current.heldMicros)) return undefined;
      await tx
        .update(creditBalances)
        .set({ creditedMicros: after.creditedMicros, version: after.version, updatedAt: sql`now()` })
        .where(eq(creditBalances.accountId, accountId));
      await tx
        .insert(creditLedger)
        .values({ accountId, kind, amountMicros: amount, balanceAfterMicros: next, note });
      return { balanceMicros: next, heldMicros: current.heldMicros };
    });
  }
}
