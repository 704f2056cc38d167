import type { FastifyBaseLogger } from "fastify";
import type { KbDocumentStatus, KbDocumentView, KnowledgeBaseView } from "../../contract/app-api.ts";
import { itemNotFound } from "../../errors/catalogue.ts";
import { documentRefused } from "../../errors/knowledge-errors.ts";
import type { JobQueue } from "../../jobs/job-queue.ts";
import type { DocumentFiles } from "../../store/document-files/document-files.ts";
import { isRowId } from "../../store/ids.ts";
import type {
  KbDocumentRow,
  KnowledgeBaseRow,
  KnowledgeBasesRepository,
} from "../../store/repositories/knowledge-bases.ts";
import { DocumentUnreadable } from "./documents/document-unreadable.ts";
import type { DocumentFormat } from "./documents/extracted-document.ts";
import { judgeFile } from "./documents/judge-file.ts";
import { INGEST_JOB, ingestQueueId } from "./ingest-queue.ts";
import { isKbSlug, slugOf, withSuffix } from "./kb-slug.ts";

const SLUG_ATTEMPTS = 5;

/** The name of a file uploaded without one, by its format. */
const EXTENSIONS: Record<DocumentFormat, string> = { pdf: "pdf", docx: "docx", markdown: "md", txt: "txt" };

/**
 * Knowledge bases and their documents: an account's own bases (created, read and deleted by the
 * signed-in user), the bases the operator shares, and the documents, stored as uploaded and read by
 * a background job (kb-ingest.ts) on the durable queue. Another account's private base is missing,
 * exactly like one that does not exist.
 */
export class KnowledgeBases {
  private readonly repo: KnowledgeBasesRepository;
  private readonly files: DocumentFiles;
  private readonly queue: JobQueue;
  private readonly log: FastifyBaseLogger | undefined;

  constructor(deps: {
    repo: KnowledgeBasesRepository;
    files: DocumentFiles;
    queue: JobQueue;
    log?: FastifyBaseLogger;
  }) {
    this.repo = deps.repo;
    this.files = deps.files;
    this.queue = deps.queue;
    this.log = deps.log;
  }

  /** A new base of the account; its slug comes from the name, made unique with a short ending. */
  async create(
    accountId: string,
    fields: { name: string; description?: string },
  ): Promise<KnowledgeBaseView> {
    const base = slugOf(fields.name);
    for (let attempt = 0; attempt < SLUG_ATTEMPTS; attempt += 1) {
      const slug = attempt === 0 ? base : withSuffix(base);
      const created = await this.repo.create({
        slug,
        accountId,
        name: fields.name,
        description: fields.description ?? null,
      });
      if (created) return baseView(created, accountId);
    }
    throw new Error("no free slug for the knowledge base");
  }

  /** The account's bases and the bases others share, newest first. */
  async list(accountId: string): Promise<KnowledgeBaseView[]> {
    const rows = await this.repo.visibleTo(accountId, true);
    return rows.map((row) => baseView(row, accountId));
  }

  /** A base the account may ask: its own or a shared one. */
  async readable(accountId: string, slug: string): Promise<KnowledgeBaseRow> {
    return this.find(slug, (row) => row.accountId === accountId || row.shared);
  }

  /** A base the account owns (to change it); another's, shared or not, is 404. */
  async owned(accountId: string, slug: string): Promise<KnowledgeBaseRow> {
    return this.find(slug, (row) => row.accountId === accountId);
  }

  /** A base the account may read, with its documents (one lookup of the base). */
  async detail(
    accountId: string,
    slug: string,
  ): Promise<KnowledgeBaseView & { documents_list: KbDocumentView[] }> {
    const row = await this.readable(accountId, slug);
    return {
      ...baseView(row, accountId),
      documents_list: (await this.repo.documents(row.id)).map(documentView),
    };
  }

  private async find(slug: string, allowed: (row: KnowledgeBaseRow) => boolean): Promise<KnowledgeBaseRow> {
    const row = isKbSlug(slug) ? await this.repo.bySlug(slug) : undefined;
    if (!row || !allowed(row)) throw knowledgeBaseNotFound();
    return row;
  }

  async delete(accountId: string, slug: string): Promise<void> {
    const row = await this.owned(accountId, slug);
    await this.repo.delete(row.id);
  }

  /**
   * Stores an uploaded document (a file on disk) of a base the account owns, its format judged by
   * its content (400 with the reason when it is none of PDF, DOCX, TXT, Markdown), and queues its
   * reading. The file goes to the database part by part: memory stays the same whatever its size.
   * A file sent without a name is named after its format (`document.pdf`).
   */
  async upload(
    accountId: string,
    slug: string,
    file: { path: string; size: number; filename: string },
  ): Promise<KbDocumentView> {
    const base = await this.owned(accountId, slug);
    let format: DocumentFormat;
    try {
      format = await judgeFile(file.path, file.size, file.filename);
    } catch (error) {
      if (error instanceof DocumentUnreadable) throw documentRefused(error.reason);
      throw error;
    }
    const document = await this.repo.addDocument({
      kbId: base.id,
      filename: file.filename || `document.${EXTENSIONS[format]}`,
      format,
      sizeBytes: file.size,
    });
    try {
      await this.files.store(document.id, file.path);
      await this.repo.received(document.id);
    } catch (error) {
      await this.repo.deleteDocument(document.id).catch(() => {});
      await this.files.drop(document.id).catch(() => {});
      throw error;
    }
    await this.queue
      .add(INGEST_JOB, { id: document.id }, { id: ingestQueueId(document.id) })
      .catch((error: unknown) => {
        // Stored: the upkeep queues every document not read yet.
        this.log?.warn(
          { err: error, document_id: document.id },
          "document stored but not queued yet; the upkeep will queue it",
        );
      });
    return documentView({ ...document, status: "queued" });
  }

  async documents(accountId: string, slug: string): Promise<KbDocumentView[]> {
    const base = await this.readable(accountId, slug);
    return (await this.repo.documents(base.id)).map(documentView);
  }

  async deleteDocument(accountId: string, slug: string, documentId: string): Promise<void> {
    const base = await this.owned(accountId, slug);
    const document = isRowId(documentId) ? await this.repo.document(documentId) : undefined;
    if (!document || document.kbId !== base.id) throw itemNotFound("Document not found.");
    await this.repo.deleteDocument(document.id);
    await this.files.drop(document.id);
  }

  /** The reading job's hook when its queue gave it up: its runs stopped the service `deaths` times. */
  async readingGivenUp(documentId: string, deaths: number): Promise<void> {
    await this.repo.failed(
      documentId,
      `Reading this document stopped the service ${deaths} times; it was set aside.`,
    );
    await this.files.drop(documentId);
  }
}

/** 404 for a base that does not exist or is another account's private one. */
export function knowledgeBaseNotFound() {
  return itemNotFound("Knowledge base not found.");
}

export function baseView(row: KnowledgeBaseRow, accountId: string): KnowledgeBaseView {
  return {
    slug: row.slug,
    name: row.name,
    description: row.description,
    shared: row.shared,
    owned: row.accountId === accountId,
    documents: Number(row.documents),
    ready_documents: Number(row.readyDocuments),
    created_at: row.createdAt.toISOString(),
  };
}

export function documentView(row: KbDocumentRow): KbDocumentView {
  return {
    id: row.id,
    filename: row.filename,
    format: row.format,
    size_bytes: row.sizeBytes,
    status: documentStatus(row.status),
    error: row.error,
    passages: row.passages,
    pages: row.pages,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

// The stored states are the API's, and `receiving`: a file still being stored is waiting to be
// read, as far as anyone can tell.
const STATUS_SHOWN: Record<string, KbDocumentStatus> = {
  receiving: "queued",
  queued: "queued",
  processing: "processing",
  ready: "ready",
  failed: "failed",
};

function documentStatus(stored: string): KbDocumentStatus {
  const shown = STATUS_SHOWN[stored];
  if (shown === undefined) throw new Error(`a document in an unknown state: ${stored}`);
  return shown;
}
