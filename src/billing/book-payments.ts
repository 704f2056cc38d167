import type { ReservationRow, Settled, SettleFacts } from "../store/repositories/billing.ts";
import type { BookKeeper } from "./book-keeper.ts";
import type { Charge } from "./charge.ts";
import type { MoneyBook } from "./money-book.ts";
import type { PaymentTools } from "./payment-tools.ts";
import { Reservation } from "./reservation.ts";
import { usageRow } from "./usage-row.ts";

/**
 * How requests pay in the embedded mode, where the money book decides: a hold in memory, the room
 * free again at once when it ends, the record (with its cost) in the journaled batch.
 */
export class BookPayments {
  private readonly keeper: BookKeeper;
  private readonly tools: PaymentTools;

  constructor(keeper: BookKeeper, tools: PaymentTools) {
    this.keeper = keeper;
    this.tools = tools;
  }

  /** The book, read on first use. */
  book(): Promise<MoneyBook> {
    return this.keeper.current ? Promise.resolve(this.keeper.current) : this.keeper.book();
  }

  async reserve(charge: Charge, amount: number, now: Date): Promise<Reservation> {
    const book = await this.book();
    const hold = this.tools.holdOf(charge, amount, now, "r");
    this.tools.refuse(book.hold(hold, charge.principal.monthlyLimitMicros));
    this.tools.settlements.opened(charge.requestId);
    return new Reservation(charge.requestId, amount, {
      close: (id, facts) => this.closeBooked(book, id, charge, amount, facts),
    });
  }

  /** The 402 `reserve` would throw now, without holding anything. */
  async checkFits(charge: Charge, amount: number, now: Date): Promise<void> {
    const book = await this.book();
    const hold = this.tools.holdOf(charge, amount, now, "r");
    this.tools.refuse(book.refusal(hold, amount, charge.principal.monthlyLimitMicros));
  }

  /** A durable reservation: the book takes the hold first (it decides), then the row is written. */
  async reserveDurable(charge: Charge, amount: number, now: Date): Promise<void> {
    const book = await this.book();
    const target = this.tools.holdOf(charge, amount, now, "d");
    this.tools.refuse(book.holdAmount(target, amount, charge.principal.monthlyLimitMicros));
    try {
      await this.tools.holdInDatabase(charge, amount, now, true);
    } catch (error) {
      book.apply(target, amount, 0);
      throw error;
    }
  }

  /** Closes a reservation row; the book follows what the row held and what was spent. */
  async settleDurable(
    settle: () => Promise<Settled | undefined>,
    costMicros: number,
  ): Promise<Settled | undefined> {
    const book = await this.book();
    const settled = await settle();
    if (settled) bookClosed(book, settled.reservation, costMicros);
    return settled;
  }

  /** A cost of a request that held nothing; negative to take it back. A book being read counts it among the pending records. */
  spent(keyId: string | null, month: string, costMicros: number): void {
    this.keeper.current?.spend(keyId, month, costMicros);
  }

  sweep(nowMs: number): Promise<number> {
    return this.keeper.sweep(nowMs);
  }

  async keySpend(keyId: string, month: string): Promise<{ spentMicros: number; reservedMicros: number }> {
    return (await this.book()).keySpend(keyId, month);
  }

  /** Closes a hold of the money book: the room is free at once, the record goes in the batch. */
  private closeBooked(
    book: MoneyBook,
    requestId: string,
    charge: Charge,
    amount: number,
    facts: SettleFacts,
  ): Promise<boolean> {
    const closed = book.close(requestId, facts.costMicros);
    // Released by the sweep already (it wrote the record): nothing is left to write.
    if (!closed) return this.tools.close(requestId, charge, amount, facts, "batched", async () => {});
    const { hold, costMicros } = closed;
    const row = usageRow(requestId, hold, charge, { ...facts, costMicros });
    return this.tools.close(
      requestId,
      charge,
      amount,
      { ...facts, costMicros },
      "batched",
      () => this.tools.usage.record(row),
      // No record, so no charge: the cost goes back (the hold is not taken again).
      () => book.apply(hold, 0, -costMicros),
    );
  }
}

/** Moves a closed reservation row's hold out of the book and its cost (as the row's settlement took it) in. */
function bookClosed(book: MoneyBook, reservation: ReservationRow, costMicros: number): void {
  const cost = Math.max(0, Math.min(costMicros, reservation.amountMicros));
  book.apply(reservation, reservation.amountMicros, cost);
}
