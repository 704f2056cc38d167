import type { ClaimedJob, DurableJobsRepository } from "../store/repositories/durable-jobs.ts";

/**
 * The lease of one running job of the table queue: renewed every third of its length while the
 * handler runs, so a long job is never taken by another worker, yet a job whose process died is
 * free again within one lease. The handler's signal is aborted when the queue closes or when the
 * lease is lost (another worker took the job after a renewal came too late): the run then ends
 * quickly, and nothing it did is written back to the job.
 */
export class JobLease {
  /** The signal the handler gets. */
  readonly signal: AbortSignal;
  private readonly repo: DurableJobsRepository;
  private readonly leaseMs: number;
  private readonly lost = new AbortController();
  private readonly timer: NodeJS.Timeout;
  private job: ClaimedJob;
  private renewing: Promise<void> | undefined;

  constructor(repo: DurableJobsRepository, job: ClaimedJob, leaseMs: number, stopping: AbortSignal) {
    this.repo = repo;
    this.job = job;
    this.leaseMs = leaseMs;
    this.signal = AbortSignal.any([stopping, this.lost.signal]);
    this.timer = setInterval(() => this.renew(), Math.max(1, Math.floor(leaseMs / 3)));
    // The handler keeps the process busy, not its lease.
    this.timer.unref();
  }

  /** Stops renewing; the job with its current token, or undefined when the lease was lost. */
  async stop(): Promise<ClaimedJob | undefined> {
    clearInterval(this.timer);
    // A renewal in flight changes the token: the write that follows must compare with the new one.
    await this.renewing;
    return this.lost.signal.aborted ? undefined : this.job;
  }

  private renew(): void {
    // A slow database must not pile renewals up: one at a time, the next tick tries again.
    if (this.renewing || this.lost.signal.aborted) return;
    this.renewing = this.repo
      .renew(this.job, this.leaseMs)
      .then((token) => {
        if (token) {
          this.job = { ...this.job, token };
          return;
        }
        clearInterval(this.timer);
        this.lost.abort();
      })
      // The database failed this once: the lease still has two thirds left for the next ticks.
      .catch(() => {})
      .finally(() => {
        this.renewing = undefined;
      });
  }
}
