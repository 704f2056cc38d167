import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyBaseLogger } from "fastify";
import type { TierName } from "../../config/schema.ts";
import { ApiError, isPaymentRefused } from "../../errors/catalogue.ts";
import { JOB_DONE, type JobOutcome, jobFailed, runAgainIn } from "../../jobs/job-queue.ts";
import type { DocumentFiles } from "../../store/document-files/document-files.ts";
import type { KbPassagesRepository } from "../../store/repositories/kb-passages.ts";
import type { KbDocumentRow, KnowledgeBasesRepository } from "../../store/repositories/knowledge-bases.ts";
import { UnfitEmbedding } from "../../store/vectors/cosine.ts";
import type { TextGeneration } from "../text/text-generation.ts";
import { DocumentUnreadable } from "./documents/document-unreadable.ts";
import type { DocumentFacts, DocumentReader } from "./reading/document-reader.ts";
import { readPassageBatches } from "./reading/passage-file.ts";

/** Texts per embedding request: an embedding request takes at most 32. */
export const EMBED_BATCH = 32;
/** How long a document may wait for the embedding machines before it fails. */
export const INGEST_DEADLINE_MS = 30 * 60_000;
/** The pause before asking the embedding machines again. */
const RETRY_EMBEDDING_MS = 15_000;
/** The pause before looking again whether the account may have another document read. */
const ACCOUNT_BUSY_MS = 2_000;

const REASONS = {
  lost: "The file was lost before it could be read; upload it again.",
  noEngine:
    "The document could not be indexed: the embedding machines did not answer. Upload it again later.",
  noCredits: "The document could not be indexed: no credits are left.",
  badVectors: "The document could not be indexed: the embedding model did not give vectors of 1,024 numbers.",
};

/**
 * Reads an uploaded document in the background (one run of its queued job): its file is taken
 * from the database to a private folder and read in a process of its own (reading/), which writes
 * its passages to a file; each batch of 32 passages is then embedded with the catalogue's embedding
 * model (billed to the base's account at the embedding model's price, usually nothing) and stored
 * in a small transaction of its own, so that the database keeps serving others; the document is
 * then `ready` and an older document of the same name in the base is replaced. A document that
 * cannot be read (or passes the reader's memory or time cap) fails with the reason; one whose
 * embedding machines do not answer is tried again for 30 minutes, then fails. An account has at
 * most `readsPerAccount` documents being read at once; its others wait. Running it twice (a
 * process stopped mid-way) reads it again from its kept file.
 */
export class KbIngest {
  private readonly bases: KnowledgeBasesRepository;
  private readonly passages: KbPassagesRepository;
  private readonly files: DocumentFiles;
  private readonly reader: DocumentReader;
  private readonly readsPerAccount: number;
  private readonly text: TextGeneration;
  private readonly tier: TierName;
  private readonly now: () => Date;
  private readonly log: FastifyBaseLogger | undefined;

  constructor(deps: {
    bases: KnowledgeBasesRepository;
    passages: KbPassagesRepository;
    files: DocumentFiles;
    reader: DocumentReader;
    readsPerAccount: number;
    text: TextGeneration;
    tier: TierName;
    now: () => Date;
    log?: FastifyBaseLogger;
  }) {
    this.bases = deps.bases;
    this.passages = deps.passages;
    this.files = deps.files;
    this.reader = deps.reader;
    this.readsPerAccount = deps.readsPerAccount;
    this.text = deps.text;
    this.tier = deps.tier;
    this.now = deps.now;
    this.log = deps.log;
  }

  /**
   * One run of a document's reading: `later` while its account reads as many as it may at once, or
   * while no machine embeds its passages yet; `done` once it is read, `failed` once it cannot be.
   */
  async step(id: string, signal: AbortSignal): Promise<JobOutcome> {
    const document = await this.bases.document(id);
    if (!document) return JOB_DONE;
    const started = await this.bases.startReading(id, this.readsPerAccount);
    if (started === "gone") return JOB_DONE;
    if (started === "busy") return runAgainIn(ACCOUNT_BUSY_MS);
    const folder = await mkdtemp(join(tmpdir(), "zona-reading-"));
    try {
      return await this.readAndStore(document, folder, signal);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  }

  private async readAndStore(
    document: KbDocumentRow,
    folder: string,
    signal: AbortSignal,
  ): Promise<JobOutcome> {
    const path = join(folder, "upload");
    const passagesPath = join(folder, "passages");
    if (!(await this.files.copyTo(document.id, path))) return this.fail(document, REASONS.lost);
    let facts: DocumentFacts;
    try {
      facts = await this.reader.read({ path, filename: document.filename, passagesPath }, signal);
    } catch (error) {
      if (error instanceof DocumentUnreadable) return this.fail(document, error.reason);
      throw error;
    }
    await rm(path, { force: true });
    const base = await this.bases.byId(document.kbId);
    if (!base) return JOB_DONE; // deleted meanwhile, with its documents
    // Passages stored by an earlier run that stopped mid-way are written again.
    await this.passages.deleteByDocument(document.id);
    let ordinal = 0;
    for await (const batch of readPassageBatches(passagesPath, EMBED_BATCH)) {
      const vectors = await this.embed(
        document,
        base.accountId,
        batch.map((passage) => passage.text),
        signal,
      );
      if (!Array.isArray(vectors)) return vectors;
      const rows = batch.map((passage, i) => ({
        ordinal: ordinal + i,
        text: passage.text,
        page: passage.page ?? null,
        heading: passage.heading ?? null,
        embedding: vectors[i] ?? [],
      }));
      ordinal += batch.length;
      try {
        if ((await this.passages.append(document.id, document.kbId, rows)) === 0) return JOB_DONE; // deleted meanwhile
      } catch (error) {
        // An embedding model of another size than bge-m3's 1024: trying again cannot help.
        if (error instanceof UnfitEmbedding) return this.fail(document, REASONS.badVectors);
        throw error;
      }
    }
    const { ready, replaced } = await this.bases.ready(document, {
      passages: facts.passages,
      pages: facts.pages ?? null,
    });
    await this.files.drop(document.id);
    if (!ready) return JOB_DONE;
    this.log?.info(
      {
        document_id: document.id,
        format: facts.format,
        passages: facts.passages,
        ...(replaced > 0 ? { replaced } : {}),
      },
      "document indexed",
    );
    return JOB_DONE;
  }

  /**
   * One batch's vectors; else what the reading's run comes to: `later` while the machines do not
   * answer, `failed` once the document failed (no credits, or past the deadline).
   */
  private async embed(
    document: KbDocumentRow,
    accountId: string,
    texts: string[],
    signal: AbortSignal,
  ): Promise<number[][] | JobOutcome> {
    try {
      const placed = await this.text.embed(texts, {
        // Unique per attempt: a batch embedded again (after a restart) is a new request.
        requestId: `kbi_${randomBytes(12).toString("hex")}`,
        principal: { keyId: null, accountId, zones: null, monthlyLimitMicros: null },
        tier: this.tier,
        endpoint: "knowledge_bases.ingest",
        signal,
      });
      return placed.result.vectors;
    } catch (error) {
      if (!(error instanceof ApiError) || signal.aborted) throw error;
      if (isPaymentRefused(error)) return this.fail(document, REASONS.noCredits);
      if (this.now().getTime() - document.createdAt.getTime() > INGEST_DEADLINE_MS) {
        return this.fail(document, REASONS.noEngine);
      }
      // Queued again while it waits, so that the account's other documents may be read meanwhile.
      await this.bases.requeue(document.id);
      return runAgainIn(RETRY_EMBEDDING_MS);
    }
  }

  /** Ends the reading as failed, with the reason the user sees; the run is `failed`. */
  private async fail(document: KbDocumentRow, reason: string): Promise<JobOutcome> {
    await this.bases.failed(document.id, reason);
    await this.files.drop(document.id);
    // Passages stored before the failure (a later batch refused) are not the document's.
    await this.passages.deleteByDocument(document.id);
    this.log?.warn(
      { document_id: document.id, format: document.format, reason },
      "document could not be indexed",
    );
    return jobFailed(reason);
  }
}
