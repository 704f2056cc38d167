import type { Database } from "../database.ts";
import { and, asc, desc, eq, inArray, ne, or, sql } from "../drizzle.ts";
import { kbDocuments, knowledgeBases } from "../schema.ts";

/** A knowledge base as stored, with its documents counted. */
export type KnowledgeBaseRow = typeof knowledgeBases.$inferSelect & {
  documents: number;
  readyDocuments: number;
};
/** A document as stored, without its file. */
export type KbDocumentRow = typeof kbDocuments.$inferSelect;

const DOCUMENT = {
  id: kbDocuments.id,
  kbId: kbDocuments.kbId,
  filename: kbDocuments.filename,
  format: kbDocuments.format,
  sizeBytes: kbDocuments.sizeBytes,
  status: kbDocuments.status,
  error: kbDocuments.error,
  passages: kbDocuments.passages,
  pages: kbDocuments.pages,
  createdAt: kbDocuments.createdAt,
  updatedAt: kbDocuments.updatedAt,
};

const BASE = {
  id: knowledgeBases.id,
  slug: knowledgeBases.slug,
  accountId: knowledgeBases.accountId,
  name: knowledgeBases.name,
  description: knowledgeBases.description,
  shared: knowledgeBases.shared,
  createdAt: knowledgeBases.createdAt,
  updatedAt: knowledgeBases.updatedAt,
  // Written out: inside a select Drizzle names columns without their table, which a subquery would misread.
  documents: sql<number>`(select count(*)::int from kb_documents d where d.kb_id = "knowledge_bases"."id")`,
  readyDocuments: sql<number>`(select count(*)::int from kb_documents d where d.kb_id = "knowledge_bases"."id" and d.status = 'ready')`,
};

/** Knowledge bases and their documents (the passages are kb-passages.ts's). */
export class KnowledgeBasesRepository {
  private readonly db: Database;
  constructor(db: Database) {
    this.db = db;
  }

  /** Stores a new base; undefined when its slug is taken. */
  async create(base: {
    slug: string;
    accountId: string;
    name: string;
    description: string | null;
  }): Promise<KnowledgeBaseRow | undefined> {
    const rows = await this.db
      .insert(knowledgeBases)
      .values(base)
      .onConflictDoNothing()
      .returning({ id: knowledgeBases.id });
    const id = rows[0]?.id;
    return id === undefined ? undefined : this.byId(id);
  }

  async byId(id: string): Promise<KnowledgeBaseRow | undefined> {
    const rows = await this.db.select(BASE).from(knowledgeBases).where(eq(knowledgeBases.id, id));
    return rows[0];
  }

  async bySlug(slug: string): Promise<KnowledgeBaseRow | undefined> {
    const rows = await this.db.select(BASE).from(knowledgeBases).where(eq(knowledgeBases.slug, slug));
    return rows[0];
  }

  /** Whether a slug is taken. */
  async slugTaken(slug: string): Promise<boolean> {
    const rows = await this.db
      .select({ id: knowledgeBases.id })
      .from(knowledgeBases)
      .where(eq(knowledgeBases.slug, slug));
    return rows.length > 0;
  }

  /** An account's bases, and with `withShared` the bases others share, newest first. */
  async visibleTo(accountId: string, withShared: boolean): Promise<KnowledgeBaseRow[]> {
    const whose = withShared
      ? or(eq(knowledgeBases.accountId, accountId), eq(knowledgeBases.shared, true))
      : eq(knowledgeBases.accountId, accountId);
    return this.db.select(BASE).from(knowledgeBases).where(whose).orderBy(desc(knowledgeBases.createdAt));
  }

  /** Every base of the installation (operator), by slug. */
  async all(): Promise<KnowledgeBaseRow[]> {
    return this.db.select(BASE).from(knowledgeBases).orderBy(asc(knowledgeBases.slug));
  }

  async setShared(id: string, shared: boolean): Promise<void> {
    await this.db
      .update(knowledgeBases)
      .set({ shared, updatedAt: sql`now()` })
      .where(eq(knowledgeBases.id, id));
  }

  /** Deletes a base with its documents and passages. */
  async delete(id: string): Promise<void> {
    await this.db.delete(knowledgeBases).where(eq(knowledgeBases.id, id));
  }

  /**
   * A new document whose file is being stored (`receiving`: not read, not listed as queued to the
   * upkeep, so that no job reads a file stored halfway); `received` then queues it.
   */
  async addDocument(document: {
    kbId: string;
    filename: string;
    format: string;
    sizeBytes: number;
  }): Promise<KbDocumentRow> {
    const rows = await this.db
      .insert(kbDocuments)
      .values({ ...document, status: "receiving" })
      .returning(DOCUMENT);
    const row = rows[0];
    if (!row) throw new Error("the document could not be stored");
    return row;
  }

  /** The document's file is stored whole: it is queued for reading. */
  async received(id: string): Promise<void> {
    await this.db
      .update(kbDocuments)
      .set({ status: "queued", updatedAt: sql`now()` })
      .where(and(eq(kbDocuments.id, id), eq(kbDocuments.status, "receiving")));
  }

  /** Deletes documents whose upload never finished storing (the process stopped mid-way). */
  async dropAbandonedUploads(olderThanSeconds: number): Promise<number> {
    const rows = await this.db
      .delete(kbDocuments)
      .where(
        and(
          eq(kbDocuments.status, "receiving"),
          sql`${kbDocuments.createdAt} < now() - make_interval(secs => ${olderThanSeconds})`,
        ),
      )
      .returning({ id: kbDocuments.id });
    return rows.length;
  }

  async documents(kbId: string): Promise<KbDocumentRow[]> {
    return this.db
      .select(DOCUMENT)
      .from(kbDocuments)
      .where(eq(kbDocuments.kbId, kbId))
      .orderBy(desc(kbDocuments.createdAt), desc(kbDocuments.id));
  }

  async document(id: string): Promise<KbDocumentRow | undefined> {
    const rows = await this.db.select(DOCUMENT).from(kbDocuments).where(eq(kbDocuments.id, id));
    return rows[0];
  }

  /**
   * Moves a document to `processing`, if it is queued or was left processing by a stopped process,
   * and if its account has fewer than `perAccount` other documents being read (across instances):
   * one user's pile of uploads is read a few at a time, never all at once. Returns `busy` when the
   * account is at its bound, `gone` when the document is no longer to be read.
   */
  async startReading(id: string, perAccount: number): Promise<"started" | "busy" | "gone"> {
    const others = sql`(
      select count(*) from ${kbDocuments} d join ${knowledgeBases} b on b.id = d.kb_id
      where d.status = 'processing' and d.id <> ${id}
        and b.account_id = (select b2.account_id from ${knowledgeBases} b2 where b2.id = ${kbDocuments.kbId})
    )`;
    const rows = await this.db
      .update(kbDocuments)
      .set({ status: "processing", updatedAt: sql`now()` })
      .where(
        and(
          eq(kbDocuments.id, id),
          inArray(kbDocuments.status, ["queued", "processing"]),
          sql`${others} < ${perAccount}`,
        ),
      )
      .returning({ id: kbDocuments.id });
    if (rows.length === 1) return "started";
    const document = await this.document(id);
    return document && (document.status === "queued" || document.status === "processing") ? "busy" : "gone";
  }

  /** A document being read goes back to `queued` (it waits for the embedding machines). */
  async requeue(id: string): Promise<void> {
    await this.db
      .update(kbDocuments)
      .set({ status: "queued", updatedAt: sql`now()` })
      .where(and(eq(kbDocuments.id, id), eq(kbDocuments.status, "processing")));
  }

  /**
   * A document read and embedded: ready, and in the same transaction the older documents of the
   * base with its file name are deleted (a new upload replaces them), so no reader ever sees both
   * ready. Answers whether it became ready and how many it replaced (its file is dropped by the
   * document files' store).
   */
  async ready(
    document: KbDocumentRow,
    facts: { passages: number; pages: number | null },
  ): Promise<{ ready: boolean; replaced: number }> {
    return this.db.transaction(async (tx) => {
      const rows = await tx
        .update(kbDocuments)
        .set({ status: "ready", ...facts, error: null, updatedAt: sql`now()` })
        .where(and(eq(kbDocuments.id, document.id), eq(kbDocuments.status, "processing")))
        .returning({ id: kbDocuments.id });
      if (rows.length !== 1) return { ready: false, replaced: 0 };
      const replaced = await tx
        .delete(kbDocuments)
        .where(
          and(
            eq(kbDocuments.kbId, document.kbId),
            eq(kbDocuments.filename, document.filename),
            ne(kbDocuments.id, document.id),
            sql`${kbDocuments.createdAt} <= ${document.createdAt}`,
          ),
        )
        .returning({ id: kbDocuments.id });
      return { ready: true, replaced: replaced.length };
    });
  }

  /** A document that cannot be read: failed with the reason (its file is dropped by the document files' store). */
  async failed(id: string, reason: string): Promise<void> {
    await this.db
      .update(kbDocuments)
      .set({ status: "failed", error: reason, updatedAt: sql`now()` })
      .where(and(eq(kbDocuments.id, id), inArray(kbDocuments.status, ["queued", "processing"])));
  }

  async deleteDocument(id: string): Promise<void> {
    await this.db.delete(kbDocuments).where(eq(kbDocuments.id, id));
  }

  /** Ids of documents not read yet (to make sure each has its queue entry). */
  async unread(limit: number): Promise<string[]> {
    const rows = await this.db
      .select({ id: kbDocuments.id })
      .from(kbDocuments)
      .where(inArray(kbDocuments.status, ["queued", "processing"]))
      .orderBy(asc(kbDocuments.createdAt))
      .limit(limit);
    return rows.map((row) => row.id);
  }
}
