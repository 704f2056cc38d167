import type { FastifyBaseLogger } from "fastify";
import type { JobHandler, JobOptions, JobQueue } from "./job-queue.ts";

interface Job {
  name: string;
  data: unknown;
  id: string | undefined;
}

/** How an in-process queue runs its jobs. */
export interface InProcessQueueOptions {
  /** Jobs run at the same time (default 4). */
  concurrency?: number;
  /** Runs of a job that throws, the first included (default 3). */
  attempts?: number;
  /** Pause before the second run; it doubles for each further one (default 500 ms). */
  backoffMs?: number;
  log?: Pick<FastifyBaseLogger, "error">;
}

/**
 * The embedded queue: jobs run in this process, a few at a time, and are lost if it dies (the
 * embedded installation is one process; its jobs are conveniences that can be lost, such as titles).
 * A graceful close still runs every job already queued, with its signal aborted so each ends quickly.
 */
export class InProcessQueue implements JobQueue {
  readonly kind = "in-process";
  private readonly handlers = new Map<string, JobHandler<unknown>>();
  private readonly waiting: Job[] = [];
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

  work<T>(name: string, handler: JobHandler<T>): void {
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
    this.waiting.push({ name, data: JSON.parse(JSON.stringify(data ?? null)), id: options.id });
    this.pump();
  }

  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  waitingCount(): number {
    return this.waiting.length;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.stopping.abort();
    this.pump();
    await this.idle();
  }

  private isIdle(): boolean {
    return this.running === 0 && (this.waiting.length === 0 || this.noHandlerWaiting());
  }

  private noHandlerWaiting(): boolean {
    return this.waiting.every((job) => !this.handlers.has(job.name));
  }

  private pump(): void {
    while (this.running < this.concurrency) {
      const index = this.waiting.findIndex((job) => this.handlers.has(job.name));
      if (index === -1) break;
      const [job] = this.waiting.splice(index, 1);
      if (!job) break;
      this.running += 1;
      void this.run(job).finally(() => {
        this.running -= 1;
        if (job.id !== undefined) this.ids.delete(job.id);
        this.pump();
        if (this.isIdle()) {
          const waiters = this.idleWaiters;
          this.idleWaiters = [];
          for (const resolve of waiters) resolve();
        }
      });
    }
  }

  private async run(job: Job): Promise<void> {
    const handler = this.handlers.get(job.name);
    if (!handler) return;
    for (let attempt = 1; ; attempt++) {
      try {
        await handler(job.data, this.stopping.signal);
        return;
      } catch (error) {
        if (attempt >= this.attempts || this.stopping.signal.aborted) {
          this.log?.error({ err: error, job: job.name, attempts: attempt }, "background job failed");
          return;
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
