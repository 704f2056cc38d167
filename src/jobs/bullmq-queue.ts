import { type Job, Queue, Worker } from "bullmq";
import type { FastifyBaseLogger } from "fastify";
import type { JobHandler, JobOptions, JobQueue } from "./job-queue.ts";

/** Where and how a BullMQ queue keeps its jobs. */
export interface BullMqQueueOptions {
  /** redis:// or rediss:// URL (`server.redis_url`). */
  url: string;
  /** Key prefix in Redis; tests use their own so parallel runs never take each other's jobs. */
  prefix?: string;
  /** Jobs this process runs at the same time (default 4). */
  concurrency?: number;
  /** Runs of a job that throws, the first included (default 3). */
  attempts?: number;
  /** Pause before the second run, doubling after (default 1 s). */
  backoffMs?: number;
  log?: Pick<FastifyBaseLogger, "warn" | "error">;
}

/** The prefix of Zona's BullMQ keys in Redis. */
export const JOBS_KEY_PREFIX = "zona:jobs";
const QUEUE_NAME = "background";
const MAX_RECONNECT_DELAY_MS = 2_000;
const CLOSE_WAIT_MS = 10_000;
const IDLE_POLL_MS = 20;
// Failed jobs kept for inspection; finished ones are removed so a later job may reuse an id.
const FAILED_KEPT = 1_000;

/**
 * Background jobs in Redis with BullMQ: every instance sharing the Redis adds jobs to one queue and
 * runs them, so a job survives the process that added it (BullMQ hands a job whose worker died to
 * another instance after its lock expires). A job id that is still waiting or running is not added
 * twice. The worker starts with the first `work`.
 */
export class BullMqQueue implements JobQueue {
  readonly kind = "bullmq";
  private readonly options: BullMqQueueOptions;
  private readonly prefix: string;
  private readonly queue: Queue;
  private readonly handlers = new Map<string, JobHandler<unknown>>();
  private readonly stopping = new AbortController();
  private worker: Worker | undefined;

  constructor(options: BullMqQueueOptions) {
    this.options = options;
    this.prefix = options.prefix ?? JOBS_KEY_PREFIX;
    this.queue = new Queue(QUEUE_NAME, {
      connection: this.connection(),
      prefix: this.prefix,
      defaultJobOptions: {
        attempts: options.attempts ?? 3,
        backoff: { type: "exponential", delay: options.backoffMs ?? 1_000 },
        removeOnComplete: true,
        removeOnFail: FAILED_KEPT,
      },
    });
    this.queue.on("error", (error) => this.options.log?.warn({ err: error }, "job queue: Redis error"));
  }

  work<T>(name: string, handler: JobHandler<T>): void {
    this.handlers.set(name, handler as JobHandler<unknown>);
    if (this.worker) return;
    this.worker = new Worker(QUEUE_NAME, (job: Job) => this.run(job), {
      // A worker blocks on its connection: BullMQ asks for no retry limit per command there.
      connection: { ...this.connection(), maxRetriesPerRequest: null },
      prefix: this.prefix,
      concurrency: this.options.concurrency ?? 4,
    });
    this.worker.on("error", (error) => this.options.log?.warn({ err: error }, "job worker: Redis error"));
    this.worker.on("failed", (job, error) => {
      this.options.log?.error({ err: error, job: job?.name, id: job?.id }, "background job failed");
    });
  }

  async add<T>(name: string, data: T, options: JobOptions = {}): Promise<void> {
    await this.queue.add(name, data, options.id !== undefined ? { jobId: options.id } : {});
  }

  /** Polls Redis: in a shared queue another instance's jobs count too (tests give each app a prefix). */
  async idle(): Promise<void> {
    for (;;) {
      const counts = await this.queue.getJobCounts("waiting", "active", "delayed", "prioritized");
      if (Object.values(counts).every((count) => count === 0)) return;
      await new Promise((resolve) => setTimeout(resolve, IDLE_POLL_MS));
    }
  }

  async close(): Promise<void> {
    this.stopping.abort();
    const closing = (async () => {
      // The worker waits for its running jobs, which end quickly now their signal is aborted.
      await this.worker?.close();
      await this.queue.close();
    })();
    // A shutdown never hangs on Redis: past the wait, the connections are left to the process's exit.
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((resolve) => {
      timer = setTimeout(() => resolve("late"), CLOSE_WAIT_MS);
    });
    const outcome = await Promise.race([closing.then(() => "closed" as const), late]);
    clearTimeout(timer);
    if (outcome === "late") this.options.log?.warn("job queue: Redis did not let the queue close in time");
  }

  private async run(job: Job): Promise<void> {
    const handler = this.handlers.get(job.name);
    // A job of a name this process does not run (an instance of another version added it) fails
    // here and is retried, possibly by an instance that knows it.
    if (!handler) throw new Error(`no handler for background job '${job.name}' in this process`);
    await handler(job.data, this.stopping.signal);
  }

  private connection() {
    return {
      url: this.options.url,
      connectTimeout: 2_000,
      // BullMQ's own backoff grows to 20 s: Redis back after an outage would stay unused (and a
      // close would wait) that long. As for the rate-limit counters: at most 2 s between attempts.
      retryStrategy: (times: number) => Math.min(times * 200, MAX_RECONNECT_DELAY_MS),
    };
  }
}
