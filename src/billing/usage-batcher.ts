import type { BillingRepository } from "../store/repositories/billing.ts";

type Row = Parameters<BillingRepository["record"]>[0][number];

const MAX_BATCH = 500;

/**
 * Group commit for usage records: records that arrive while a write is running go together in the
 * next one, so under load one statement carries many records, and an idle server writes each at
 * once (no timer, no added delay). Every caller's promise settles when its own record is written.
 */
export class UsageBatcher {
  private readonly repo: BillingRepository;
  private queue: Array<{ row: Row; resolve: () => void; reject: (error: unknown) => void }> = [];
  private writing = false;

  constructor(repo: BillingRepository) {
    this.repo = repo;
  }

  record(row: Row): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ row, resolve, reject });
      if (!this.writing) void this.writeAll();
    });
  }

  private async writeAll(): Promise<void> {
    this.writing = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, MAX_BATCH);
        try {
          await this.repo.record(batch.map((entry) => entry.row));
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
