import { desc, eq, sql } from "drizzle-orm";
import type { Database } from "../database.ts";
import { creditBalances, creditLedger } from "../schema.ts";

/** One entry of an account's credit history. */
export type LedgerRow = typeof creditLedger.$inferSelect;

/** Prepaid balances and their ledger; every change writes both in one transaction. */
export class CreditsRepository {
  private readonly db: Database;
  constructor(db: Database) {
    this.db = db;
  }

  async balance(accountId: string): Promise<number> {
    const rows = await this.db
      .select({ balance: creditBalances.balanceMicros })
      .from(creditBalances)
      .where(eq(creditBalances.accountId, accountId));
    return rows[0]?.balance ?? 0;
  }

  /** Sets the balance to an amount; returns the new balance. */
  async set(accountId: string, balanceMicros: number, note: string | null): Promise<number> {
    return this.change(accountId, note, "set", (current) => balanceMicros - current);
  }

  /**
   * Adds an amount (negative to take away); returns the new balance, or undefined when the
   * balance would go below zero.
   */
  async add(accountId: string, amountMicros: number, note: string | null): Promise<number | undefined> {
    try {
      return await this.change(accountId, note, "add", (current) => {
        if (current + amountMicros < 0) throw new BelowZero();
        return amountMicros;
      });
    } catch (error) {
      if (error instanceof BelowZero) return undefined;
      throw error;
    }
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
  ): Promise<number> {
    return this.db.transaction(async (tx) => {
      await tx.insert(creditBalances).values({ accountId, balanceMicros: 0 }).onConflictDoNothing();
      // FOR UPDATE serialises concurrent changes of one balance.
      const locked = await tx
        .select({ balance: creditBalances.balanceMicros })
        .from(creditBalances)
        .where(eq(creditBalances.accountId, accountId))
        .for("update");
      const current = locked[0]?.balance ?? 0;
      const amount = delta(current);
      const next = current + amount;
      await tx
        .update(creditBalances)
        .set({ balanceMicros: next, updatedAt: sql`now()` })
        .where(eq(creditBalances.accountId, accountId));
      await tx
        .insert(creditLedger)
        .values({ accountId, kind, amountMicros: amount, balanceAfterMicros: next, note });
      return next;
    });
  }
}

class BelowZero extends Error {}
