import type { FastifyBaseLogger } from "fastify";

/**
 * What one run of a job came to:
 * - `done`: the job is finished (also what a handler that returns nothing says);
 * - `later`: not finished, with nothing to do now (a video still being made, no machine free yet, the
 *   process closing mid-step): the queue runs it again after `delayMs` without counting a failed
 *   attempt. Each run is then one short step of a long job, and a job of many minutes never holds a
 *   worker while it waits;
 * - `failed`: the job ended in a failure its capability can name (a video the engine could not make,
 *   a document that cannot be read): the capability has recorded it for the user, and the queue ends
 *   the job without another run, kept among the failed ones where the queue keeps those (BullMQ).
 * A failure the step cannot name is thrown: the queue's retries and its count of runs that died take over.
 */
export type JobOutcome =
  | { kind: "done" }
  | { kind: "later"; delayMs: number }
  | { kind: "failed"; reason: string };

/** The outcome of a run that finished its job. */
export const JOB_DONE: JobOutcome = { kind: "done" };

/** The outcome of a run whose job runs again in `delayMs` (at least 0). */
export function runAgainIn(delayMs: number): JobOutcome {
  return { kind: "later", delayMs: Math.max(0, delayMs) };
}

/** The outcome of a run whose job ended in a failure named by `reason` (for the queue's records, not the user). */
export function jobFailed(reason: string): JobOutcome {
  return { kind: "failed", reason };
}

/** The one line a queue writes when a job's run ended `failed` (the capability logged its details). */
export function logEndedFailed(
  log: Pick<FastifyBaseLogger, "info"> | undefined,
  job: { name: string; id?: string | undefined },
  reason: string,
): void {
  log?.info(
    { job: job.name, ...(job.id !== undefined ? { id: job.id } : {}), reason },
    "background job ended failed",
  );
}

/** What a run came to, a handler that returned nothing having finished its job. */
// biome-ignore lint/suspicious/noConfusingVoidType: a handler that returns nothing has finished its job.
export function outcomeOf(result: JobOutcome | void): JobOutcome {
  return result ?? JOB_DONE;
}

/**
 * Handles one run of a job and says what it came to. `signal` is aborted when the queue closes: a
 * handler then finishes quickly (with a cheaper result, or `later`) rather than keeping the shutdown
 * waiting. A handler may run more than once for the same job (a second instance takes over a job
 * whose process died), so it must be idempotent.
 */
// biome-ignore lint/suspicious/noConfusingVoidType: a handler that returns nothing has finished its job.
export type JobHandler<T> = (data: T, signal: AbortSignal) => Promise<JobOutcome | void>;

/**
 * What the capability of a job is told when its queue stops running it. A job whose run ended with
 * its worker or process dead (`server.job_crash_limit` times) is given up: it never runs again, and
 * `onGaveUp` gets its data and how many runs died, so that the user sees a reason (a document
 * `failed`, a video job failed at no charge). It may be called again if the process dies during it.
 */
export interface JobHooks<T> {
  onGaveUp?: (data: T, deaths: number) => Promise<void>;
}

/** Runs of a job that may end with their process dead before it is given up (`server.job_crash_limit`). */
export const DEFAULT_CRASH_LIMIT = 2;

/** Options of one job added to a queue. */
export interface JobOptions {
  /** A job with this id that is still waiting or running is not added a second time. */
  id?: string;
  /** Run it no sooner than this many milliseconds from now. */
  delayMs?: number;
}

/**
 * Background jobs, in the process (embedded) or in Redis with BullMQ (distributed: any instance
 * may run a job that another added). Job data must survive JSON.
 */
export interface JobQueue {
  /** Which implementation this is, for logs and tests. */
  readonly kind: "in-process" | "bullmq" | "table";
  /** Registers the handler (and hooks) of the jobs of one name; this process then runs such jobs. */
  work<T>(name: string, handler: JobHandler<T>, hooks?: JobHooks<T>): void;
  /** Queues a job; resolves once it is queued (not run), rejects when it cannot be (closed, Redis away). */
  add<T>(name: string, data: T, options?: JobOptions): Promise<void>;
  /** Resolves when no job of this queue is waiting or running (tests wait on it instead of sleeping). */
  idle(): Promise<void>;
  /** Jobs waiting to run (queued or waiting for a retry), for the queue-depth metric. */
  waitingCount?(): number | Promise<number>;
  /**
   * Hears when the queue's Redis answers again after an outage: jobs added meanwhile failed, and a
   * Redis that kept nothing on disk forgot the waiting ones, so the upkeeps queue them again then.
   */
  onReconnected?(listener: () => void): void;
  /** Readiness of a queue in Redis: resolves when Redis answers, rejects with the reason (`GET /readyz`). */
  ping?(): Promise<void>;
  /** Stops taking jobs, aborts the running ones' signals and waits for them to finish. */
  close(): Promise<void>;
}
