import { createRequire } from "node:module";
import type { Job, JobsOptions, Queue, RedisClient, Worker } from "bullmq";
import type { FastifyBaseLogger } from "fastify";
import {
  DEFAULT_CRASH_LIMIT,
  type JobHandler,
  type JobHooks,
  type JobOptions,
  type JobQueue,
  logEndedFailed,
  outcomeOf,
} from "./job-queue.ts";

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
  /** Runs of a job that may end with their process dead (stalled, to BullMQ) before it is given up (default 2). */
  crashLimit?: number;
  /** How long a running job's lock lasts unrenewed, and how often stalled jobs are looked for (default 30 s; tests shorten it). */
  lockMs?: number;
  log?: Pick<FastifyBaseLogger, "warn" | "error" | "info">;
}

// BullMQ (with ioredis, luxon, msgpackr and its PostgreSQL backend's scripts: about 6 MB of RSS)
// is loaded by the first queue made, not by every start: the embedded default never makes one.
// It is CommonJS, so `require` gives the module `import` would, at once (the constructor is sync).
const require = createRequire(import.meta.url);
let bullmq: typeof import("bullmq") | undefined;
function loadBullMq(): typeof import("bullmq") {
  bullmq ??= require("bullmq") as typeof import("bullmq");
  return bullmq;
}

/** The prefix of Zona's BullMQ keys in Redis (`server.redis_prefix` + `:jobs`). */
export const JOBS_KEY_PREFIX = "zona:jobs";
const QUEUE_NAME = "background";
const MAX_RECONNECT_DELAY_MS = 2_000;
// As the rate-limit counters' fallback: one warning per window, however many errors and retries.
const WARN_EVERY_MS = 10_000;
// A live Redis answers QUIT in milliseconds; past this the connections are cut.
const CLOSE_WAIT_MS = 2_000;
const IDLE_POLL_MS = 20;
const RECONNECTED_SETTLE_MS = 1_000;
const ADD_WAIT_MS = 2_000;
// Failed jobs kept for inspection; finished ones are removed so a later job may reuse an id.
const FAILED_KEPT = 1_000;
// A job given up whose capability could not be told (the database failing) is tried again this late.
const GIVE_UP_RETRY_MS = 30_000;
// A job that died before waits this long, again and again, for this process to run nothing else.
const ALONE_WAIT_MS = 1_000;
const GAVE_UP = "given up: its runs ended with the process dead";
// The failures a capability named (a `failed` outcome), told apart from the runs that threw.
const namedFailures = new WeakSet<Error>();
// BullMQ's own words (moveStalledJobsToWait) for a job found stalled more than `maxStalledCount` times.
const STALLED_TOO_OFTEN = "job stalled more than allowable limit";

/**
 * Background jobs in Redis with BullMQ: every instance sharing the Redis adds jobs to one queue and
 * runs them, so a job survives the process that added it (BullMQ hands a job whose worker died to
 * another instance after its lock expires). A job id that is still waiting or running is not added
 * twice; a failed one (kept for inspection) is replaced. The worker starts with the first `work`.
 * A handler's `later` outcome moves its job to the delayed set without counting an attempt.
 *
 * Poison jobs: BullMQ counts, per job, the runs whose worker stopped renewing the job's lock (the
 * process died): `stalledCounter`. A job that stalled before runs alone in this process (one that
 * comes while others run here, or others that come while it runs, are moved back to wait for a
 * second), so that a second death is its own; at `crashLimit` stalls it is not run again: its
 * `onGaveUp` hook is told, then it fails without retry. BullMQ's `maxStalledCount` is set to the
 * same limit, so its own failure of a job stalled once more (the process died while giving up)
 * comes only after; that failure tells the hook too.
 *
 * When Redis is unreachable, errors of the queue and the worker (each reconnection attempt raises
 * one) are logged as one warning at most every 10 s, and `close()` does not wait for Redis: it
 * waits for the running handlers only, then cuts the connections instead of saying goodbye.
 */
export class BullMqQueue implements JobQueue {
  readonly kind = "bullmq";
  private readonly options: BullMqQueueOptions;
  private readonly prefix: string;
  private readonly queue: Queue;
  private readonly handlers = new Map<string, { handler: JobHandler<unknown>; hooks: JobHooks<unknown> }>();
  private readonly stopping = new AbortController();
  /** Handlers running in this process; a close waits for them, never for Redis. */
  private readonly running = new Set<Promise<unknown>>();
  /** The Redis clients BullMQ opened, once each connected. */
  private readonly clients: RedisClient[] = [];
  /** Clients that have not connected yet. */
  private connecting = 0;
  private worker: Worker | undefined;
  private closing: Promise<void> | undefined;
  private lastWarning = Number.NEGATIVE_INFINITY;
  private unwarned = 0;
  private degraded = false;
  private readonly reconnected: Array<() => void> = [];
  /** A job that stalled before runs here: nothing else runs beside it. */
  private alone = false;

  constructor(options: BullMqQueueOptions) {
    this.options = options;
    this.prefix = options.prefix ?? JOBS_KEY_PREFIX;
    const { Queue } = loadBullMq();
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
    this.queue.on("error", (error) => this.warn(error));
    this.watch(this.queue);
  }

  work<T>(name: string, handler: JobHandler<T>, hooks: JobHooks<T> = {}): void {
    this.handlers.set(name, { handler: handler as JobHandler<unknown>, hooks: hooks as JobHooks<unknown> });
    if (this.worker) return;
    const { Worker } = loadBullMq();
    const lockMs = this.options.lockMs ?? 30_000;
    this.worker = new Worker(QUEUE_NAME, (job: Job, token?: string) => this.run(job, token), {
      // A worker blocks on its connection: BullMQ asks for no retry limit per command there.
      connection: { ...this.connection(), maxRetriesPerRequest: null },
      prefix: this.prefix,
      concurrency: this.options.concurrency ?? 4,
      maxStalledCount: this.crashLimit(),
      lockDuration: lockMs,
      stalledInterval: lockMs,
    });
    this.worker.on("error", (error) => this.warn(error));
    this.watch(this.worker);
    this.worker.on("failed", (job, error) => {
      if (error.message === GAVE_UP) return;
      if (job && namedFailures.has(error)) {
        logEndedFailed(this.options.log, job, error.message);
        return;
      }
      if (job && error.message === STALLED_TOO_OFTEN) {
        void this.stalledTooOften(job);
        return;
      }
      this.options.log?.error({ err: error, job: job?.name, id: job?.id }, "background job failed");
    });
  }

  onReconnected(listener: () => void): void {
    this.reconnected.push(listener);
  }

  /**
   * Rejects when Redis has not taken the job within 2 s: a request that queues work never waits for
   * an absent Redis (its commands would wait offline until it returns). The work is kept in the
   * database, and the upkeeps queue it again; an add that lands late changes nothing (one per id).
   */
  async add<T>(name: string, data: T, options: JobOptions = {}): Promise<void> {
    const adding = this.addNow(name, data, options);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`Redis did not take the job within ${ADD_WAIT_MS} ms`)),
        ADD_WAIT_MS,
      );
    });
    try {
      await Promise.race([adding, late]);
    } finally {
      clearTimeout(timer);
      adding.catch(() => {}); // a late failure has been told already, as the timeout
    }
  }

  private async addNow<T>(name: string, data: T, options: JobOptions): Promise<void> {
    const jobOptions: JobsOptions = {};
    if (options.delayMs !== undefined && options.delayMs > 0) jobOptions.delay = options.delayMs;
    if (options.id !== undefined) {
      jobOptions.jobId = options.id;
      // BullMQ ignores an add whose id it still holds, failed ones included: a failed job must not
      // keep its id from ever being queued again.
      if ((await this.queue.getJobState(options.id)) === "failed") await this.queue.remove(options.id);
    }
    await this.queue.add(name, data, jobOptions);
  }

  /** Polls Redis: in a shared queue another instance's jobs count too (tests give each app a prefix). */
  async idle(): Promise<void> {
    for (;;) {
      const counts = await this.queue.getJobCounts("waiting", "active", "delayed", "prioritized");
      if (Object.values(counts).every((count) => count === 0)) return;
      await new Promise((resolve) => setTimeout(resolve, IDLE_POLL_MS));
    }
  }

  /** Counts the shared queue in Redis: the jobs of every instance. */
  async waitingCount(): Promise<number> {
    const counts = await this.queue.getJobCounts("waiting", "prioritized", "delayed");
    return Object.values(counts).reduce((sum, count) => sum + count, 0);
  }

  /** One round trip to Redis over the queue's own connection; the caller bounds the wait. */
  async ping(): Promise<void> {
    await this.queue.getJobCounts("waiting");
  }

  close(): Promise<void> {
    this.closing ??= this.shutDown();
    return this.closing;
  }

  private async shutDown(): Promise<void> {
    this.stopping.abort();
    // The handlers use the engines, billing and the store, which close after the queue: they end
    // first (quickly, now their signal is aborted), whether Redis is there or not.
    await Promise.allSettled(this.running);
    const reachable = this.connecting === 0 && this.clients.every((client) => client.status === "ready");
    // A forced worker close does not wait for BullMQ to record the jobs that just ended in Redis.
    const closing = Promise.allSettled([this.worker?.close(!reachable), this.queue.close()]);
    if (reachable && (await settlesWithin(closing, CLOSE_WAIT_MS))) return;
    // Redis is gone (or went during the close): commands waiting for it fail now, and QUIT with them.
    for (const client of this.clients) client.disconnect();
    if (!(await settlesWithin(closing, CLOSE_WAIT_MS))) {
      this.options.log?.warn("job queue: closed without Redis; connections left to the process's exit");
    }
  }

  private async run(job: Job, token: string | undefined): Promise<void> {
    const entry = this.handlers.get(job.name);
    // A job of a name this process does not run (an instance of another version added it) fails
    // here and is retried, possibly by an instance that knows it.
    if (!entry) throw new Error(`no handler for background job '${job.name}' in this process`);
    const deaths = job.stalledCounter;
    if (deaths >= this.crashLimit()) return this.giveUp(job, token, entry.hooks);
    const suspect = deaths > 0;
    if (this.alone || (suspect && this.running.size > 0)) return this.later(job, token, ALONE_WAIT_MS);
    const running = entry.handler(job.data, this.stopping.signal);
    this.running.add(running);
    if (suspect) this.alone = true;
    try {
      const outcome = outcomeOf(await running);
      if (outcome.kind === "later") await this.later(job, token, outcome.delayMs);
      if (outcome.kind === "failed") this.endFailed(outcome.reason);
    } finally {
      if (suspect) this.alone = false;
      this.running.delete(running);
    }
  }

  /** Moves a job to the delayed set: neither completed nor failed, no attempt counted. */
  private async later(job: Job, token: string | undefined, delayMs: number): Promise<never> {
    await job.moveToDelayed(Date.now() + delayMs, token);
    // Tells the worker the job has moved.
    throw new (loadBullMq().DelayedError)();
  }

  /**
   * A job its capability ended as failed (and told its user of): BullMQ fails it without retry and
   * keeps it among the failed ones, with the reason, for inspection.
   */
  private endFailed(reason: string): never {
    const ended = new (loadBullMq().UnrecoverableError)(reason);
    namedFailures.add(ended);
    throw ended;
  }

  /** Tells the capability, then fails the job without retry; when the capability cannot hear, tries later. */
  private async giveUp(job: Job, token: string | undefined, hooks: JobHooks<unknown>): Promise<never> {
    try {
      await hooks.onGaveUp?.(job.data, job.stalledCounter);
    } catch (error) {
      this.options.log?.warn({ err: error, job: job.name, id: job.id }, "background job: giving up failed");
      return this.later(job, token, GIVE_UP_RETRY_MS);
    }
    this.gaveUp(job);
    throw new (loadBullMq().UnrecoverableError)(GAVE_UP);
  }

  /** BullMQ failed a job that stalled once more than the limit (the process died while giving it up). */
  private async stalledTooOften(job: Job): Promise<void> {
    try {
      await this.handlers.get(job.name)?.hooks.onGaveUp?.(job.data, job.stalledCounter);
    } catch (error) {
      this.options.log?.warn({ err: error, job: job.name, id: job.id }, "background job: giving up failed");
    }
    this.gaveUp(job);
  }

  private gaveUp(job: Job): void {
    this.options.log?.warn(
      { job: job.name, id: job.id, deaths: job.stalledCounter },
      `background job ${GAVE_UP}`,
    );
  }

  private crashLimit(): number {
    return this.options.crashLimit ?? DEFAULT_CRASH_LIMIT;
  }

  /** Keeps the clients of a queue or worker once connected, and notes when Redis is back. */
  private watch(owner: Queue | Worker): void {
    const backend = owner.getBackend();
    for (const client of [backend.client, backend.blockingClient]) {
      if (!client) continue;
      this.connecting += 1;
      // A client that never connects rejects when closed: nothing to keep, nothing to report.
      client
        .then((connected) => this.clients.push(connected))
        .catch(() => {})
        .finally(() => {
          this.connecting -= 1;
        });
    }
    backend.on("ready", () => {
      if (!this.degraded) return;
      this.degraded = false;
      this.options.log?.info({}, "job queue: Redis is reachable again");
      // The queue's other connections come back within moments of the first.
      setTimeout(() => {
        for (const listener of this.reconnected) listener();
      }, RECONNECTED_SETTLE_MS).unref();
    });
  }

  private warn(error: Error): void {
    this.degraded = true;
    const at = Date.now();
    if (at - this.lastWarning < WARN_EVERY_MS) {
      this.unwarned += 1;
      return;
    }
    this.lastWarning = at;
    const repeated = this.unwarned;
    this.unwarned = 0;
    this.options.log?.warn(
      { reason: error.message, ...(repeated > 0 ? { errors_since_last_warning: repeated } : {}) },
      "job queue: Redis unreachable or failing; background jobs wait for it",
    );
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

/** Whether `promise` settles within `ms`. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}
