import type { FastifyBaseLogger } from "fastify";
import { insufficientCredits, spendingLimitReached } from "../http/errors.ts";
import type { BillingMetrics } from "../metrics/billing-metrics.ts";
import type { BillingRepository, SettleFacts } from "../store/repositories/billing.ts";
import type { UsageJournal } from "../store/usage-journal.ts";
import { monthOf } from "./month.ts";
import type { Payer } from "./payer.ts";
import { type Measured, type NotBilled, Reservation } from "./reservation.ts";
import { UsageBatcher } from "./usage-batcher.ts";

/** What an endpoint says about a request before it runs. */
export interface Charge {
  requestId: string;
  principal: Payer;
  /** The endpoint as recorded in usage, e.g. `chat.completions`. */
  endpoint: string;
  model: string | null;
  /** The request's service tier, for the metrics of tokens and cost. */
  tier?: string;
  /** The most the request can cost; reserved before anything is sent to an engine. */
  maxCostMicros: number;
  /** How long the request may hold the money before a sweep gives it back (long jobs ask for more). */
  holdSeconds?: number;
}

const SETTLE_ATTEMPTS = 3;
// How long a shutdown waits for requests that hold money to settle; past it, the sweep takes over.
const DRAIN_WAIT_MS = 10_000;
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
  /** Reservations not yet settled or released. */
  private readonly open = new Set<string>();
  private readonly pending = new Set<Promise<unknown>>();
  private onAllClosed: (() => void) | undefined;
  private sweeper: NodeJS.Timeout | undefined;

  constructor(deps: {
    repo: BillingRepository;
    prepaid: boolean;
    holdSeconds: number;
    now?: () => Date;
    log?: FastifyBaseLogger;
    metrics?: BillingMetrics;
    /** Embedded mode: usage records are durable once journaled, and written to the database after. */
    journal?: UsageJournal;
  }) {
    this.repo = deps.repo;
    this.metrics = deps.metrics;
    const metrics = deps.metrics;
    const log = deps.log;
    this.usage = new UsageBatcher(deps.repo, {
      ...(deps.journal ? { journal: deps.journal } : {}),
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
    this.prepaid = deps.prepaid;
    this.holdSeconds = deps.holdSeconds;
    this.now = deps.now ?? (() => new Date());
    this.log = deps.log;
  }

  /**
   * Holds the highest possible cost, or throws the spec's 402. A key without a monthly limit on an
   * installation without prepaid credits has nothing that could be overspent: nothing is held, and
   * settling only writes the usage record (one statement instead of two transactions).
   */
  async reserve(charge: Charge): Promise<Reservation> {
    const now = this.now();
    const amount = Math.max(0, Math.ceil(charge.maxCostMicros));
    const month = monthOf(now);
    if (!this.prepaid && charge.principal.monthlyLimitMicros === null) {
      this.open.add(charge.requestId);
      return new Reservation(charge.requestId, amount, {
        close: (id, facts) =>
          this.track(id, charge, amount, facts, "batched", () =>
            this.usage.record({
              requestId: id,
              keyId: charge.principal.keyId,
              accountId: charge.principal.accountId,
              month,
              endpoint: charge.endpoint,
              model: charge.model,
              ...facts,
              // As with a reservation: never more than the highest possible cost announced.
              costMicros: Math.max(0, Math.min(facts.costMicros, amount)),
              // The real time, as the database's now() was: it orders records, the (test) clock makes months.
              createdMs: Date.now(),
            }),
          ),
      });
    }
    await this.hold(charge, amount, now);
    this.open.add(charge.requestId);
    return new Reservation(charge.requestId, amount, {
      close: (id, facts) =>
        this.track(id, charge, amount, facts, "direct", () => this.repo.settle(id, facts)),
    });
  }

  /**
   * Throws the 402 that `reserve` would throw now, without holding anything: for a request whose
   * highest cost is reserved only after a first step (a knowledge-base question is embedded before
   * its answer is asked for) and that must be refused before that step reaches a model.
   */
  async checkFits(charge: Charge): Promise<void> {
    if (!this.prepaid && charge.principal.monthlyLimitMicros === null) return;
    await this.usage.writtenFor(charge.principal.keyId);
    const refusal = await this.repo.wouldRefuse(
      {
        keyId: charge.principal.keyId,
        accountId: charge.principal.accountId,
        month: monthOf(this.now()),
        amountMicros: Math.max(0, Math.ceil(charge.maxCostMicros)),
        prepaid: this.prepaid,
      },
      charge.principal.monthlyLimitMicros,
    );
    if (refusal === "spending_limit_reached") {
      this.metrics?.refused("spending_limit");
      throw spendingLimitReached();
    }
    if (refusal === "insufficient_credits") {
      this.metrics?.refused("insufficient_credits");
      throw insufficientCredits();
    }
  }

  /**
   * Holds the highest possible cost of a job that outlives its request (a video): always as a row
   * in the database, even where nothing could be overspent, so that whichever process finishes the
   * job (after a restart, on another instance) closes it by request id with `closeDurable`.
   */
  async reserveDurable(charge: Charge): Promise<void> {
    await this.hold(charge, Math.max(0, Math.ceil(charge.maxCostMicros)), this.now());
  }

  /** Writes the reservation row in one atomic step, or throws the spec's 402 (and counts it). */
  private async hold(charge: Charge, amount: number, now: Date): Promise<void> {
    // The spend it checks includes the key's journaled records (a key whose limit was just set).
    await this.usage.writtenFor(charge.principal.keyId);
    const refusal = await this.repo.reserve(
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
    );
    if (refusal === "spending_limit_reached") {
      this.metrics?.refused("spending_limit");
      throw spendingLimitReached();
    }
    if (refusal === "insufficient_credits") {
      this.metrics?.refused("insufficient_credits");
      throw insufficientCredits();
    }
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
    const settling = this.settleWithRetry(requestId, facts);
    const tracked = settling.then(
      () => undefined,
      () => undefined,
    );
    this.pending.add(tracked);
    try {
      const record = await settling;
      if (record) this.metrics?.settled(about.model, about.tier, facts.units, Number(record.costMicros));
      return record !== undefined;
    } finally {
      this.pending.delete(tracked);
    }
  }

  // As withRetry, but the last failure is thrown: the job's next run closes it then.
  private async settleWithRetry(requestId: string, facts: SettleFacts) {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.repo.settle(requestId, facts);
      } catch (error) {
        if (attempt >= SETTLE_ATTEMPTS) throw error;
        await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
      }
    }
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
   * Waits until every open reservation is settled or released and written (graceful shutdown).
   * A response's `close` event comes a tick after its connection closed, so even once the server
   * has closed, a cut stream may still be about to settle: it is waited for, not assumed done.
   */
  async drain(): Promise<void> {
    if (this.open.size > 0) {
      const allClosed = new Promise<void>((resolve) => {
        this.onAllClosed = resolve;
      });
      const timeout = new Promise<void>((resolve) => setTimeout(resolve, DRAIN_WAIT_MS).unref());
      await Promise.race([allClosed, timeout]);
      if (this.open.size > 0) {
        this.log?.warn(
          { open: this.open.size },
          "requests still hold money at shutdown; the sweep will release it",
        );
      }
    }
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
    await this.usage.flush(DRAIN_WAIT_MS);
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
        const facts = {
          costMicros: 0,
          units: {},
          outcome: "expired",
          zone: null,
          machine: null,
          durationMs: null,
        };
        if (await this.repo.settle(requestId, facts)) released += 1;
      }
      if (released > 0) this.log?.warn({ released }, "released reservations whose requests never finished");
    } catch (error) {
      this.log?.error({ err: error }, "reservation sweep failed");
    }
    return released;
  }

  /**
   * Runs the write that closes a request's money, tracked for a graceful shutdown; once written
   * (durable), its tokens and cost (never more than was reserved) go to the metrics, and its write
   * lag too when written `direct`ly (the group commit measures its own records: in the database,
   * which with a journal is later than durable). Resolves whether it was written.
   */
  private track(
    requestId: string,
    charge: Charge,
    amount: number,
    facts: SettleFacts,
    path: "direct" | "batched",
    write: () => Promise<unknown>,
  ): Promise<boolean> {
    const madeAt = performance.now();
    const metrics = this.metrics;
    const done = this.withRetry(requestId, write)
      .then((written) => {
        if (written && metrics) {
          metrics.settled(charge.model, charge.tier ?? "", facts.units, Math.min(facts.costMicros, amount));
          if (path === "direct") metrics.written((performance.now() - madeAt) / 1000);
        }
        return written;
      })
      .finally(() => this.pending.delete(done));
    this.pending.add(done);
    this.open.delete(requestId);
    if (this.open.size === 0) this.onAllClosed?.();
    return done;
  }

  // A transient database failure must not leave money held; if every attempt fails, the sweep
  // gives the reservation back later (the request is then not charged). Resolves whether it wrote.
  private async withRetry(requestId: string, write: () => Promise<unknown>): Promise<boolean> {
    for (let attempt = 1; ; attempt++) {
      try {
        await write();
        return true;
      } catch (error) {
        if (attempt >= SETTLE_ATTEMPTS) {
          this.log?.error({ err: error, request_id: requestId }, "could not settle a reservation");
          return false;
        }
        await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
      }
    }
  }
}
