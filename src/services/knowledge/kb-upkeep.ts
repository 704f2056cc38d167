import type { FastifyBaseLogger } from "fastify";
import type { JobQueue } from "../../jobs/job-queue.ts";
import { Periodic } from "../../jobs/periodic.ts";
import type { KnowledgeBasesRepository } from "../../store/repositories/knowledge-bases.ts";
import { INGEST_JOB, ingestQueueId } from "./ingest-queue.ts";

/** How often documents not read yet are checked for a queue entry. */
export const KB_UPKEEP_EVERY_MS = 60_000;
const REQUEUE_BATCH = 1_000;

/**
 * Queues the reading of every document not read yet, at start, every minute and when the queue's
 * Redis is back, on every instance (the queue keeps one entry per document): a document whose entry
 * was lost (Redis emptied, the queue away at upload) is still read.
 */
export class KbUpkeep {
  private readonly repo: KnowledgeBasesRepository;
  private readonly queue: JobQueue;
  private readonly periodic: Periodic;

  constructor(deps: { repo: KnowledgeBasesRepository; queue: JobQueue; log?: FastifyBaseLogger }) {
    this.repo = deps.repo;
    this.queue = deps.queue;
    this.periodic = new Periodic("knowledge-base upkeep", () => this.requeue(), deps.log);
  }

  /** Queues every document not read yet; returns how many. */
  async requeue(): Promise<number> {
    const ids = await this.repo.unread(REQUEUE_BATCH);
    for (const id of ids) await this.queue.add(INGEST_JOB, { id }, { id: ingestQueueId(id) });
    return ids.length;
  }

  /** Queues now, then every minute and whenever the queue is reachable again, until stopped. */
  start(everyMs = KB_UPKEEP_EVERY_MS): void {
    this.periodic.start(everyMs);
    this.queue.onReconnected?.(() => this.periodic.runNow());
  }

  stop(): void {
    this.periodic.stop();
  }
}
