import type { FastifyBaseLogger } from "fastify";
import type { ClaimedJob, DurableJobsRepository } from "../store/repositories/durable-jobs.ts";
import { JobLease } from "./job-lease.ts";
import {
  DEFAULT_CRASH_LIMIT,
  type JobHandler,
  type JobHooks,
  type JobOptions,
  type JobQueue,
  logEndedFailed,
  outcomeOf,
} from "./job-queue.ts";

/** How a table-backed queue runs its jobs. */
export interface TableQueueOptions {
  repo: DurableJobsRepository;
  /** Jobs this process runs at the same time (default 4). */
  concurrency?: number;
  /** Runs of a job that throws, the first included (default 5); deferrals do not count. */
  attempts?: number;
  /** Runs of a job that may end with their process dead before it is given up (default 2). */
  crashLimit?: number;
  /** Pause before the second run, doubling after (default 1 s). */
  backoffMs?: number;
  /** How long a claimed job stays held without a renewal (default 5 minutes): a dead process's jobs wait that long. */
  leaseMs?: number;
  /** Longest wait between two looks at the table (default 1 s): how soon jobs added by other processes start. */
  pollMs?: number;
  /**
   * This process is the only one using the table (the embedded database, which one process at a
   * time may open): leases left by a predecessor that died are freed at the first claim instead of
   * running out, so its jobs go on at once.
   */
  sole?: boolean;
  log?: Pick<FastifyBaseLogger, "error" | "warn" | "info">;
}

type RunOutcome =
  | { done: true; failed?: string }
  | { done: false; later: number }
  | { done: false; later?: undefined; error: unknown };

// Short, as BullMqQueue's: only tests wait on idle().
const IDLE_POLL_MS = 20;
// A due job that was not claimable (another worker's claim held its row for a moment) is looked at again this soon.
const MIN_WAIT_MS = 5;
// A job given up whose capability could not be told (the database failing) is tried again this late.
const GIVE_UP_RETRY_MS = 30_000;

/**
 * Durable background jobs in the database (`durable_jobs`), for the embedded installation that has
 * no Redis: a job survives a restart, and several processes on one PostgreSQL share the table, each
 * running only the jobs whose name it has a handler for. A claimed job is leased (JobLease); a
 * process that dies leaves its jobs held until the lease runs out, then any worker takes them.
 *
 * `idle()` resolves when no job of a handled name is in the table, whether due, deferred, waiting for
 * a retry or running in another process, and none runs here: like BullMqQueue's, it waits for a
 * deferred job to end, so tests deferring by a short delay wait on it as on any other job. After
 * `close()` it resolves once nothing runs here.
 *
 * `close()` stops claiming, aborts the running handlers' signal and waits for them. A handler that
 * then ends `later` is re-scheduled, and one that throws has its lease
 * released without counting a failure: a graceful close leaves its unfinished jobs to the next start.
 *
 * Poison jobs: a claim marks its run as begun, and every end this process sees clears the mark; a
 * job claimed with the mark still set had a run whose process died (or stopped renewing its lease),
 * which counts as one death. A job that died once runs alone in this process (nothing else is
 * claimed beside it), so that a second death is its own and not its neighbours'; at `crashLimit`
 * deaths it is not run again: its `onGaveUp` hook is told and the job is deleted.
 */
export class TableQueue implements JobQueue {
  readonly kind = "table";
  private readonly repo: DurableJobsRepository;
  private readonly concurrency: number;
  private readonly attempts: number;
  private readonly crashLimit: number;
  private readonly backoffMs: number;
  private readonly leaseMs: number;
  private readonly pollMs: number;
  private readonly sole: boolean;
  private readonly log: TableQueueOptions["log"];
  private readonly handlers = new Map<string, { handler: JobHandler<unknown>; hooks: JobHooks<unknown> }>();
  private readonly running = new Set<Promise<void>>();
  private readonly stopping = new AbortController();
  private readonly wake = new Wake();
  private loop: Promise<void> | undefined;
  private closing: Promise<void> | undefined;
  private closed = false;
  private databaseFailing = false;
  /** A job that died before runs here: nothing else is claimed until it ends. */
  private alone = false;

  constructor(options: TableQueueOptions) {
    this.repo = options.repo;
    this.concurrency = options.concurrency ?? 4;
    this.attempts = options.attempts ?? 5;
    this.crashLimit = options.crashLimit ?? DEFAULT_CRASH_LIMIT;
    this.backoffMs = options.backoffMs ?? 1_000;
    this.leaseMs = options.leaseMs ?? 5 * 60_000;
    this.pollMs = options.pollMs ?? 1_000;
    this.sole = options.sole ?? false;
    this.log = options.log;
  }

  /** Registers a handler; the claim loop starts with the first. */
  work<T>(name: string, handler: JobHandler<T>, hooks: JobHooks<T> = {}): void {
    this.handlers.set(name, { handler: handler as JobHandler<unknown>, hooks: hooks as JobHooks<unknown> });
    if (this.closed) return;
    this.loop ??= this.claimLoop();
    this.wake.poke();
  }

  async add<T>(name: string, data: T, options: JobOptions = {}): Promise<void> {
    if (this.closed) throw new Error(`job '${name}' not queued: the queue is closed`);
    await this.repo.add({
      name,
      data,
      ...(options.id !== undefined ? { id: options.id } : {}),
      ...(options.delayMs !== undefined ? { delayMs: options.delayMs } : {}),
    });
    this.wake.poke();
  }

  async idle(): Promise<void> {
    for (;;) {
      if (this.running.size === 0) {
        if (this.closed || this.handlers.size === 0) return;
        if ((await this.repo.countOf(this.names())) === 0 && this.running.size === 0) return;
      }
      await new Promise((resolve) => setTimeout(resolve, IDLE_POLL_MS));
    }
  }

  /** Jobs no worker holds, of every name and every process: the table is shared. */
  waitingCount(): Promise<number> {
    return this.repo.countWaiting();
  }

  close(): Promise<void> {
    this.closing ??= this.shutDown();
    return this.closing;
  }

  private async shutDown(): Promise<void> {
    this.closed = true;
    this.stopping.abort();
    this.wake.poke();
    await this.loop;
    await Promise.allSettled([...this.running]);
  }

  private names(): string[] {
    return [...this.handlers.keys()];
  }

  private async claimLoop(): Promise<void> {
    if (this.sole) {
      const freed = await this.repo.freeLeases().catch(() => 0);
      if (freed > 0)
        this.log?.info({ jobs: freed }, "jobs held by a process that stopped are taken up again");
    }
    while (!this.closed) {
      const waitMs = await this.step();
      if (!this.closed) await this.wake.wait(waitMs);
    }
  }

  /** Claims and starts due jobs while a slot is free; how long to wait before looking again. */
  private async step(): Promise<number> {
    try {
      while (this.running.size < this.concurrency && !this.closed && !this.alone) {
        const busy = this.running.size > 0;
        const job = await this.repo.claim(this.names(), this.leaseMs, { fresh: busy });
        if (!job) break;
        if (this.closed) {
          // Claimed while the close began: left as it was for the next start.
          await this.repo.release(job);
          break;
        }
        this.start(job);
      }
      // Full, or a suspect runs alone: a job that ends wakes the loop.
      if (this.closed || this.alone || this.running.size >= this.concurrency) return this.pollMs;
      const next = await this.repo.msUntilNextDue(this.names());
      this.databaseBack();
      if (next === undefined) return this.pollMs;
      // Due but not taken while jobs run here: a suspect waiting for them to end, which wakes the loop.
      if (next <= 0 && this.running.size > 0) return this.pollMs;
      return Math.min(this.pollMs, Math.max(MIN_WAIT_MS, next));
    } catch (error) {
      this.databaseFailed(error);
      return this.pollMs;
    }
  }

  private start(job: ClaimedJob): void {
    const givenUp = job.deaths >= this.crashLimit;
    const suspect = job.deaths > 0 && !givenUp;
    if (suspect) this.alone = true;
    const run: Promise<void> = (givenUp ? this.giveUp(job) : this.run(job))
      .catch((error: unknown) => this.databaseFailed(error))
      .finally(() => {
        if (suspect) this.alone = false;
        this.running.delete(run);
        this.wake.poke();
      });
    this.running.add(run);
  }

  /** A job whose runs died `crashLimit` times: its capability is told, and it is deleted unrun. */
  private async giveUp(job: ClaimedJob): Promise<void> {
    try {
      await this.handlers.get(job.name)?.hooks.onGaveUp?.(job.data, job.deaths);
    } catch (error) {
      // Kept, and given up again at its next claim: the capability must hear of it.
      this.log?.warn({ err: error, job: job.name, id: job.id }, "background job: giving up failed");
      await this.repo.defer(job, GIVE_UP_RETRY_MS);
      return;
    }
    await this.repo.finish(job);
    this.log?.warn(
      { job: job.name, id: job.id, deaths: job.deaths },
      "background job given up: its runs ended with the process dead",
    );
  }

  private async run(claimed: ClaimedJob): Promise<void> {
    const handler = this.handlers.get(claimed.name)?.handler;
    if (!handler) return;
    const lease = new JobLease(this.repo, claimed, this.leaseMs, this.stopping.signal);
    let outcome: RunOutcome;
    try {
      const ran = outcomeOf(await handler(claimed.data, lease.signal));
      outcome =
        ran.kind === "later"
          ? { done: false, later: ran.delayMs }
          : ran.kind === "failed"
            ? { done: true, failed: ran.reason }
            : { done: true };
    } catch (error) {
      outcome = { done: false, error };
    }
    const job = await lease.stop();
    // Lost, the job is another worker's now: this run's outcome is not written, and the job runs again.
    if (!job || !(await this.record(job, outcome))) {
      this.log?.warn(
        { job: claimed.name, id: claimed.id },
        "background job: lease lost, another worker runs it",
      );
    }
  }

  /** Writes how a run ended; false when the lease was lost meanwhile. */
  private async record(job: ClaimedJob, outcome: RunOutcome): Promise<boolean> {
    if (outcome.done) {
      const finished = await this.repo.finish(job);
      // Ended as failed by its capability (which told its user): not run again, nothing kept.
      if (finished && outcome.failed !== undefined) logEndedFailed(this.log, job, outcome.failed);
      return finished;
    }
    if (outcome.later !== undefined) return this.repo.defer(job, outcome.later);
    // Cut by the shutdown rather than failed on its own: not an attempt.
    if (this.stopping.signal.aborted) return this.repo.release(job);
    const backoffMs = this.backoffMs * 2 ** job.attempts;
    const result = await this.repo.fail(job, { maxAttempts: this.attempts, backoffMs });
    if (result === "dropped") {
      this.log?.error(
        { err: outcome.error, job: job.name, id: job.id, attempts: job.attempts + 1 },
        "background job failed",
      );
    }
    return result !== "lost";
  }

  /** One warning per outage, however many polls fail during it. */
  private databaseFailed(error: unknown): void {
    if (this.databaseFailing) return;
    this.databaseFailing = true;
    const reason = error instanceof Error ? error.message : String(error);
    this.log?.warn({ reason }, "job queue: database failing; background jobs wait for it");
  }

  private databaseBack(): void {
    if (!this.databaseFailing) return;
    this.databaseFailing = false;
    this.log?.info({}, "job queue: database reachable again");
  }
}

/** Wakes the claim loop early; a poke while it is busy is kept for its next wait. */
class Wake {
  private poked = false;
  private resolve: (() => void) | undefined;

  poke(): void {
    const resolve = this.resolve;
    if (!resolve) {
      this.poked = true;
      return;
    }
    this.resolve = undefined;
    resolve();
  }

  wait(ms: number): Promise<void> {
    if (this.poked) {
      this.poked = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.poke(), ms);
      // Waiting for work must not keep a process alive whose other handles are gone.
      timer.unref();
      this.resolve = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}
