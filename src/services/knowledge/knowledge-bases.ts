import type { FastifyBaseLogger } from "fastify";
import { itemNotFound } from "../../http/errors.ts";
import type { JobQueue } from "../../jobs/job-queue.ts";
import { isRowId } from "../../store/ids.ts";
import type {
  KbDocumentRow,
  KnowledgeBaseRow,
  KnowledgeBasesRepository,
} from "../../store/repositories/knowledge-bases.ts";
import { judgeDocument } from "./documents/document-format.ts";
import { DocumentUnreadable } from "./documents/document-unreadable.ts";
import { INGEST_JOB, ingestQueueId } from "./ingest-queue.ts";
import { documentRefused } from "./kb-errors.ts";
import { isKbSlug, slugOf, withSuffix } from "./kb-slug.ts";

/** A knowledge base as the app API shows it. */
export interface KnowledgeBaseView {
  slug: string;
  name: string;
  description: string | null;
  /** Shared by the operator: every key of the installation may ask it. */
  shared: boolean;
  /** The signed-in user's own base (false: a shared base of another account). */
  owned: boolean;
  documents: number;
  ready_documents: number;
  created_at: string;
}

/** A document as the app API shows it. */
export interface KbDocumentView {
  id: string;
  filename: string;
  format: string;
  size_bytes: number;
  /** `queued`, `processing`, `ready` or `failed`. */
  status: string;
  /** Why a failed document could not be read. */
  error: string | null;
  passages: number;
  pages: number | null;
  created_at: string;
  updated_at: string;
}

const SLUG_ATTEMPTS = 5;

/**
 * Knowledge bases and their documents: an account's own bases (created, read and deleted by the
 * signed-in user), the bases the operator shares, and the documents, stored as uploaded and read by
 * a background job (kb-ingest.ts) on the durable queue. Another account's private base is missing,
 * exactly like one that does not exist.
 */
export class KnowledgeBases {
  private readonly repo: KnowledgeBasesRepository;
  private readonly queue: JobQueue;
  private readonly log: FastifyBaseLogger | undefined;

  constructor(deps: { repo: KnowledgeBasesRepository; queue: JobQueue; log?: FastifyBaseLogger }) {
    this.repo = deps.repo;
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
   * Stores an uploaded document of a base the account owns, its format judged by its content
   * (400 with the reason when it is none of PDF, DOCX, TXT, Markdown), and queues its reading.
   */
  async upload(
    accountId: string,
    slug: string,
    file: { bytes: Buffer; filename: string },
  ): Promise<KbDocumentView> {
    const base = await this.owned(accountId, slug);
    let format: string;
    try {
      format = judgeDocument(file.bytes, file.filename);
    } catch (error) {
      if (error instanceof DocumentUnreadable) throw documentRefused(error.reason);
      throw error;
    }
    const document = await this.repo.addDocument({
      kbId: base.id,
      filename: file.filename,
      format,
      sizeBytes: file.bytes.length,
      content: file.bytes,
    });
    await this.queue
      .add(INGEST_JOB, { id: document.id }, { id: ingestQueueId(document.id) })
      .catch((error: unknown) => {
        // Stored: the upkeep queues every document not read yet.
        this.log?.warn(
          { err: error, document_id: document.id },
          "document stored but not queued yet; the upkeep will queue it",
        );
      });
    return documentView(document);
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
    status: row.status,
    error: row.error,
    passages: row.passages,
    pages: row.pages,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}
