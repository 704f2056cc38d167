import type { Database } from "../database.ts";
import { and, asc, desc, eq, gt, lt, ne, sql } from "../drizzle.ts";
import { conversationMessages, conversations } from "../schema.ts";

/** A conversation row as the chat service sees it. */
export type ConversationRow = typeof conversations.$inferSelect;
/** A message row. */
export type MessageRow = typeof conversationMessages.$inferSelect;

/** Who set a conversation's title: the web chat's default, the user, or the automatic title job. */
export type TitleSource = "default" | "user" | "auto";

/** A message to append to a conversation. */
export interface NewMessage {
  role: "user" | "assistant";
  content: string;
  model: string;
  tier: string;
  promptTokens?: number;
  completionTokens?: number;
  /** An answer its client stopped (closed the stream): what had come is its content. */
  stopped?: boolean;
}

/**
 * Conversations of the app API and their messages. Reads and writes that a user makes name the
 * account, so another user's conversation is never found; timestamps come from the database clock.
 */
export class ConversationsRepository {
  private readonly db: Database;
  constructor(db: Database) {
    this.db = db;
  }

  /** The account's conversations not archived, most recently updated first. */
  async list(accountId: string, limit: number): Promise<ConversationRow[]> {
    return this.db
      .select()
      .from(conversations)
      .where(and(eq(conversations.accountId, accountId), eq(conversations.archived, false)))
      .orderBy(desc(conversations.updatedAt), desc(conversations.createdAt), desc(conversations.id))
      .limit(limit);
  }

  /** The account's archived conversations (the web chat's), most recently updated first. */
  async listArchived(accountId: string, limit: number): Promise<ConversationRow[]> {
    return this.db
      .select()
      .from(conversations)
      .where(and(eq(conversations.accountId, accountId), eq(conversations.archived, true)))
      .orderBy(desc(conversations.updatedAt), desc(conversations.createdAt), desc(conversations.id))
      .limit(limit);
  }

  /** Archives or brings back the account's conversation; undefined when it has none of that id. */
  async setArchived(accountId: string, id: string, archived: boolean): Promise<ConversationRow | undefined> {
    // updated_at stays: archiving is no activity, and an unarchived conversation keeps its place.
    const rows = await this.db
      .update(conversations)
      .set({ archived })
      .where(and(eq(conversations.id, id), eq(conversations.accountId, accountId)))
      .returning();
    return rows[0];
  }

  async create(values: {
    accountId: string;
    title: string;
    titleSource: TitleSource;
    model: string;
  }): Promise<ConversationRow> {
    const rows = await this.db.insert(conversations).values(values).returning();
    const row = rows[0];
    if (!row) throw new Error("the conversation was not inserted");
    return row;
  }

  /** The account's conversation (archived ones too: they are only left out of the list). */
  async find(accountId: string, id: string): Promise<ConversationRow | undefined> {
    const rows = await this.db
      .select()
      .from(conversations)
      .where(and(eq(conversations.id, id), eq(conversations.accountId, accountId)))
      .limit(1);
    return rows[0];
  }

  /** A conversation whoever owns it (background jobs). */
  async findById(id: string): Promise<ConversationRow | undefined> {
    const rows = await this.db.select().from(conversations).where(eq(conversations.id, id)).limit(1);
    return rows[0];
  }

  /** Every message of a conversation, oldest first. */
  async messages(conversationId: string): Promise<MessageRow[]> {
    return this.db
      .select()
      .from(conversationMessages)
      .where(eq(conversationMessages.conversationId, conversationId))
      .orderBy(asc(conversationMessages.seq));
  }

  /** The first message the user wrote in a conversation. */
  async firstUserMessage(conversationId: string): Promise<MessageRow | undefined> {
    const rows = await this.db
      .select()
      .from(conversationMessages)
      .where(
        and(eq(conversationMessages.conversationId, conversationId), eq(conversationMessages.role, "user")),
      )
      .orderBy(asc(conversationMessages.seq))
      .limit(1);
    return rows[0];
  }

  /**
   * Conversations still under the default title whose first answer is an answer (not `failedText`,
   * not empty), last changed between `since` and `before`: their title job was lost or never queued.
   */
  async untitledAnswered(
    window: { since: Date; before: Date },
    failedText: string,
    limit: number,
  ): Promise<Array<{ id: string; accountId: string; backend: string | null; model: string }>> {
    const first = this.db
      .select({ model: conversationMessages.model, content: conversationMessages.content })
      .from(conversationMessages)
      .where(
        and(
          eq(conversationMessages.conversationId, conversations.id),
          eq(conversationMessages.role, "assistant"),
        ),
      )
      .orderBy(asc(conversationMessages.seq))
      .limit(1)
      .as("first_answer");
    return this.db
      .select({
        id: conversations.id,
        accountId: conversations.accountId,
        backend: conversations.backend,
        model: first.model,
      })
      .from(conversations)
      .innerJoinLateral(first, sql`true`)
      .where(
        and(
          eq(conversations.titleSource, "default"),
          gt(conversations.updatedAt, window.since),
          lt(conversations.updatedAt, window.before),
          ne(first.content, failedText),
          sql`btrim(${first.content}) <> ''`,
        ),
      )
      .limit(limit);
  }

  /** A title the user chose: kept from now on, whatever the automatic title job does. */
  async rename(accountId: string, id: string, title: string): Promise<ConversationRow | undefined> {
    const rows = await this.db
      .update(conversations)
      .set({ title, titleSource: "user", updatedAt: sql`now()` })
      .where(and(eq(conversations.id, id), eq(conversations.accountId, accountId)))
      .returning();
    return rows[0];
  }

  /**
   * The automatic title, only while the title is still the default one: a title the user set,
   * also while the job was running, is never replaced. Whether it was set.
   */
  async setAutomaticTitle(id: string, title: string): Promise<boolean> {
    const rows = await this.db
      .update(conversations)
      .set({ title, titleSource: "auto" })
      .where(and(eq(conversations.id, id), eq(conversations.titleSource, "default")))
      .returning({ id: conversations.id });
    return rows.length > 0;
  }

  /** Deletes a conversation of the account and its messages; whether there was one. */
  async delete(accountId: string, id: string): Promise<boolean> {
    const rows = await this.db
      .delete(conversations)
      .where(and(eq(conversations.id, id), eq(conversations.accountId, accountId)))
      .returning({ id: conversations.id });
    return rows.length > 0;
  }

  /**
   * Appends a message after the last one and updates the conversation (its `updated_at`, and the
   * changes given) in one transaction. The conversation's row lock orders concurrent appends.
   * Undefined when the conversation is gone (deleted meanwhile).
   */
  async append(
    conversationId: string,
    message: NewMessage,
    changes: Partial<Pick<ConversationRow, "model" | "backend">> = {},
  ): Promise<{ conversation: ConversationRow; message: MessageRow } | undefined> {
    return this.db.transaction(async (tx) => {
      const updated = await tx
        .update(conversations)
        .set({ ...changes, updatedAt: sql`now()` })
        .where(eq(conversations.id, conversationId))
        .returning();
      const conversation = updated[0];
      if (!conversation) return undefined;
      const inserted = await tx
        .insert(conversationMessages)
        .values({
          conversationId,
          seq: sql`(SELECT coalesce(max(${conversationMessages.seq}), 0) + 1 FROM ${conversationMessages}
            WHERE ${conversationMessages.conversationId} = ${conversationId})`,
          role: message.role,
          content: message.content,
          model: message.model,
          tier: message.tier,
          promptTokens: message.promptTokens ?? 0,
          completionTokens: message.completionTokens ?? 0,
          stopped: message.stopped ?? false,
        })
        .returning();
      const row = inserted[0];
      if (!row) throw new Error("the message was not inserted");
      return { conversation, message: row };
    });
  }
}
