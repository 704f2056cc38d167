import type { Database } from "../database.ts";
import { and, asc, eq, isNull } from "../drizzle.ts";
import { accounts, apiKeys } from "../schema.ts";

/** An API key row (never the secret itself: only its hash). */
export type ApiKeyRow = typeof apiKeys.$inferSelect;

/** What authentication needs in one read: the key and the state of its account. */
export interface KeyWithAccount {
  key: ApiKeyRow;
  accountDisabled: boolean;
}

/** Reads and writes API keys. */
export class ApiKeysRepository {
  private readonly db: Database;
  constructor(db: Database) {
    this.db = db;
  }

  async insert(values: typeof apiKeys.$inferInsert): Promise<ApiKeyRow> {
    const rows = await this.db.insert(apiKeys).values(values).returning();
    const row = rows[0];
    if (!row) throw new Error("insert into api_keys returned no row");
    return row;
  }

  async findByHash(keyHash: string): Promise<KeyWithAccount | undefined> {
    const rows = await this.db
      .select({ key: apiKeys, accountDisabled: accounts.disabled })
      .from(apiKeys)
      .innerJoin(accounts, eq(accounts.id, apiKeys.accountId))
      .where(eq(apiKeys.keyHash, keyHash))
      .limit(1);
    return rows[0];
  }

  async findById(id: string): Promise<ApiKeyRow | undefined> {
    const rows = await this.db.select().from(apiKeys).where(eq(apiKeys.id, id)).limit(1);
    return rows[0];
  }

  async list(filter: { accountId?: string }): Promise<ApiKeyRow[]> {
    const where = filter.accountId ? eq(apiKeys.accountId, filter.accountId) : undefined;
    return this.db.select().from(apiKeys).where(where).orderBy(asc(apiKeys.createdAt), asc(apiKeys.id));
  }

  /** Changes the given fields of a key; undefined when there is no such key. */
  async update(
    id: string,
    values: Partial<
      Pick<ApiKeyRow, "name" | "zones" | "monthlyLimitMicros" | "requestsPerMinute" | "expiresAt">
    >,
  ): Promise<ApiKeyRow | undefined> {
    if (Object.keys(values).length === 0) return this.findById(id);
    const rows = await this.db.update(apiKeys).set(values).where(eq(apiKeys.id, id)).returning();
    return rows[0];
  }

  /** Marks the key revoked; a key already revoked keeps its first revocation time. */
  async revoke(id: string, at: Date): Promise<ApiKeyRow | undefined> {
    const rows = await this.db
      .update(apiKeys)
      .set({ revokedAt: at })
      .where(and(eq(apiKeys.id, id), isNull(apiKeys.revokedAt)))
      .returning();
    return rows[0] ?? (await this.findById(id));
  }
}
