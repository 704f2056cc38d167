import type { FastifyBaseLogger } from "fastify";
import type { JobQueue } from "../../jobs/job-queue.ts";
import { Upkeep } from "../../jobs/upkeep.ts";
import type { VideoJobsRepository } from "../../store/repositories/video-jobs.ts";
import { VIDEO_JOB, videoQueueId } from "./video-queue.ts";

/** How often videos past their 7 days are deleted and unfinished jobs checked for a queue entry. */
export const VIDEO_UPKEEP_EVERY_MS = 60_000;
// Enough for any installation's unfinished jobs (one per person) in one pass; the rest come next time.
const REQUEUE_BATCH = 1_000;

/**
 * The housekeeping of video jobs, on every instance (each step is harmless twice): deletes jobs and
 * clips whose 7 days are over, and queues every unfinished job again (the queue keeps one entry
 * per id), so that a job whose queue entry was lost (Redis emptied, a job not queued because the
 * queue was away when it was created) is still made.
 */
export class VideoUpkeep extends Upkeep {
  private readonly repo: VideoJobsRepository;
  private readonly now: () => Date;

  constructor(deps: {
    repo: VideoJobsRepository;
    queue: JobQueue;
    now: () => Date;
    log?: FastifyBaseLogger;
  }) {
    super("video upkeep", { queue: deps.queue, everyMs: VIDEO_UPKEEP_EVERY_MS, log: deps.log });
    this.repo = deps.repo;
    this.now = deps.now;
  }

  protected pass(): Promise<unknown> {
    return Promise.all([this.sweep(), this.requeue()]);
  }

  /** Deletes the videos past their 7 days; returns how many. */
  async sweep(): Promise<number> {
    const deleted = await this.repo.deleteExpired(this.now());
    if (deleted > 0) this.log?.info({ deleted }, "expired videos deleted");
    return deleted;
  }

  /** Queues every unfinished job (those queued already are not queued twice); returns how many. */
  async requeue(): Promise<number> {
    const ids = await this.repo.unfinished(REQUEUE_BATCH);
    for (const id of ids) await this.queue.add(VIDEO_JOB, { id }, { id: videoQueueId(id) });
    return ids.length;
  }
}
