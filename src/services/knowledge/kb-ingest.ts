import { randomBytes } from "node:crypto";
import type { FastifyBaseLogger } from "fastify";
import type { TierName } from "../../config/schema.ts";
import { ApiError } from "../../http/errors.ts";
import { JobDeferred } from "../../jobs/job-deferred.ts";
import type { KbPassagesRepository } from "../../store/repositories/kb-passages.ts";
import type { KbDocumentRow, KnowledgeBasesRepository } from "../../store/repositories/knowledge-bases.ts";
import type { TextGeneration } from "../text/text-generation.ts";
import { DocumentUnreadable, readDocument } from "./documents/read-document.ts";

/** Texts per embedding request (spec "Embeddings": 32 inputs). */
export const EMBED_BATCH = 32;
/** How long a document may wait for the embedding machines before it fails. */
export const INGEST_DEADLINE_MS = 30 * 60_000;
/** The pause before asking the embedding machines again. */
const RETRY_EMBEDDING_MS = 15_000;

const REASONS = {
  lost: "The file was lost before it could be read; upload it again.",
  noEngine:
    "The document could not be indexed: the embedding machines did not answer. Upload it again later.",
  noCredits: "The document could not be indexed: no credits are left.",
  badVectors: "The document could not be indexed: the embedding model did not give vectors of 1,024 numbers.",
};

/**
 * Reads an uploaded document in the background (one run of its queued job): its text is extracted
 * and split into passages (documents/), each passage embedded with the catalogue's embedding model
 * in batches of 32 (billed to the base's account at the embedding model's price, usually nothing),
 * and stored with its vector; the document is then `ready` and an older document of the same name
 * in the base is replaced. A document that cannot be read fails with the reason; one whose
 * embedding machines do not answer is tried again for 30 minutes, then fails. Running it twice
 * (a process stopped mid-way) reads it again from its kept file.
 */
export class KbIngest {
  private readonly bases: KnowledgeBasesRepository;
  private readonly passages: KbPassagesRepository;
  private readonly text: TextGeneration;
  private readonly tier: TierName;
  private readonly now: () => Date;
  private readonly log: FastifyBaseLogger | undefined;

  constructor(deps: {
    bases: KnowledgeBasesRepository;
    passages: KbPassagesRepository;
    text: TextGeneration;
    tier: TierName;
    now: () => Date;
    log?: FastifyBaseLogger;
  }) {
    this.bases = deps.bases;
    this.passages = deps.passages;
    this.text = deps.text;
    this.tier = deps.tier;
    this.now = deps.now;
    this.log = deps.log;
  }

  async step(id: string, signal: AbortSignal): Promise<void> {
    try {
      await this.ingest(id, signal);
    } catch (error) {
      if (!(error instanceof IngestEnded)) throw error;
    }
  }

  private async ingest(id: string, signal: AbortSignal): Promise<void> {
    const document = await this.bases.document(id);
    if (!document || !(await this.bases.startReading(id))) return;
    const content = await this.bases.documentContent(id);
    if (!content) return this.fail(document, REASONS.lost);
    let read: Awaited<ReturnType<typeof readDocument>>;
    try {
      read = await readDocument(content, document.filename);
    } catch (error) {
      if (error instanceof DocumentUnreadable) return this.fail(document, error.reason);
      throw error;
    }
    const base = await this.bases.byId(document.kbId);
    if (!base) return; // deleted meanwhile, with its documents
    const vectors: number[][] = [];
    for (let start = 0; start < read.passages.length; start += EMBED_BATCH) {
      const batch = read.passages.slice(start, start + EMBED_BATCH).map((passage) => passage.text);
      vectors.push(...(await this.embed(document, base.accountId, batch, signal)));
    }
    try {
      await this.passages.replace(
        document.id,
        document.kbId,
        read.passages.map((passage, ordinal) => ({
          ordinal,
          text: passage.text,
          page: passage.page ?? null,
          heading: passage.heading ?? null,
          embedding: vectors[ordinal] ?? [],
        })),
      );
    } catch (error) {
      // An embedding model of another size than bge-m3's 1024: trying again cannot help.
      if (error instanceof RangeError) return this.fail(document, REASONS.badVectors);
      throw error;
    }
    if (!(await this.bases.ready(id, { passages: read.passages.length, pages: read.pages ?? null }))) return;
    const replaced = await this.bases.deleteOlderNamesakes(document);
    this.log?.info(
      {
        document_id: id,
        format: read.format,
        passages: read.passages.length,
        ...(replaced > 0 ? { replaced } : {}),
      },
      "document indexed",
    );
  }

  /** One batch's vectors; a deferral while the machines do not answer, a failure past the deadline. */
  private async embed(document: KbDocumentRow, accountId: string, texts: string[], signal: AbortSignal) {
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
      if (error.status === 402) {
        await this.fail(document, REASONS.noCredits);
        throw new IngestEnded();
      }
      if (this.now().getTime() - document.createdAt.getTime() > INGEST_DEADLINE_MS) {
        await this.fail(document, REASONS.noEngine);
        throw new IngestEnded();
      }
      throw new JobDeferred(RETRY_EMBEDDING_MS);
    }
  }

  private async fail(document: KbDocumentRow, reason: string): Promise<void> {
    await this.bases.failed(document.id, reason);
    this.log?.warn(
      { document_id: document.id, format: document.format, reason },
      "document could not be indexed",
    );
  }
}

/** The reading ended inside a helper (the document failed): the job is over. */
export class IngestEnded extends Error {}
