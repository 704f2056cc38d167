import { randomBytes } from "node:crypto";
import type { FastifyBaseLogger } from "fastify";
import type { Redis, Result } from "ioredis";
import { ApiError, serviceUnavailable } from "../../http/errors.ts";
import type { BillingRepository, RecordedTotals, ReserveRefusal } from "../../store/repositories/billing.ts";
import { EpochFollower, MONEY_TTL_SECONDS } from "./epoch-follower.ts";
import {
  CHANGE_SCRIPT,
  CLOSE_SCRIPT,
  DROP_SCRIPT,
  EPOCH_SCRIPT,
  HOLD_SCRIPT,
  LOAD_SCRIPT,
  READ_SCRIPT,
  READY_SCRIPT,
  REGISTER_SCRIPT,
  SWEEP_SCRIPT,
} from "./money-scripts.ts";
import { holdText, keyMonthOf, parseHold, type SharedHold } from "./shared-hold.ts";

declare module "ioredis" {
  interface RedisCommander<Context> {
    zonaMoneyHold(n: 0, ...args: string[]): Result<string[], Context>;
    zonaMoneyClose(n: 0, ...args: string[]): Result<number, Context>;
    zonaMoneyLoad(n: 0, ...args: string[]): Result<string[], Context>;
    zonaMoneyRegister(n: 0, ...args: string[]): Result<string[], Context>;
    zonaMoneySweep(n: 0, ...args: string[]): Result<string[], Context>;
    zonaMoneyRead(n: 0, ...args: string[]): Result<string[], Context>;
    zonaMoneyChange(n: 0, ...args: string[]): Result<string[], Context>;
    zonaMoneyEpoch(n: 0, ...args: string[]): Result<string, Context>;
    zonaMoneyReady(n: 0, ...args: string[]): Result<number, Context>;
    zonaMoneyDrop(n: 0, ...args: string[]): Result<number, Context>;
  }
}

/** Thrown while Redis cannot be reached: the caller decides in PostgreSQL instead. */
export class RedisAway extends Error {
  constructor() {
    super("Redis is unreachable: money is decided in PostgreSQL");
  }
}

// An instance that finds Redis away decides in PostgreSQL only this long after: every instance has
// then noticed (each polls Redis every 200 ms) and written its holds in flight to PostgreSQL.
const CARRY_GRACE_MS = 500;

/** Each decision makes at most this many round trips (loads, a new epoch) before it is a 503. */
const MAX_STEPS = 8;
// A swept hold is leased to its sweeper this long; one that died leaves it to the next.
const SWEEP_LEASE_MS = 60_000;
const SWEEP_BATCH = 200;

/** Registers the money scripts on a connection. */
export function defineMoneyCommands(redis: Redis): void {
  redis.defineCommand("zonaMoneyHold", { lua: HOLD_SCRIPT });
  redis.defineCommand("zonaMoneyClose", { lua: CLOSE_SCRIPT });
  redis.defineCommand("zonaMoneyLoad", { lua: LOAD_SCRIPT });
  redis.defineCommand("zonaMoneyRegister", { lua: REGISTER_SCRIPT });
  redis.defineCommand("zonaMoneySweep", { lua: SWEEP_SCRIPT });
  redis.defineCommand("zonaMoneyRead", { lua: READ_SCRIPT });
  redis.defineCommand("zonaMoneyChange", { lua: CHANGE_SCRIPT });
  redis.defineCommand("zonaMoneyEpoch", { lua: EPOCH_SCRIPT });
  redis.defineCommand("zonaMoneyReady", { lua: READY_SCRIPT });
  redis.defineCommand("zonaMoneyDrop", { lua: DROP_SCRIPT });
}

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
  private closing: { ids: string[]; keyMonths: Map<string, number>; credits: Map<string, [number, number]> } =
    emptyClosing();
  private closeScheduled = false;
  /** Since when Redis is away, and the write of this instance's holds to PostgreSQL then. */
  private away: { since: number; carried: Promise<void> } | undefined;
  /** Holds written to PostgreSQL while Redis was away: they close there, as reservations. */
  private readonly carried = new Set<string>();

  constructor(deps: { redis: Redis; prefix: string; repo: BillingRepository; log?: FastifyBaseLogger }) {
    this.redis = deps.redis;
    this.prefix = deps.prefix;
    this.repo = deps.repo;
    this.log = deps.log;
    defineMoneyCommands(this.redis);
    this.epochs = new EpochFollower({
      redis: this.redis,
      prefix: this.prefix,
      holds: () => [...this.open.values()],
      newEpoch: () => randomBytes(6).toString("hex"),
      reachable: (ok) => (ok ? this.back() : void this.goAway()),
      ...(deps.log ? { log: deps.log } : {}),
    });
  }

  /** Starts following the epoch (a flush is noticed even by an instance that only holds). */
  start(): void {
    this.epochs.start();
  }

  async stop(): Promise<void> {
    this.epochs.stop();
    await this.flushCloses();
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
   */
  async hold(
    hold: SharedHold,
    monthlyLimitMicros: number | null,
    dry = false,
  ): Promise<ReserveRefusal | undefined> {
    if (this.away || this.redis.status !== "ready") return this.decideElsewhere();
    try {
      return await this.decide(hold, monthlyLimitMicros, dry);
    } catch (error) {
      if (error instanceof ApiError) throw error;
      return this.decideElsewhere();
    }
  }

  /** Whether a hold was written to PostgreSQL while Redis was away (it then closes there); once. */
  wasCarried(requestId: string): boolean {
    return this.carried.delete(requestId);
  }

  private async decideElsewhere(): Promise<never> {
    await this.goAway();
    throw new RedisAway();
  }

  /**
   * Redis is away: this instance's holds in flight are written to PostgreSQL (as reservations, so
   * that every instance deciding there sees them); resolves once decisions may be taken there.
   */
  private goAway(): Promise<void> {
    if (!this.away) {
      this.epochs.changed();
      this.log?.warn({}, "Redis is unreachable: money is decided in PostgreSQL until it is back");
      this.away = { since: Date.now(), carried: this.carry() };
    }
    const { since, carried } = this.away;
    return carried.then(() => sleep(since + CARRY_GRACE_MS - Date.now()));
  }

  private async carry(): Promise<void> {
    for (const hold of [...this.open.values()]) {
      // A durable hold's row is being written by its caller; a change of credits closes by itself.
      if (hold.kind !== "r") continue;
      try {
        await this.repo.reserve(
          {
            requestId: hold.requestId,
            keyId: hold.keyId,
            accountId: hold.accountId,
            month: hold.month,
            amountMicros: hold.amountMicros,
            prepaid: hold.prepaid,
            endpoint: hold.endpoint,
            model: hold.model,
            expiresAt: new Date(hold.expiresAt),
          },
          null,
          { unchecked: true },
        );
        this.open.delete(hold.requestId);
        this.carried.add(hold.requestId);
      } catch (error) {
        this.log?.error({ err: error }, "could not write a hold in flight to PostgreSQL while Redis is away");
      }
    }
  }

  /** Redis answers again: what it kept is not trusted (decisions were taken without it); rebuilt. */
  private back(): void {
    if (!this.away) return;
    this.away = undefined;
    this.log?.info({}, "Redis is back: money is decided there again, rebuilt from PostgreSQL");
    void this.epochs.distrust().catch(() => {});
  }

  private async decide(
    hold: SharedHold,
    monthlyLimitMicros: number | null,
    dry: boolean,
  ): Promise<ReserveRefusal | undefined> {
    for (let step = 0; step < MAX_STEPS; step++) {
      const epoch = await this.epochs.current();
      const reply = await this.epochs.tracked(() =>
        this.redis.zonaMoneyHold(
          0,
          this.prefix,
          epoch,
          hold.requestId,
          holdText(hold),
          keyMonthOf(hold),
          hold.prepaid ? hold.accountId : "",
          String(hold.amountMicros),
          String(monthlyLimitMicros ?? -1),
          String(Math.max(hold.amountMicros, 1)),
          String(hold.expiresAt),
          String(MONEY_TTL_SECONDS),
          dry ? "1" : "0",
        ),
      );
      if (reply[0] === "ok") {
        if (!dry) this.open.set(hold.requestId, hold);
        return undefined;
      }
      if (reply[0] === "refused") return reply[1] as ReserveRefusal;
      if (reply[0] === "load") await this.load(epoch, reply[1] === "k" ? "k" : "a", hold);
      else this.epochs.changed();
    }
    throw serviceUnavailable();
  }

  /**
   * Ends a hold (when given) and brings the copies up to what PostgreSQL recorded (when given), in
   * one script call per tick for every close of that tick. Without totals the hold is given back.
   */
  close(requestId: string | null, totals?: RecordedTotals): void {
    if (requestId !== null) {
      this.open.delete(requestId);
      this.closing.ids.push(requestId);
    }
    for (const row of totals?.keyMonths ?? []) {
      const id = keyMonthOf(row);
      this.closing.keyMonths.set(id, Math.max(this.closing.keyMonths.get(id) ?? 0, row.spentMicros));
    }
    for (const row of totals?.credits ?? []) {
      const seen = this.closing.credits.get(row.accountId);
      if (!seen || seen[1] < row.version)
        this.closing.credits.set(row.accountId, [row.balanceMicros, row.version]);
    }
    if (this.closeScheduled) return;
    this.closeScheduled = true;
    // In the tick's check phase: after every answer of this round, before the next requests are read.
    setImmediate(() => this.flushCloses());
  }

  /** As `close`, sent at once; resolves when Redis has taken it (a read after it sees it). */
  closeNow(requestId: string | null, totals?: RecordedTotals): Promise<void> {
    this.close(requestId, totals);
    return this.flushCloses();
  }

  /** A durable hold whose row is now in PostgreSQL: a rebuild finds it there, not in this process. */
  written(requestId: string): void {
    this.open.delete(requestId);
  }

  /** A key month's spent and reserved, or an account's balance and held, as Redis decides on them. */
  async read(of: { keyId: string; month: string } | { accountId: string }): Promise<[number, number]> {
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
  async change(
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
          String(hold.expiresAt),
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
   * the totals), then closes it with them; how many.
   */
  async sweep(nowMs: number, settle: (hold: SharedHold) => Promise<RecordedTotals>): Promise<number> {
    const reply = await this.redis.zonaMoneySweep(
      0,
      this.prefix,
      String(nowMs),
      String(SWEEP_LEASE_MS),
      String(SWEEP_BATCH),
    );
    let swept = 0;
    for (let i = 0; i + 1 < reply.length; i += 2) {
      const hold = parseHold(reply[i] as string, reply[i + 1] as string);
      if (!hold) continue;
      this.close(hold.requestId, await settle(hold));
      swept += 1;
    }
    return swept;
  }

  /** What PostgreSQL holds of a hold's key month and account, as totals to close it with. */
  async totalsOf(
    hold: Pick<SharedHold, "keyId" | "month" | "accountId" | "prepaid">,
  ): Promise<RecordedTotals> {
    const totals: RecordedTotals = { keyMonths: [], credits: [] };
    if (hold.keyId !== null) {
      const spend = await this.repo.moneyOfRecord({ keyId: hold.keyId, month: hold.month });
      totals.keyMonths.push({ keyId: hold.keyId, month: hold.month, spentMicros: spend.micros });
    }
    if (hold.prepaid) {
      const credit = await this.repo.moneyOfRecord({ accountId: hold.accountId });
      totals.credits.push({
        accountId: hold.accountId,
        balanceMicros: credit.micros,
        version: credit.version,
      });
    }
    return totals;
  }

  private async load(epoch: string, kind: "k" | "a", hold: SharedHold): Promise<void> {
    if (kind === "k" && hold.keyId !== null)
      await this.loadOne(epoch, "k", { keyId: hold.keyId, month: hold.month });
    else await this.loadOne(epoch, "a", { accountId: hold.accountId });
  }

  /** Makes a copy whole from PostgreSQL (in the epoch it was asked in; a newer one loads again). */
  private async loadOne(
    epoch: string,
    kind: "k" | "a",
    of: { keyId: string; month: string } | { accountId: string },
  ): Promise<void> {
    const record = await this.repo.moneyOfRecord(of);
    const durable = record.durable.flatMap((row) => [
      row.requestId,
      holdText({
        requestId: row.requestId,
        keyId: row.keyId,
        month: row.month,
        accountId: row.accountId,
        prepaid: row.prepaid,
        amountMicros: row.amountMicros,
        kind: "d",
        endpoint: row.endpoint,
        model: row.model,
        expiresAt: row.expiresAt.getTime(),
      }),
      String(row.expiresAt.getTime()),
    ]);
    const reply = await this.redis.zonaMoneyLoad(
      0,
      this.prefix,
      epoch,
      kind,
      "keyId" in of ? keyMonthOf(of) : of.accountId,
      String(record.micros),
      String(record.version),
      String(MONEY_TTL_SECONDS),
      String(record.durable.length),
      ...durable,
    );
    if (reply[0] === "epoch") this.epochs.changed();
  }

  private flushCloses(): Promise<void> {
    this.closeScheduled = false;
    const { ids, keyMonths, credits } = this.closing;
    if (ids.length === 0 && keyMonths.size === 0 && credits.size === 0) return Promise.resolve();
    this.closing = emptyClosing();
    const args = [this.prefix, String(MONEY_TTL_SECONDS), String(ids.length), ...ids, String(keyMonths.size)];
    for (const [id, spent] of keyMonths) args.push(id, String(spent));
    args.push(String(credits.size));
    for (const [id, [balance, version]] of credits) args.push(id, String(balance), String(version));
    // A close that fails leaves its holds to the sweep, which closes them with PostgreSQL's totals.
    return this.redis.zonaMoneyClose(0, ...args).then(
      () => undefined,
      (error: unknown) => {
        this.log?.warn(
          { err: error, holds: ids.length },
          "could not close money holds in Redis; the sweep will",
        );
      },
    );
  }

  /** Redis restarted (maybe from an old snapshot): its money is rebuilt instead of trusted. */
  async restarted(): Promise<void> {
    await this.epochs.distrust();
  }
}

function emptyClosing() {
  return {
    ids: [] as string[],
    keyMonths: new Map<string, number>(),
    credits: new Map<string, [number, number]>(),
  };
}

function sleep(ms: number): Promise<void> {
  return ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve();
}
