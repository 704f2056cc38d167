import type { BillingRepository } from "../store/repositories/billing.ts";

type Row = Parameters<BillingRepository["record"]>[0][number];

const MAX_BATCH = 500;
// Requests do not wait for their record (it is written after the answer), so gathering records
// for a few milliseconds costs no latency and turns a statement per request into one per batch.
const GATHER_MS = 10;

/**
 * Group commit for usage records: records gathered for a few milliseconds, and those that arrive
 * while a write is running, go in one statement. Every caller's promise settles when its own record
 * is written; a graceful shutdown waits for those promises.
 */
export class UsageBatcher {
  private readonly repo: BillingRepository;
  private queue: Array<{ row: Row; resolve: () => void; reject: (error: unknown) => void }> = [];
  private writing = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly onBatch: ((size: number) => void) | undefined;

  /** `onBatch` hears the size of every batch written (the batch-size metric). */
  constructor(repo: BillingRepository, onBatch?: (size: number) => void) {
    this.repo = repo;
    this.onBatch = onBatch;
  }

  record(row: Row): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ row, resolve, reject });
      if (this.writing) return;
      if (this.queue.length >= MAX_BATCH) void this.writeAll();
      else this.timer ??= setTimeout(() => void this.writeAll(), GATHER_MS);
    });
  }

  private async writeAll(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
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
