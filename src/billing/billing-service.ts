import type { FastifyBaseLogger } from "fastify";
import { insufficientCredits, spendingLimitReached } from "../errors/catalogue.ts";
import type { BillingMetrics } from "../metrics/billing-metrics.ts";
import type { BillingRepository, ReserveRefusal, SettleFacts } from "../store/repositories/billing.ts";
import type { UsageJournal } from "../store/usage-journal.ts";
import { BookKeeper } from "./book-keeper.ts";
import { BookPayments } from "./book-payments.ts";
import type { Charge } from "./charge.ts";
import type { MoneyBook } from "./money-book.ts";
import { monthOf } from "./month.ts";
import type { Payer } from "./payer.ts";
import type { PaymentTools } from "./payment-tools.ts";
import { type Measured, type NotBilled, Reservation } from "./reservation.ts";
import { FLUSH_WAIT_MS, Settlements, type Write } from "./settlements.ts";
import type { SharedHold } from "./shared/shared-hold.ts";
import type { SharedMoney } from "./shared/shared-money.ts";
import { SharedPayments } from "./shared/shared-payments.ts";
import { UsageBatcher } from "./usage-batcher.ts";
import { EXPIRED_FACTS, usageRow } from "./usage-row.ts";

const SWEEP_EVERY_MS = 60_000;

/**
 * The one way endpoints pay: reserve the highest possible cost (402 when it does not fit), run,
 * then settle to the real cost or release. Settlements in flight are tracked so that a graceful
 * shutdown waits for them; reservations whose process died are given back by a periodic sweep.
 */
export class BillingService {
  private readonly repo: BillingRepository;
  private readonly usage: UsageBatcher;
  private readonly prepaid: boolean;
  private readonly holdSeconds: number;
  private readonly now: () => Date;
  private readonly log: FastifyBaseLogger | undefined;
  private readonly metrics: BillingMetrics | undefined;
  private readonly settlements: Settlements;
  private sweeper: NodeJS.Timeout | undefined;
  /**
   * Embedded mode (a usage journal: one process owns the data): the money book is the authority for
   * what is left, read once from the database and changed in memory; without a journal, every
   * reservation is a database transaction.
   */
  private readonly bookPay: BookPayments | undefined;
  /** Distributed mode with Redis: Redis is the authority for what is left, PostgreSQL the record. */
  private readonly shared: SharedMoney | undefined;
  private readonly sharedPay: SharedPayments | undefined;

  constructor(deps: {
    repo: BillingRepository;
    prepaid: boolean;
    holdSeconds: number;
    now?: () => Date;
    log?: FastifyBaseLogger;
    metrics?: BillingMetrics;
    /** Embedded mode: usage records are durable once journaled, and written to the database after. */
    journal?: UsageJournal;
    /** Several instances on PostgreSQL and Redis (ignored with a journal: one process owns the data). */
    shared?: SharedMoney;
  }) {
    this.shared = deps.journal ? undefined : deps.shared;
    this.repo = deps.repo;
    this.settlements = new Settlements(deps.log);
    this.metrics = deps.metrics;
    const metrics = deps.metrics;
    const log = deps.log;
    this.usage = new UsageBatcher(deps.repo, {
      ...(deps.journal ? { journal: deps.journal } : {}),
      ...(this.shared ? { totals: true } : {}),
      ...(metrics
        ? {
            onBatch: (size: number) => metrics.batch(size),
            onWritten: (lagSeconds: number) => metrics.written(lagSeconds),
          }
        : {}),
      onWriteFailed: (error) =>
        log?.error(
          { err: error },
          "could not write journaled usage records; they stay journaled and are retried",
        ),
    });
    const tools: PaymentTools = {
      usage: this.usage,
      repo: deps.repo,
      settlements: this.settlements,
      close: (...args) => this.close(...args),
      holdInDatabase: (charge, amount, now, unchecked) => this.hold(charge, amount, now, unchecked),
      refuse: (refusal) => this.refuse(refusal),
      decidedInDatabase: () => this.metrics?.decidedInDatabase(),
      holdOf: (charge, amount, now, kind) => this.holdOf(charge, amount, now, kind),
    };
    this.bookPay = deps.journal ? new BookPayments(new BookKeeper(this.usage, deps.repo), tools) : undefined;
    this.sharedPay = this.shared ? new SharedPayments(this.shared, tools) : undefined;
    this.prepaid = deps.prepaid;
    this.holdSeconds = deps.holdSeconds;
    this.now = deps.now ?? (() => new Date());
    this.log = deps.log;
  }

  /** Whether requests of this payer hold money (a key's monthly limit, or prepaid credits). */
  holdsMoney(payer: Pick<Payer, "monthlyLimitMicros">): boolean {
    return this.prepaid || payer.monthlyLimitMicros !== null;
  }

  /**
   * Holds the highest possible cost, or throws 402. A key without a monthly limit on an
   * installation without prepaid credits has nothing that could be overspent: nothing is held, and
   * settling only writes the usage record. Embedded, the hold is taken in the money book and settling
   * writes the usage record in the same batch as those (the journal makes it durable at once);
   * otherwise it is a reservation row, settled by a transaction.
   */
  async reserve(charge: Charge): Promise<Reservation> {
    const now = this.now();
    const amount = Math.max(0, Math.ceil(charge.maxCostMicros));
    const month = monthOf(now);
    if (!this.holdsMoney(charge.principal)) {
      this.settlements.opened(charge.requestId);
      return new Reservation(charge.requestId, amount, {
        close: (id, facts) => this.closeUnheld(id, charge, amount, month, facts),
      });
    }
    if (this.sharedPay) return this.sharedPay.reserve(charge, amount, now);
    if (this.bookPay) return this.bookPay.reserve(charge, amount, now);
    await this.hold(charge, amount, now);
    this.settlements.opened(charge.requestId);
    return new Reservation(charge.requestId, amount, {
      close: (id, facts) =>
        this.close(id, charge, amount, facts, "direct", () => this.repo.settle(id, facts)),
    });
  }

  /** Closes a request that held nothing: its usage record in the batch, its cost in the book. */
  private closeUnheld(
    requestId: string,
    charge: Charge,
    amount: number,
    month: string,
    facts: SettleFacts,
  ): Promise<boolean> {
    // As with a reservation: never more than the highest possible cost announced.
    const cost = Math.max(0, Math.min(facts.costMicros, amount));
    const keyId = charge.principal.keyId;
    this.bookPay?.spent(keyId, month, cost);
    const row = usageRow(requestId, { ...charge.principal, month }, charge, { ...facts, costMicros: cost });
    return this.close(
      requestId,
      charge,
      amount,
      facts,
      "batched",
      async (attempt) => {
        const written = await this.usage.record(row);
        await this.sharedPay?.recorded(row, written, attempt);
      },
      () => this.bookPay?.spent(keyId, month, -cost),
    );
  }

  /**
   * Throws the 402 that `reserve` would throw now, without holding anything: for a request whose
   * highest cost is reserved only after a first step (a knowledge-base question is embedded before
   * its answer is asked for) and that must be refused before that step reaches a model.
   */
  async checkFits(charge: Charge): Promise<void> {
    if (!this.holdsMoney(charge.principal)) return;
    const amount = Math.max(0, Math.ceil(charge.maxCostMicros));
    const month = monthOf(this.now());
    if (this.bookPay) return this.bookPay.checkFits(charge, amount, this.now());
    if (this.sharedPay)
      return this.sharedPay.checkFits(charge, amount, this.now(), () =>
        this.fitsInDatabase(charge, amount, month),
      );
    await this.fitsInDatabase(charge, amount, month);
  }

  private async fitsInDatabase(charge: Charge, amount: number, month: string): Promise<void> {
    await this.usage.writtenFor(charge.principal.keyId);
    this.refuse(
      await this.repo.wouldRefuse(
        {
          keyId: charge.principal.keyId,
          accountId: charge.principal.accountId,
          month,
          amountMicros: amount,
          prepaid: this.prepaid,
        },
        charge.principal.monthlyLimitMicros,
      ),
    );
  }

  /**
   * Holds the highest possible cost of a job that outlives its request (a video): always as a row
   * in the database, even where nothing could be overspent, so that whichever process finishes the
   * job (after a restart, on another instance) closes it by request id with `closeDurable`.
   * Embedded, the book takes the hold first (it decides), then the row is written.
   */
  async reserveDurable(charge: Charge): Promise<void> {
    const now = this.now();
    const amount = Math.max(0, Math.ceil(charge.maxCostMicros));
    if (this.sharedPay) return this.sharedPay.reserveDurable(charge, amount, now);
    if (this.bookPay) return this.bookPay.reserveDurable(charge, amount, now);
    await this.hold(charge, amount, now);
  }

  /**
   * Writes the reservation row in one atomic step, or throws 402 (and counts it);
   * `unchecked` where Redis decided already.
   */
  private async hold(charge: Charge, amount: number, now: Date, unchecked = false): Promise<void> {
    // The spend it checks includes the key's journaled records (a key whose limit was just set).
    await this.usage.writtenFor(charge.principal.keyId);
    this.refuse(
      await this.repo.reserve(
        {
          requestId: charge.requestId,
          keyId: charge.principal.keyId,
          accountId: charge.principal.accountId,
          month: monthOf(now),
          amountMicros: amount,
          prepaid: this.prepaid,
          endpoint: charge.endpoint,
          model: charge.model,
          expiresAt: new Date(now.getTime() + (charge.holdSeconds ?? this.holdSeconds) * 1000),
        },
        charge.principal.monthlyLimitMicros,
        { unchecked },
      ),
    );
  }

  /** Throws 402 (`spending_limit_reached` or `insufficient_credits`) for a refusal (and counts it). */
  private refuse(refusal: ReserveRefusal | undefined): void {
    if (refusal === "spending_limit_reached") {
      this.metrics?.refused("spending_limit");
      throw spendingLimitReached();
    }
    if (refusal === "insufficient_credits") {
      this.metrics?.refused("insufficient_credits");
      throw insufficientCredits();
    }
  }

  private holdOf(charge: Charge, amount: number, now: Date, kind: "r" | "d"): SharedHold {
    return {
      requestId: charge.requestId,
      keyId: charge.principal.keyId,
      accountId: charge.principal.accountId,
      month: monthOf(now),
      prepaid: this.prepaid,
      amountMicros: amount,
      kind,
      endpoint: charge.endpoint,
      model: charge.model,
      expiresAt: now.getTime() + (charge.holdSeconds ?? this.holdSeconds) * 1000,
    };
  }

  /**
   * Settles (a cost) or releases (cost 0) a durable reservation, from any process. Closing one that
   * is closed already changes nothing and resolves false: a job finished twice is charged once.
   */
  async closeDurable(
    requestId: string,
    facts: SettleFacts,
    about: { model: string | null; tier: string },
  ): Promise<boolean> {
    const record = (await this.settleDurable(requestId, facts))?.record;
    if (record) this.metrics?.settled(about.model, about.tier, facts.units, Number(record.costMicros));
    return record !== undefined;
  }

  /** Closes a reservation row; embedded, the book follows what the row held and what was spent. */
  private async settleDurable(requestId: string, facts: SettleFacts) {
    const settle = () => this.settlements.retried(() => this.repo.settle(requestId, facts));
    if (this.bookPay) return this.bookPay.settleDurable(settle, facts.costMicros);
    const settled = await settle();
    this.sharedPay?.settled(requestId, settled);
    return settled;
  }

  /** Reserve, run, then settle with what `run` measured; a failure releases everything and is rethrown. */
  async charge<T>(
    charge: Charge,
    run: (reservation: Reservation) => Promise<{ result: T; measured: Measured }>,
    onFailure: NotBilled = { outcome: "failed" },
  ): Promise<T> {
    const reservation = await this.reserve(charge);
    let outcome: { result: T; measured: Measured };
    try {
      outcome = await run(reservation);
    } catch (error) {
      await reservation.release(onFailure);
      throw error;
    }
    await reservation.settle(outcome.measured);
    return outcome.result;
  }

  /**
   * Waits until every open reservation is settled or released and written, and every usage record
   * is in the database (graceful shutdown).
   */
  async drain(): Promise<void> {
    await this.settlements.drain();
    await this.usage.flush(FLUSH_WAIT_MS);
  }

  /**
   * Resolves when every usage record of an answer that has ended is in the database: what a reader
   * of usage or spend waits for, so that it sees its own requests (the journal's records are written
   * a moment after their answers).
   */
  usageWritten(): Promise<void> {
    return this.usage.written();
  }

  /** Starts giving back reservations left by processes that died. */
  startSweeper(): void {
    if (this.sweeper) return;
    void this.sweep();
    this.sweeper = setInterval(() => void this.sweep(), SWEEP_EVERY_MS);
    this.sweeper.unref();
  }

  stopSweeper(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  /** Releases expired reservations; returns how many. Safe on many instances at once. */
  async sweep(): Promise<number> {
    let released = 0;
    try {
      for (const requestId of await this.repo.expired(this.now(), 500)) {
        if (await this.settleDurable(requestId, { ...EXPIRED_FACTS })) released += 1;
      }
      released += (await this.bookPay?.sweep(this.now().getTime())) ?? 0;
      released += (await this.sharedPay?.sweep(this.now().getTime())) ?? 0;
      if (released > 0) this.log?.warn({ released }, "released reservations whose requests never finished");
    } catch (error) {
      this.log?.error({ err: error }, "reservation sweep failed");
    }
    return released;
  }

  /** Redis's money (distributed mode with Redis); operators' changes of credits go through it. */
  sharedMoney(): SharedMoney | undefined {
    return this.shared;
  }

  /** A key's month spend and what requests in flight hold of it, where memory or Redis decides. */
  async keySpend(
    keyId: string,
    month: string,
  ): Promise<{ spentMicros: number; reservedMicros: number } | undefined> {
    return (this.bookPay ?? this.sharedPay)?.keySpend(keyId, month);
  }

  /**
   * The money book (embedded mode), read from the database on first use; undefined where the
   * database holds the money. Operators' changes of credits go through it.
   */
  moneyBook(): Promise<MoneyBook> | undefined {
    return this.bookPay?.book();
  }

  /**
   * Runs the write that closes a request's money (tracked for a graceful shutdown, retried); once
   * written (durable), its tokens and cost (never more than was reserved) go to the metrics, and its
   * write lag too when written `direct`ly (the group commit measures its own records: in the
   * database, which with a journal is later than durable). Resolves whether it was written.
   */
  private close(
    requestId: string,
    charge: Charge,
    amount: number,
    facts: SettleFacts,
    path: "direct" | "batched",
    write: Write<unknown>,
    undo?: () => void,
  ): Promise<boolean> {
    const madeAt = performance.now();
    const metrics = this.metrics;
    return this.settlements.close(requestId, write, undo).then((written) => {
      if (written && metrics) {
        metrics.settled(charge.model, charge.tier ?? "", facts.units, Math.min(facts.costMicros, amount));
        if (path === "direct") metrics.written((performance.now() - madeAt) / 1000);
      }
      return written;
    });
  }
}
