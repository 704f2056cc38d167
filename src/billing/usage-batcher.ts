import type { BillingRepository } from "../store/repositories/billing.ts";

type Row = Parameters<BillingRepository["record"]>[0][number];

const MAX_BATCH = 500;

/**
 * Group commit for usage records. An answer ends only once its record is written (a crash must
 * not lose a completed answer's record), so nothing waits on a timer: a write starts as soon as
 * the current round of I/O has queued its records, and those that arrive while it runs go in the
 * next statement. Under load that makes batches by itself; alone, a request pays one insert.
 * Every caller's promise settles when its own record is written.
 */
export class UsageBatcher {
  private readonly repo: BillingRepository;
  private queue: Array<{ row: Row; resolve: () => void; reject: (error: unknown) => void }> = [];
  private writing = false;
  private scheduled = false;
  private readonly onBatch: ((size: number) => void) | undefined;

  /** `onBatch` hears the size of every batch written (the batch-size metric). */
  constructor(repo: BillingRepository, onBatch?: (size: number) => void) {
    this.repo = repo;
    this.onBatch = onBatch;
  }

  record(row: Row): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ row, resolve, reject });
      if (this.writing || this.scheduled) return;
      this.scheduled = true;
      // setImmediate, not a microtask: records of answers finishing in this same round of I/O join.
      setImmediate(() => {
        this.scheduled = false;
        void this.writeAll();
      });
    });
  }

  private async writeAll(): Promise<void> {
    if (this.writing) return;
    this.writing = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, MAX_BATCH);
        try {
          await this.repo.record(batch.map((entry) => entry.row));
          this.onBatch?.(batch.length);
          for (const entry of batch) entry.resolve();
        } catch (error) {
          for (const entry of batch) entry.reject(error);
        }
      }
    } finally {
      this.writing = false;
    }
  }
}
