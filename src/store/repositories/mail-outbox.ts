import type { Database } from "../database.ts";
import { desc, eq, isNull } from "../drizzle.ts";
import { mailOutbox } from "../schema.ts";

/** A mail as kept in the outbox. */
export type MailRow = typeof mailOutbox.$inferSelect;

/** Every mail the service writes: waiting for the operator (no SMTP), sent, or failed. */
export class MailOutboxRepository {
  private readonly db: Database;
  constructor(db: Database) {
    this.db = db;
  }

  /** Writes a mail; its time is the database's, so that the list keeps the order of writing. */
  async insert(row: { recipient: string; subject: string; body: string }): Promise<MailRow> {
    const rows = await this.db.insert(mailOutbox).values(row).returning();
    const inserted = rows[0];
    if (!inserted) throw new Error("mail_outbox insert returned no row");
    return inserted;
  }

  async markSent(id: string, at: Date): Promise<void> {
    await this.db.update(mailOutbox).set({ sentAt: at, lastError: null }).where(eq(mailOutbox.id, id));
  }

  async markFailed(id: string, error: string): Promise<void> {
    await this.db.update(mailOutbox).set({ lastError: error }).where(eq(mailOutbox.id, id));
  }

  /** Newest first; `pending` keeps only the mails no SMTP server took. */
  async list(options: { pending: boolean; limit: number; offset: number }): Promise<MailRow[]> {
    return this.db
      .select()
      .from(mailOutbox)
      .where(options.pending ? isNull(mailOutbox.sentAt) : undefined)
      .orderBy(desc(mailOutbox.createdAt), desc(mailOutbox.id))
      .limit(options.limit)
      .offset(options.offset);
  }
}
