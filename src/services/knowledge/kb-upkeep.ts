import type { FastifyBaseLogger } from "fastify";
import type { JobQueue } from "../../jobs/job-queue.ts";
import { Upkeep } from "../../jobs/upkeep.ts";
import type { DocumentFiles } from "../../store/document-files/document-files.ts";
import type { KnowledgeBasesRepository } from "../../store/repositories/knowledge-bases.ts";
import { INGEST_JOB, ingestQueueId } from "./ingest-queue.ts";

/** How often documents not read yet are checked for a queue entry. */
export const KB_UPKEEP_EVERY_MS = 60_000;
const REQUEUE_BATCH = 1_000;
/** An upload still storing its file after this long was left by a process that stopped. */
const ABANDONED_UPLOAD_SECONDS = 3_600;

/**
 * Deletes uploads whose storing never finished, and queues the reading of every document not read yet, at start, every minute and when the queue's
 * Redis is back, on every instance (the queue keeps one entry per document): a document whose entry
 * was lost (Redis emptied, the queue away at upload) is still read.
 */
export class KbUpkeep extends Upkeep {
  private readonly repo: KnowledgeBasesRepository;
  private readonly files: DocumentFiles;

  constructor(deps: {
    repo: KnowledgeBasesRepository;
    files: DocumentFiles;
    queue: JobQueue;
    log?: FastifyBaseLogger;
  }) {
    super("knowledge-base upkeep", { queue: deps.queue, everyMs: KB_UPKEEP_EVERY_MS, log: deps.log });
    this.repo = deps.repo;
    this.files = deps.files;
  }

  protected pass(): Promise<unknown> {
    return this.requeue();
  }

  /** Queues every document not read yet; returns how many. */
  async requeue(): Promise<number> {
    await this.repo.dropAbandonedUploads(ABANDONED_UPLOAD_SECONDS);
    // Files of documents deleted with their base, or read by a process that stopped before dropping them.
    await this.files.sweep?.(async (id) => {
      const status = (await this.repo.document(id))?.status;
      return status === "receiving" || status === "queued" || status === "processing";
    });
    const ids = await this.repo.unread(REQUEUE_BATCH);
    for (const id of ids) await this.queue.add(INGEST_JOB, { id }, { id: ingestQueueId(id) });
    return ids.length;
  }
}
