import type { BillingRepository } from "../store/repositories/billing.ts";
import { MoneyBook } from "./money-book.ts";
import type { UsageBatcher } from "./usage-batcher.ts";
import { EXPIRED_FACTS, usageRow } from "./usage-row.ts";

/**
 * Keeps the embedded mode's money book: reads it on first use, then hands out the same book, and
 * sweeps its holds whose requests never ended.
 */
export class BookKeeper {
  /** The book once read; until then, the usage records made count among the pending ones it reads. */
  current: MoneyBook | undefined;
  private reading: Promise<MoneyBook> | undefined;
  private readonly usage: UsageBatcher;
  private readonly repo: BillingRepository;

  constructor(usage: UsageBatcher, repo: BillingRepository) {
    this.usage = usage;
    this.repo = repo;
  }

  /**
   * The book: what the database holds, plus the records made and not yet written, read as one while
   * no batch is written; from the same tick on, every change passes through the book.
   */
  book(): Promise<MoneyBook> {
    if (this.current) return Promise.resolve(this.current);
    this.reading ??= this.usage
      .readBeside(
        () => this.repo.moneySnapshot(),
        (snapshot, pending) => {
          this.current = MoneyBook.read(snapshot, pending);
        },
      )
      .then(
        () => this.current as MoneyBook,
        (error: unknown) => {
          this.reading = undefined;
          throw error;
        },
      );
    return this.reading;
  }

  /** Releases the holds past their expiry, each with its usage record at no cost; how many. */
  async sweep(nowMs: number): Promise<number> {
    const book = this.current;
    if (!book) return 0;
    const writes: Array<Promise<unknown>> = [];
    for (const requestId of book.expired(nowMs)) {
      const closed = book.close(requestId, 0);
      if (closed)
        writes.push(this.usage.record(usageRow(requestId, closed.hold, closed.hold, { ...EXPIRED_FACTS })));
    }
    await Promise.all(writes);
    return writes.length;
  }
}
