import type { Database } from "../database.ts";
import { and, eq, gt, isNull, lte, sql } from "../drizzle.ts";
import { accounts, refreshTokens } from "../schema.ts";

/** What became of a refresh token sent to be exchanged. */
export type Rotation =
  /** It was valid: it is retired now, and the new one is stored. */
  | { outcome: "rotated"; accountId: string }
  /** It had been exchanged before: every refresh token of the account is revoked now. */
  | { outcome: "reused"; accountId: string }
  /** Unknown, revoked, expired, or its account is disabled: nothing changed. */
  | { outcome: "refused" };

/** Refresh tokens of the app API, stored as SHA-256 hashes only. */
export class RefreshTokensRepository {
  private readonly db: Database;
  constructor(db: Database) {
    this.db = db;
  }

  async insert(row: {
    accountId: string;
    tokenHash: string;
    expiresAt: Date;
    createdAt: Date;
  }): Promise<void> {
    await this.db.insert(refreshTokens).values(row);
  }

  /**
   * Exchanges a refresh token for a new one in one transaction. The old one is retired by a
   * conditional UPDATE, which PostgreSQL serialises on the row: of concurrent exchanges of one
   * token exactly one retires it; the others wait for it to commit, find it retired, and revoke
   * every token of the account, the one just issued included (RFC 9700 §4.14.2).
   */
  async rotate(oldHash: string, next: { tokenHash: string; expiresAt: Date }, now: Date): Promise<Rotation> {
    return this.db.transaction(async (tx) => {
      const owner = await tx
        .select({ accountId: refreshTokens.accountId })
        .from(refreshTokens)
        .where(eq(refreshTokens.tokenHash, oldHash))
        .limit(1);
      const ownerId = owner[0]?.accountId;
      if (ownerId === undefined) return { outcome: "refused" };
      // One exchange or revocation at a time per account: concurrent reuses each revoking all of the
      // account's tokens would otherwise lock the same rows in different orders and deadlock.
      await lockAccountTokens(tx, ownerId);
      const retired = await tx
        .update(refreshTokens)
        .set({ retiredAt: now })
        .where(
          and(
            eq(refreshTokens.tokenHash, oldHash),
            isNull(refreshTokens.retiredAt),
            isNull(refreshTokens.revokedAt),
            gt(refreshTokens.expiresAt, now),
            sql`NOT EXISTS (SELECT 1 FROM ${accounts} WHERE ${accounts.id} = ${refreshTokens.accountId} AND ${accounts.disabled})`,
          ),
        )
        .returning({ accountId: refreshTokens.accountId });
      const accountId = retired[0]?.accountId;
      if (accountId !== undefined) {
        await tx.insert(refreshTokens).values({ accountId, ...next, createdAt: now });
        return { outcome: "rotated", accountId };
      }
      const found = await tx
        .select({ accountId: refreshTokens.accountId, retiredAt: refreshTokens.retiredAt })
        .from(refreshTokens)
        .where(eq(refreshTokens.tokenHash, oldHash))
        .limit(1);
      const row = found[0];
      if (row?.retiredAt == null) return { outcome: "refused" };
      await tx
        .update(refreshTokens)
        .set({ revokedAt: now })
        .where(and(eq(refreshTokens.accountId, row.accountId), isNull(refreshTokens.revokedAt)));
      return { outcome: "reused", accountId: row.accountId };
    });
  }

  /** Revokes one token of an account (logout); a token of another account is left alone. */
  async revoke(tokenHash: string, accountId: string, now: Date): Promise<boolean> {
    const rows = await this.db
      .update(refreshTokens)
      .set({ revokedAt: now })
      .where(
        and(
          eq(refreshTokens.tokenHash, tokenHash),
          eq(refreshTokens.accountId, accountId),
          isNull(refreshTokens.revokedAt),
        ),
      )
      .returning({ id: refreshTokens.id });
    return rows.length > 0;
  }

  /** Revokes every token of an account (password reset). */
  async revokeAll(accountId: string, now: Date): Promise<void> {
    await this.db.transaction(async (tx) => {
      await lockAccountTokens(tx, accountId);
      await tx
        .update(refreshTokens)
        .set({ revokedAt: now })
        .where(and(eq(refreshTokens.accountId, accountId), isNull(refreshTokens.revokedAt)));
    });
  }

  /** Deletes an account's tokens that have expired: they can do nothing any more, not even betray reuse. */
  async deleteExpired(accountId: string, now: Date): Promise<void> {
    await this.db
      .delete(refreshTokens)
      .where(and(eq(refreshTokens.accountId, accountId), lte(refreshTokens.expiresAt, now)));
  }
}

/** A transaction-long lock on one account's refresh tokens (released at commit or rollback). */
async function lockAccountTokens(tx: Pick<Database, "execute">, accountId: string): Promise<void> {
  await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtextextended(${`refresh_tokens:${accountId}`}, 0))`);
}
