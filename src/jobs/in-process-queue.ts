import type { FastifyBaseLogger } from "fastify";
import {
  type JobHandler,
  type JobHooks,
  type JobOptions,
  type JobQueue,
  logEndedFailed,
  outcomeOf,
} from "./job-queue.ts";

interface Job {
  name: string;
  data: unknown;
  id: string | undefined;
  /** Failed runs so far: a deferral keeps them, as BullMQ and the table queue do. */
  failures: number;
}

/** How an in-process queue runs its jobs. */
export interface InProcessQueueOptions {
  /** Jobs run at the same time (default 4). */
  concurrency?: number;
  /** Runs of a job that throws, the first included (default 3). */
  attempts?: number;
  /** Pause before the second run; it doubles for each further one (default 500 ms). */
  backoffMs?: number;
  log?: Pick<FastifyBaseLogger, "error" | "info">;
}

/**
 * The embedded queue: jobs run in this process, a few at a time, and are lost if it dies (the
 * embedded installation is one process; its jobs are conveniences that can be lost, such as titles).
 * A graceful close still runs every job already queued, with its signal aborted so each ends quickly.
 *
 * A job added with `delayMs`, or deferred by its handler (a `later` outcome), waits on a timer. Such a
 * job counts for `idle()` (tests deferring by a short delay wait on it as on any other) and keeps
 * the process alive until it runs; `close()` drops the ones not yet due, and the ones deferred
 * during the close, since the jobs of this queue are throwaway anyway.
 */
export class InProcessQueue implements JobQueue {
  readonly kind = "in-process";
  private readonly handlers = new Map<string, JobHandler<unknown>>();
  private readonly waiting: Job[] = [];
  /** Jobs waiting for their time (added with a delay, or deferred), each with its timer. */
  private readonly delayed = new Map<Job, NodeJS.Timeout>();
  /** Ids of jobs waiting or running. */
  private readonly ids = new Set<string>();
  private readonly concurrency: number;
  private readonly attempts: number;
  private readonly backoffMs: number;
  private readonly log: InProcessQueueOptions["log"];
  private readonly stopping = new AbortController();
  private running = 0;
  private closed = false;
  private idleWaiters: Array<() => void> = [];

  constructor(options: InProcessQueueOptions = {}) {
    this.concurrency = options.concurrency ?? 4;
    this.attempts = options.attempts ?? 3;
    this.backoffMs = options.backoffMs ?? 500;
    this.log = options.log;
  }

  /** The hooks go unused: a job here dies with its process, so no run of it is ever found dead. */
  work<T>(name: string, handler: JobHandler<T>, _hooks?: JobHooks<T>): void {
    this.handlers.set(name, handler as JobHandler<unknown>);
    this.pump();
  }

  async add<T>(name: string, data: T, options: JobOptions = {}): Promise<void> {
    if (this.closed) throw new Error(`job '${name}' not queued: the queue is closed`);
    if (options.id !== undefined) {
      if (this.ids.has(options.id)) return;
      this.ids.add(options.id);
    }
    // A round trip through JSON, as with BullMQ: a job never shares objects with whoever queued it.
    const job = { name, data: JSON.parse(JSON.stringify(data ?? null)), id: options.id, failures: 0 };
    if (options.delayMs !== undefined && options.delayMs > 0) {
      this.delay(job, options.delayMs);
      return;
    }
    this.waiting.push(job);
    this.pump();
  }

  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  waitingCount(): number {
    return this.waiting.length + this.delayed.size;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.stopping.abort();
    for (const [job, timer] of this.delayed) {
      clearTimeout(timer);
      this.forget(job);
    }
    this.delayed.clear();
    this.pump();
    this.settle();
    await this.idle();
  }

  private isIdle(): boolean {
    const handled = (job: Job) => this.handlers.has(job.name);
    return this.running === 0 && !this.waiting.some(handled) && ![...this.delayed.keys()].some(handled);
  }

  /** Resolves the idle() waiters once nothing is left to run. */
  private settle(): void {
    if (!this.isIdle()) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  private delay(job: Job, ms: number): void {
    const timer = setTimeout(() => {
      this.delayed.delete(job);
      this.waiting.push(job);
      this.pump();
      this.settle();
    }, ms);
    this.delayed.set(job, timer);
  }

  private forget(job: Job): void {
    if (job.id !== undefined) this.ids.delete(job.id);
  }

  private pump(): void {
    while (this.running < this.concurrency) {
      const index = this.waiting.findIndex((job) => this.handlers.has(job.name));
      if (index === -1) break;
      const [job] = this.waiting.splice(index, 1);
      if (!job) break;
      this.running += 1;
      void this.run(job).then((deferMs) => {
        this.running -= 1;
        if (deferMs !== undefined && !this.closed) this.delay(job, deferMs);
        else this.forget(job);
        this.pump();
        this.settle();
      });
    }
  }

  /** Runs a job until it ends (done, or failed for good) or is deferred: then the delay, in ms. */
  private async run(job: Job): Promise<number | undefined> {
    const handler = this.handlers.get(job.name);
    if (!handler) return undefined;
    for (let attempt = job.failures + 1; ; attempt++) {
      try {
        const outcome = outcomeOf(await handler(job.data, this.stopping.signal));
        if (outcome.kind === "failed") logEndedFailed(this.log, job, outcome.reason);
        if (outcome.kind !== "later") return undefined;
        job.failures = attempt - 1;
        return outcome.delayMs;
      } catch (error) {
        if (attempt >= this.attempts || this.stopping.signal.aborted) {
          this.log?.error({ err: error, job: job.name, attempts: attempt }, "background job failed");
          return undefined;
        }
        await pause(this.backoffMs * 2 ** (attempt - 1), this.stopping.signal);
      }
    }
  }
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });
}
