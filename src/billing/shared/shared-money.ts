import { randomBytes } from "node:crypto";
import type { FastifyBaseLogger } from "fastify";
import type { Redis } from "ioredis";
import { ApiError, serviceUnavailable } from "../../errors/catalogue.ts";
import type { DeferredTakes, PendingTake } from "../../limits/deferred-takes.ts";
import { countedFrom, pushInlineTakeArgs } from "../../limits/redis-take-script.ts";
import type { BillingRepository, ReserveRefusal } from "../../store/repositories/billing.ts";
import type { RecordedTotals, WrittenRecord } from "../../store/repositories/usage-writes.ts";
import { AwayFromRedis, RedisAway } from "./away-from-redis.ts";
import { CloseBatch } from "./close-batch.ts";
import { CopyLoader, type CopyOf } from "./copy-loader.ts";
import { EpochFollower, MONEY_TTL_SECONDS } from "./epoch-follower.ts";
import { defineMoneyCommands } from "./money-commands.ts";
import { holdText, keyMonthOf, parseHold, type SharedHold } from "./shared-hold.ts";

/** Each decision makes at most this many round trips (loads, a new epoch) before it is a 503. */
const MAX_STEPS = 8;
// A swept hold is leased to its sweeper this long; one that died leaves it to the next.
const SWEEP_LEASE_MS = 60_000;
// Holds looked at per step of the sweep's scan.
const SWEEP_BATCH = 200;
const TTL_TEXT = String(MONEY_TTL_SECONDS);

/**
 * The distributed mode's authority for what is left: each key's month spend, each account's
 * credits and the holds of requests in flight live in Redis, beside the rate-limit counters, and
 * one script call decides a reservation. PostgreSQL stays the record: a settlement is written there
 * first (the answer waits for it), then its totals close the hold here, batched per tick.
 *
 * What Redis loses is rebuilt, never guessed: a copy is loaded from PostgreSQL when first needed,
 * and when the epoch is gone (a flush, a restart) nothing is admitted until a new one is ready,
 * after every instance has put back the holds it has in flight (`EpochFollower`).
 */
export class SharedMoney {
  private readonly redis: Redis;
  private readonly prefix: string;
  private readonly repo: BillingRepository;
  private readonly log: FastifyBaseLogger | undefined;
  private readonly epochs: EpochFollower;
  /** Holds this instance placed and has not closed: what it puts back into a rebuilt epoch. */
  private readonly open = new Map<string, SharedHold>();
  private readonly closes: CloseBatch;
  private readonly copies: CopyLoader;
  private readonly away: AwayFromRedis;
  /** Key limits that wait for a request's hold, and where their counters live in Redis. */
  private readonly takes: { deferred: DeferredTakes; prefix: string } | undefined;

  /** `firstEver`: whether an epoch is the installation's first (see `EpochFollower`). */
  constructor(deps: {
    redis: Redis;
    prefix: string;
    repo: BillingRepository;
    firstEver: (epoch: string) => Promise<boolean>;
    log?: FastifyBaseLogger;
    takes?: { deferred: DeferredTakes; prefix: string };
  }) {
    this.redis = deps.redis;
    this.takes = deps.takes;
    this.prefix = deps.prefix;
    this.repo = deps.repo;
    this.log = deps.log;
    defineMoneyCommands(this.redis);
    this.copies = new CopyLoader(this.redis, this.prefix, this.repo);
    this.closes = new CloseBatch({
      redis: this.redis,
      prefix: this.prefix,
      skip: () => this.away.active,
      ...(deps.log ? { log: deps.log } : {}),
    });
    this.away = new AwayFromRedis({
      repo: this.repo,
      open: this.open,
      ...(deps.log ? { log: deps.log } : {}),
    });
    this.epochs = new EpochFollower({
      redis: this.redis,
      prefix: this.prefix,
      holds: () => [...this.open.values()],
      newEpoch: () => randomBytes(6).toString("hex"),
      firstEver: deps.firstEver,
      reachable: (ok) => {
        if (ok && this.away.end()) void this.epochs.distrust().catch(() => {});
        if (!ok) {
          this.epochs.changed();
          void this.away.begin();
        }
      },
      ...(deps.log ? { log: deps.log } : {}),
    });
  }

  /** Starts following the epoch (a flush is noticed even by an instance that only holds). */
  start(): void {
    this.epochs.start();
  }

  async stop(): Promise<void> {
    this.epochs.stop();
    await this.closes.flush();
    try {
      if (this.redis.status === "ready") await this.redis.quit();
    } catch {
      // Closing anyway.
    } finally {
      this.redis.disconnect();
    }
  }

  /**
   * Holds the amount, or says why it does not fit; `dry` only checks. Throws the 503
   * `service_unavailable` when Redis cannot decide (unreachable, or a rebuild that does not end).
   * The request's key limits, when they wait for it, are taken in the same call (or on their own
   * when Redis does not decide it), so their 429 comes first.
   */
  async hold(
    hold: SharedHold,
    monthlyLimitMicros: number | null,
    dry = false,
  ): Promise<ReserveRefusal | undefined> {
    const take = this.takes?.deferred.claim(hold.requestId);
    try {
      return await this.onRedis(() => this.decide(hold, monthlyLimitMicros, dry, take));
    } catch (error) {
      if (take && !take.done) await this.takes?.deferred.takeNow(take);
      throw error;
    }
  }

  /**
   * Runs a step on Redis; while Redis is away (or when the step cannot reach it), throws `RedisAway`
   * once PostgreSQL may decide instead.
   */
  private async onRedis<T>(step: () => Promise<T>): Promise<T> {
    if (this.away.active || this.redis.status !== "ready") return this.decideElsewhere();
    try {
      return await step();
    } catch (error) {
      if (error instanceof ApiError) throw error;
      return this.decideElsewhere();
    }
  }

  /** Whether a hold was written to PostgreSQL while Redis was away (it then closes there); once. */
  wasCarried(requestId: string): boolean {
    return this.away.wasCarried(requestId);
  }

  private async decideElsewhere(): Promise<never> {
    this.epochs.changed();
    await this.away.begin();
    throw new RedisAway();
  }

  private async decide(
    hold: SharedHold,
    monthlyLimitMicros: number | null,
    dry: boolean,
    take: PendingTake | undefined,
  ): Promise<ReserveRefusal | undefined> {
    const text = holdText(hold);
    const limit = String(monthlyLimitMicros ?? -1);
    for (let step = 0; step < MAX_STEPS; step++) {
      const epoch = this.epochs.known ?? (await this.epochs.current());
      const now = this.takes && take ? this.takes.deferred.now().getTime() : 0;
      const args = [this.prefix, epoch, hold.requestId, text, limit, TTL_TEXT, dry ? "1" : "0"];
      if (this.takes && take) pushInlineTakeArgs(args, take.counters, now, this.takes.prefix);
      this.epochs.deciding();
      let reply: string[];
      try {
        reply = await this.redis.zonaMoneyHold(0, args.join("\n"));
      } finally {
        this.epochs.decided();
      }
      if (reply[0] === "limited") {
        take?.apply({ allowed: false, refused: Number(reply[1]), resetAt: Number(reply[2]) }, now);
      }
      if (reply[0] === "ok") {
        if (!dry) this.open.set(hold.requestId, hold);
        take?.apply(countedFrom(reply, 1), now);
        return undefined;
      }
      if (reply[0] === "refused") {
        take?.apply(countedFrom(reply, 2), now);
        return reply[1] as ReserveRefusal;
      }
      if (reply[0] === "load") await this.load(epoch, reply[1] === "k" ? "k" : "a", hold);
      else this.epochs.changed();
    }
    throw serviceUnavailable();
  }

  /** Gives a hold back: nothing was recorded of it. Sent with this tick's other closes. */
  close(requestId: string): void {
    this.open.delete(requestId);
    this.closes.hold(requestId);
  }

  /** Ends a hold with what its record's write left: the cost reaches each copy once. */
  closeWritten(requestId: string, record: WrittenRecord): void {
    this.open.delete(requestId);
    this.closes.hold(requestId, record);
  }

  /** A record that held nothing: its cost reaches the copies of its key month and account. */
  closeUnheld(of: Pick<SharedHold, "keyId" | "month" | "accountId">, record: WrittenRecord): void {
    this.closes.unheld(keyMonthOf(of), of.accountId, record);
  }

  /**
   * Ends a hold (when given) whose write is not known exactly (a retried write, an expired hold, a
   * reservation row closed in PostgreSQL, a change of credits that failed): the copies of the totals
   * are loaded again from PostgreSQL at their next decision, these totals (read after the write)
   * their floor.
   */
  closeAgain(requestId: string | null, totals: RecordedTotals): void {
    this.closeWithTotals(requestId, totals, true);
  }

  /**
   * Ends an operator's change of credits, sent at once, with what PostgreSQL committed (what the
   * account is credited; its spend unchanged): the copy stays loaded. Resolves when Redis has taken
   * it (a read after it sees it).
   */
  closeChangeNow(changeId: string, totals: RecordedTotals): Promise<void> {
    this.closeWithTotals(changeId, totals, false);
    return this.closes.flush();
  }

  /** As `closeAgain`, sent at once; resolves when Redis has taken it (a read after it sees it). */
  closeAgainNow(requestId: string | null, totals: RecordedTotals): Promise<void> {
    this.closeAgain(requestId, totals);
    return this.closes.flush();
  }

  private closeWithTotals(requestId: string | null, totals: RecordedTotals, again: boolean): void {
    if (requestId !== null) {
      this.open.delete(requestId);
      this.closes.hold(requestId);
    }
    this.closes.totals(totals, again);
  }

  /** A durable hold whose row is now in PostgreSQL: a rebuild finds it there, not in this process. */
  written(requestId: string): void {
    this.open.delete(requestId);
  }

  /** A key month's spent and reserved, or an account's balance and held, as Redis decides on them. */
  read(of: CopyOf): Promise<[number, number]> {
    return this.onRedis(() => this.readOnRedis(of));
  }

  private async readOnRedis(of: CopyOf): Promise<[number, number]> {
    const kind = "keyId" in of ? "k" : "a";
    const id = "keyId" in of ? keyMonthOf(of) : of.accountId;
    for (let step = 0; step < MAX_STEPS; step++) {
      const epoch = await this.epochs.current();
      const reply = await this.redis.zonaMoneyRead(0, this.prefix, epoch, kind, id);
      if (reply[0] === "ok") return [Number(reply[1]), Number(reply[2])];
      if (reply[0] === "load") await this.loadOne(epoch, kind, of);
      else this.epochs.changed();
    }
    throw serviceUnavailable();
  }

  /**
   * An operator's change of credits, while PostgreSQL holds the balance's row: false when the new
   * balance would be below what is held. A decrease is held until `close(changeId, totals)`.
   */
  change(accountId: string, amountMicros: number, balanceAfter: number, changeId: string): Promise<boolean> {
    return this.onRedis(() => this.changeOnRedis(accountId, amountMicros, balanceAfter, changeId));
  }

  private async changeOnRedis(
    accountId: string,
    amountMicros: number,
    balanceAfter: number,
    changeId: string,
  ): Promise<boolean> {
    const hold: SharedHold = {
      requestId: changeId,
      keyId: null,
      month: "",
      accountId,
      prepaid: true,
      amountMicros: Math.max(0, -amountMicros),
      kind: "c",
      endpoint: "credits",
      model: null,
      expiresAt: Date.now() + SWEEP_LEASE_MS,
    };
    for (let step = 0; step < MAX_STEPS; step++) {
      const epoch = await this.epochs.current();
      const reply = await this.epochs.tracked(() =>
        this.redis.zonaMoneyChange(
          0,
          this.prefix,
          epoch,
          accountId,
          String(balanceAfter),
          changeId,
          holdText(hold),
          String(MONEY_TTL_SECONDS),
          String(hold.amountMicros),
        ),
      );
      if (reply[0] === "ok") {
        if (hold.amountMicros > 0) this.open.set(changeId, hold);
        return true;
      }
      if (reply[0] === "refused") return false;
      if (reply[0] === "load") await this.loadOne(epoch, "a", { accountId });
      else this.epochs.changed();
    }
    throw serviceUnavailable();
  }

  /**
   * Hands each hold past its expiry to `settle` (which writes what it leaves in PostgreSQL and says
   * the totals), then closes it, its copies to be loaded again with them; how many.
   */
  async sweep(nowMs: number, settle: (hold: SharedHold) => Promise<RecordedTotals>): Promise<number> {
    let swept = 0;
    let cursor = "0";
    do {
      // While Redis is away its copy is rebuilt at its return: nothing in it to sweep.
      if (this.away.active || this.redis.status !== "ready") return swept;
      const reply = await this.redis.zonaMoneySweep(
        0,
        this.prefix,
        String(nowMs),
        String(SWEEP_LEASE_MS),
        String(SWEEP_BATCH),
        cursor,
      );
      cursor = reply[0] ?? "0";
      for (let i = 1; i + 1 < reply.length; i += 2) {
        const hold = parseHold(reply[i] as string, reply[i + 1] as string);
        if (!hold) continue;
        this.closeAgain(hold.requestId, await settle(hold));
        swept += 1;
      }
    } while (cursor !== "0");
    return swept;
  }

  /** What PostgreSQL holds of a hold's key month and account, as totals to close it with. */
  totalsOf(hold: Pick<SharedHold, "keyId" | "month" | "accountId" | "prepaid">): Promise<RecordedTotals> {
    return this.copies.totalsOf(hold);
  }

  private async load(epoch: string, kind: "k" | "a", hold: SharedHold): Promise<void> {
    if (kind === "k" && hold.keyId !== null)
      await this.loadOne(epoch, "k", { keyId: hold.keyId, month: hold.month });
    else await this.loadOne(epoch, "a", { accountId: hold.accountId });
  }

  private async loadOne(epoch: string, kind: "k" | "a", of: CopyOf): Promise<void> {
    if (!(await this.copies.load(epoch, kind, of))) this.epochs.changed();
  }
}
