import {
  boolean,
  index,
  integer,
  pgTable,
  primaryKey,
  real,
  sql,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from "./drizzle.ts";
import { accounts } from "./schema.ts";
import { bytea, tsvector } from "./schema-types.ts";

/**
 * Knowledge bases: a named set of documents of one account (the app API's signed-in user), asked
 * through both APIs. `slug` is unique in the installation (it names the base in URLs); `shared`
 * bases (set by the operator) are listed and asked by every key.
 */
export const knowledgeBases = pgTable(
  "knowledge_bases",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    slug: text("slug").notNull(),
    accountId: uuid("account_id")
      .notNull()
      .references(() => accounts.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    description: text("description"),
    shared: boolean("shared").notNull().default(false),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("knowledge_bases_slug_unique").on(t.slug),
    index("knowledge_bases_account_idx").on(t.accountId),
  ],
);

/**
 * The documents of a knowledge base. The uploaded file is kept (in `kb_document_parts`) until the
 * ingestion job has read it, so that any instance can read it; then only its passages remain.
 */
export const kbDocuments = pgTable(
  "kb_documents",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    kbId: uuid("kb_id")
      .notNull()
      .references(() => knowledgeBases.id, { onDelete: "cascade" }),
    filename: text("filename").notNull(),
    /** `pdf`, `docx`, `markdown` or `text`, judged by the content. */
    format: text("format").notNull(),
    sizeBytes: integer("size_bytes").notNull(),
    /** `queued`, `processing`, `ready` or `failed`. */
    status: text("status").notNull(),
    /** Why a failed document failed, in words for the user. */
    error: text("error"),
    passages: integer("passages").notNull().default(0),
    pages: integer("pages"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("kb_documents_kb_idx").on(t.kbId)],
);

/**
 * The uploaded file of a document not read yet, in parts of at most a megabyte: an upload is
 * written and read back part by part, so that no step holds a whole 50 MB file in memory (nor in
 * the embedded database's memory, which never shrinks).
 */
export const kbDocumentParts = pgTable(
  "kb_document_parts",
  {
    documentId: uuid("document_id")
      .notNull()
      .references(() => kbDocuments.id, { onDelete: "cascade" }),
    ordinal: integer("ordinal").notNull(),
    bytes: bytea("bytes").notNull(),
  },
  (t) => [primaryKey({ columns: [t.documentId, t.ordinal] })],
);

/**
 * Passages of the documents, with their embedding (bge-m3, 1024 numbers) and their words for
 * full-text search. Where the database has pgvector, an index over the embedding cast to a vector
 * serves similarity search (migration 0008); elsewhere the embeddings are compared in the process.
 */
export const kbPassages = pgTable(
  "kb_passages",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    kbId: uuid("kb_id")
      .notNull()
      .references(() => knowledgeBases.id, { onDelete: "cascade" }),
    documentId: uuid("document_id")
      .notNull()
      .references(() => kbDocuments.id, { onDelete: "cascade" }),
    /** Its place in the document (0, 1, ...). */
    ordinal: integer("ordinal").notNull(),
    text: text("text").notNull(),
    /** The page of a PDF it comes from (the first, when it spans two). */
    page: integer("page"),
    /** The heading of the section it belongs to (DOCX, Markdown). */
    heading: text("heading"),
    embedding: real("embedding").array().notNull(),
    words: tsvector("words")
      .notNull()
      .generatedAlwaysAs(sql`to_tsvector('simple', coalesce("heading", '') || ' ' || "text")`),
  },
  (t) => [
    index("kb_passages_kb_idx").on(t.kbId),
    index("kb_passages_document_idx").on(t.documentId),
    index("kb_passages_words_idx").using("gin", t.words),
  ],
);
