import type { Database } from "../database.ts";
import { asc, eq, sql } from "../drizzle.ts";
import { accounts } from "../schema.ts";

/** An account row as the services see it. */
export type AccountRow = typeof accounts.$inferSelect;

/** Reads and writes accounts. */
export class AccountsRepository {
  private readonly db: Database;
  constructor(db: Database) {
    this.db = db;
  }

  /** Inserts an account; returns undefined when the email (compared case-insensitively) is taken. */
  async insert(values: typeof accounts.$inferInsert): Promise<AccountRow | undefined> {
    const rows = await this.db.insert(accounts).values(values).onConflictDoNothing().returning();
    return rows[0];
  }

  async findById(id: string): Promise<AccountRow | undefined> {
    const rows = await this.db.select().from(accounts).where(eq(accounts.id, id)).limit(1);
    return rows[0];
  }

  async findByEmail(email: string): Promise<AccountRow | undefined> {
    const rows = await this.db
      .select()
      .from(accounts)
      .where(sql`lower(${accounts.email}) = lower(${email})`)
      .limit(1);
    return rows[0];
  }

  async list(options: { limit: number; offset: number }): Promise<AccountRow[]> {
    return this.db
      .select()
      .from(accounts)
      .orderBy(asc(accounts.createdAt), asc(accounts.id))
      .limit(options.limit)
      .offset(options.offset);
  }

  async update(
    id: string,
    changes: Partial<Pick<AccountRow, "disabled" | "emailVerified" | "language" | "passwordHash">>,
  ): Promise<AccountRow | undefined> {
    const rows = await this.db
      .update(accounts)
      .set({ ...changes, updatedAt: new Date() })
      .where(eq(accounts.id, id))
      .returning();
    return rows[0];
  }
}
