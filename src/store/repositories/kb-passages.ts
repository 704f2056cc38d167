import type { Database } from "../database.ts";
import { and, asc, desc, eq, inArray, sql } from "../drizzle.ts";
import { kbDocuments, kbPassages } from "../schema.ts";
import { EMBEDDING_DIMENSIONS, toEmbedding, vectorLiteral } from "../vectors/cosine.ts";
import { type VectorPath, type VectorSupport, vectorSupport } from "../vectors/vector-support.ts";
import { HIT_COLUMNS, type PassageHit } from "./kb-passage-hit.ts";
import { scanNearest } from "./kb-passage-scan.ts";

export type { VectorPath } from "../vectors/vector-support.ts";
export type { PassageHit } from "./kb-passage-hit.ts";

/** A passage to store: its place in the document, its text, where it comes from, its embedding. */
export interface NewPassage {
  ordinal: number;
  text: string;
  page: number | null;
  heading: string | null;
  /** EMBEDDING_DIMENSIONS finite numbers, normalised or not. */
  embedding: ArrayLike<number>;
}

/** Options of the repository. */
export interface KbPassagesOptions {
  /** `auto` (default): pgvector where the database has it, else a scan; `scan`: always the scan (tests). */
  vectorSearch?: "auto" | "scan";
  /** Passages read per round trip by the scan; tests make it small to cross many pages. */
  scanPageSize?: number;
}

// A few hundred kB of SQL a statement: large enough for few round trips, far from any limit.
const INSERT_BATCH = 64;
const APPEND_ROWS = 4;
// HNSW's candidate list (ef_search): pgvector's default of 40, or twice k when more are asked,
// so that the approximate index stays close to exact; 1000 is pgvector's upper limit.
const MIN_EF_SEARCH = 40;
const MAX_EF_SEARCH = 1000;
const DIMENSIONS = sql.raw(String(EMBEDDING_DIMENSIONS));

/**
 * The passages of knowledge-base documents: written per document, searched by vector similarity
 * (pgvector where the database has it, else an exact scan in the process; same passages, same
 * order) and by full text, always within a given set of bases.
 */
// A question of 2,000 characters has a few hundred words; the first ones are plenty to rank by.
const MAX_QUERY_WORDS = 64;

export class KbPassagesRepository {
  private readonly db: Database;
  private readonly forceScan: boolean;
  private readonly scanPageSize: number | undefined;

  constructor(db: Database, options: KbPassagesOptions = {}) {
    this.db = db;
    this.forceScan = options.vectorSearch === "scan";
    this.scanPageSize = options.scanPageSize;
  }

  /** How vector searches run on this store. */
  async vectorPath(): Promise<VectorPath> {
    return (await this.support()).path;
  }

  /**
   * Replaces a document's passages with these, in one transaction (a search sees the old ones or
   * the new ones, never a mix). Returns how many were written: 0 when the document is gone.
   */
  async replace(documentId: string, kbId: string, passages: readonly NewPassage[]): Promise<number> {
    const rows = rowsOf(documentId, kbId, passages);
    return this.db.transaction(async (tx) => {
      // The document's row lock makes two replacements of one document take turns; otherwise
      // neither would delete the other's new passages and both sets would stay.
      const [document] = await tx
        .select({ kbId: kbDocuments.kbId })
        .from(kbDocuments)
        .where(eq(kbDocuments.id, documentId))
        .for("update");
      if (document === undefined) return 0;
      if (document.kbId !== kbId) throw new Error(`document ${documentId} is not in knowledge base ${kbId}`);
      await tx.delete(kbPassages).where(eq(kbPassages.documentId, documentId));
      for (let start = 0; start < rows.length; start += INSERT_BATCH) {
        await tx.insert(kbPassages).values(rows.slice(start, start + INSERT_BATCH));
      }
      return rows.length;
    });
  }

  /**
   * Adds passages to a document, a few per statement and without a transaction, so that the
   * database is never held long. Returns how many were written: 0 when the document is gone.
   */
  async append(documentId: string, kbId: string, passages: readonly NewPassage[]): Promise<number> {
    if (passages.length === 0) return 0;
    const rows = rowsOf(documentId, kbId, passages);
    try {
      // A few rows a statement: on the embedded database each row costs milliseconds (its vector
      // goes into the HNSW index), and every other query waits for the statement in progress.
      for (let start = 0; start < rows.length; start += APPEND_ROWS) {
        await this.db.insert(kbPassages).values(rows.slice(start, start + APPEND_ROWS));
      }
      return rows.length;
    } catch (error) {
      const gone = await this.db
        .select({ id: kbDocuments.id })
        .from(kbDocuments)
        .where(eq(kbDocuments.id, documentId));
      if (gone.length === 0) return 0;
      throw error;
    }
  }

  /** Deletes a document's passages; returns how many. */
  async deleteByDocument(documentId: string): Promise<number> {
    const rows = await this.db
      .delete(kbPassages)
      .where(eq(kbPassages.documentId, documentId))
      .returning({ id: kbPassages.id });
    return rows.length;
  }

  /**
   * The k passages of these bases most similar to a query vector (cosine), best first, ties to
   * the smaller id. An UnfitEmbedding when the vector is not EMBEDDING_DIMENSIONS finite numbers.
   */
  async searchByVector(
    kbIds: readonly string[],
    queryVector: ArrayLike<number>,
    k: number,
  ): Promise<PassageHit[]> {
    const query = toEmbedding(queryVector, "the query vector");
    if (kbIds.length === 0 || k <= 0 || query.every((value) => value === 0)) return [];
    const support = await this.support();
    if (support.path === "scan") return scanNearest(this.db, [...kbIds], query, k, this.scanPageSize);
    return this.nearestWithPgvector([...kbIds], query, k, support.iterativeScan);
  }

  /**
   * The k passages of these bases that share words with a question (heading and text), those with
   * more of its words and closer together first (ts_rank_cd), ties to the smaller id. Any word
   * matches (OR): a question in natural language ("what is the refund policy?") rarely has every
   * one of its words in one passage, and ranking already prefers passages that have more of them.
   */
  async searchByText(kbIds: readonly string[], question: string, k: number): Promise<PassageHit[]> {
    const words = [...new Set(question.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])].slice(
      0,
      MAX_QUERY_WORDS,
    );
    if (kbIds.length === 0 || k <= 0 || words.length === 0) return [];
    // Letters and digits only, so nothing in them is a tsquery operator.
    const query = sql`to_tsquery('simple', ${words.join(" | ")})`;
    const rank = sql<number>`ts_rank_cd(${kbPassages.words}, ${query})`.mapWith(Number);
    return this.db
      .select({ ...HIT_COLUMNS, score: rank })
      .from(kbPassages)
      .where(and(inArray(kbPassages.kbId, [...kbIds]), sql`${kbPassages.words} @@ ${query}`))
      .orderBy(desc(rank), asc(kbPassages.id))
      .limit(k);
  }

  private async nearestWithPgvector(
    kbIds: string[],
    query: Float32Array,
    k: number,
    iterativeScan: boolean,
  ): Promise<PassageHit[]> {
    // The same expression as the index of migration 0008, so that the planner can use it.
    const distance = sql`(${kbPassages.embedding}::vector(${DIMENSIONS}) <=> ${vectorLiteral(query)}::vector)`;
    const rows = await this.db.transaction(
      async (tx) => {
        if (iterativeScan) {
          // Without it, an HNSW scan stops after ef_search candidates and the filter on the bases
          // may leave fewer than k; strict order keeps the rows sorted by distance.
          const ef = Math.min(MAX_EF_SEARCH, Math.max(MIN_EF_SEARCH, 2 * k));
          await tx.execute(
            sql`SELECT set_config('hnsw.iterative_scan', 'strict_order', true), set_config('hnsw.ef_search', ${String(ef)}, true)`,
          );
        } else {
          // An older pgvector could answer fewer than k rows through the index: compare them all.
          await tx.execute(sql`SELECT set_config('enable_indexscan', 'off', true)`);
        }
        return tx
          .select({ ...HIT_COLUMNS, distance: sql<number>`${distance}`.mapWith(Number) })
          .from(kbPassages)
          .where(inArray(kbPassages.kbId, kbIds))
          .orderBy(distance, asc(kbPassages.id))
          .limit(k);
      },
      { accessMode: "read only" },
    );
    // A zero embedding has no cosine (NaN): the scan skips it, so this path does too.
    return rows.flatMap(({ distance, ...row }) =>
      Number.isNaN(distance) ? [] : [{ ...row, score: 1 - distance }],
    );
  }

  private async support(): Promise<VectorSupport> {
    return this.forceScan ? { path: "scan" } : vectorSupport(this.db);
  }
}

/** The rows of passages to insert; an UnfitEmbedding when an embedding is not EMBEDDING_DIMENSIONS finite numbers. */
function rowsOf(documentId: string, kbId: string, passages: readonly NewPassage[]) {
  return passages.map((passage) => {
    toEmbedding(passage.embedding, `the embedding of passage ${passage.ordinal}`);
    return {
      kbId,
      documentId,
      ordinal: passage.ordinal,
      text: passage.text,
      page: passage.page,
      heading: passage.heading,
      embedding: Array.from(passage.embedding),
    };
  });
}
