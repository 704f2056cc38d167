import type { Database } from "../database.ts";
import { and, desc, eq, gt, isNull, lte, sql } from "../drizzle.ts";
import { accounts, emailTokens, refreshTokens } from "../schema.ts";

/** What a mailed token is for. */
export type EmailTokenPurpose = "verify_email" | "reset_password";

/** A mailed token as the services see it (never the token itself: only its hash is kept). */
export type EmailTokenRow = typeof emailTokens.$inferSelect;

/** One-time tokens sent by mail (email verification, password reset), stored as SHA-256 hashes only. */
export class EmailTokensRepository {
  private readonly db: Database;
  constructor(db: Database) {
    this.db = db;
  }

  /**
   * Inserts the token unless the account was issued one for the same purpose after `since`,
   * atomically: the account's row is locked, so concurrent asks (two clicks, two instances) send
   * one mail. True when inserted.
   */
  async insertUnlessIssuedAfter(
    row: {
      accountId: string;
      purpose: EmailTokenPurpose;
      tokenHash: string;
      expiresAt: Date;
      createdAt: Date;
    },
    since: Date,
  ): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      await tx.select({ id: accounts.id }).from(accounts).where(eq(accounts.id, row.accountId)).for("update");
      const recent = await tx
        .select({ id: emailTokens.id })
        .from(emailTokens)
        .where(
          and(
            eq(emailTokens.accountId, row.accountId),
            eq(emailTokens.purpose, row.purpose),
            gt(emailTokens.createdAt, since),
          ),
        )
        .limit(1);
      if (recent.length > 0) return false;
      await tx.insert(emailTokens).values(row);
      return true;
    });
  }

  async findByHash(tokenHash: string): Promise<EmailTokenRow | undefined> {
    const rows = await this.db
      .select()
      .from(emailTokens)
      .where(eq(emailTokens.tokenHash, tokenHash))
      .limit(1);
    return rows[0];
  }

  /** When the account was last sent a token for this purpose (throttles mails to one address). */
  async lastIssued(accountId: string, purpose: EmailTokenPurpose): Promise<Date | undefined> {
    const rows = await this.db
      .select({ createdAt: emailTokens.createdAt })
      .from(emailTokens)
      .where(and(eq(emailTokens.accountId, accountId), eq(emailTokens.purpose, purpose)))
      .orderBy(desc(emailTokens.createdAt))
      .limit(1);
    return rows[0]?.createdAt;
  }

  /**
   * Uses a valid verification token and marks its account's email verified, in one transaction;
   * the conditional UPDATE lets only one of concurrent uses through. The account id, or undefined.
   */
  async verifyEmail(tokenHash: string, now: Date): Promise<string | undefined> {
    return this.db.transaction(async (tx) => {
      const used = await tx
        .update(emailTokens)
        .set({ usedAt: now })
        .where(usable(tokenHash, "verify_email", now))
        .returning({ accountId: emailTokens.accountId });
      const accountId = used[0]?.accountId;
      if (accountId === undefined) return undefined;
      await tx
        .update(accounts)
        .set({ emailVerified: true, updatedAt: now })
        .where(eq(accounts.id, accountId));
      return accountId;
    });
  }

  /**
   * Uses a valid reset token of an enabled account, in one transaction: sets the new password,
   * marks the email verified (the mail reached its owner), retires the account's other reset
   * tokens and revokes all its refresh tokens. The account id, or undefined.
   */
  async resetPassword(tokenHash: string, passwordHash: string, now: Date): Promise<string | undefined> {
    return this.db.transaction(async (tx) => {
      const used = await tx
        .update(emailTokens)
        .set({ usedAt: now })
        .where(
          and(
            usable(tokenHash, "reset_password", now),
            sql`NOT EXISTS (SELECT 1 FROM ${accounts} WHERE ${accounts.id} = ${emailTokens.accountId} AND ${accounts.disabled})`,
          ),
        )
        .returning({ accountId: emailTokens.accountId });
      const accountId = used[0]?.accountId;
      if (accountId === undefined) return undefined;
      await tx
        .update(accounts)
        .set({ passwordHash, emailVerified: true, updatedAt: now })
        .where(eq(accounts.id, accountId));
      await tx
        .update(emailTokens)
        .set({ usedAt: now })
        .where(
          and(
            eq(emailTokens.accountId, accountId),
            eq(emailTokens.purpose, "reset_password"),
            isNull(emailTokens.usedAt),
          ),
        );
      await tx
        .update(refreshTokens)
        .set({ revokedAt: now })
        .where(and(eq(refreshTokens.accountId, accountId), isNull(refreshTokens.revokedAt)));
      return accountId;
    });
  }

  /** Deletes an account's tokens that expired: used or not, they can do nothing any more. */
  async deleteExpired(accountId: string, now: Date): Promise<void> {
    await this.db
      .delete(emailTokens)
      .where(and(eq(emailTokens.accountId, accountId), lte(emailTokens.expiresAt, now)));
  }
}

function usable(tokenHash: string, purpose: EmailTokenPurpose, now: Date) {
  return and(
    eq(emailTokens.tokenHash, tokenHash),
    eq(emailTokens.purpose, purpose),
    isNull(emailTokens.usedAt),
    gt(emailTokens.expiresAt, now),
  );
}
