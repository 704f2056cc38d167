import type { FastifyBaseLogger } from "fastify";
import type { Redis } from "ioredis";
import { serviceUnavailable } from "../../errors/catalogue.ts";
import { holdText, type SharedHold } from "./shared-hold.ts";

/** How long the money's keys live without use (each use renews it; the epoch is renewed by polls). */
export const MONEY_TTL_SECONDS = 86_400;
// Every instance reads the epoch this often, so that one that only holds money notices a flush.
const POLL_MS = 200;
// A rebuild waits this long (several polls) for every instance to put back its holds in flight.
const GRACE_MS = 1_000;
// A pending epoch whose rebuilder died ends by itself after this long, and another rebuild starts.
const PENDING_TTL_SECONDS = 10;
// A decision waits at most this long for an epoch (a rebuild, Redis coming back) before its 503.
const ADOPT_WAIT_MS = 5_000;
const RETRY_MS = 50;

/**
 * Follows the epoch of the money in Redis. A missing epoch (a flush, a restart without data, a
 * first start) starts a rebuild: one instance sets a pending epoch, every instance puts back the
 * holds it has in flight into it, and after a grace period it is made the one in force; copies of
 * spends and balances are then loaded from PostgreSQL as needed. Until then nothing is admitted.
 */
export class EpochFollower {
  private readonly redis: Redis;
  private readonly prefix: string;
  private readonly holds: () => SharedHold[];
  private readonly newEpoch: () => string;
  private readonly reachable: (ok: boolean) => void;
  private readonly firstEver: (epoch: string) => Promise<boolean>;
  private readonly log: FastifyBaseLogger | undefined;
  /** The epoch in force as this instance last saw it; undefined while it follows a change. */
  private epoch: string | undefined;
  /** The stored epoch (maybe pending) into which this instance's holds were last put back. */
  private registeredIn: string | undefined;
  private adopting: Promise<string> | undefined;
  /** Decisions sent and not answered: a hold they make must be among those put back. */
  private inFlight = 0;
  private poller: NodeJS.Timeout | undefined;
  private runId: string | undefined;
  private readonly onReady = () => void this.checkRestart();

  constructor(deps: {
    redis: Redis;
    prefix: string;
    holds: () => SharedHold[];
    newEpoch: () => string;
    /** Hears each poll's outcome: whether Redis answered. */
    reachable: (ok: boolean) => void;
    /**
     * Whether an epoch is the installation's first (the database remembers the first one made):
     * before it no instance could hold money in Redis, so nothing is waited for.
     */
    firstEver: (epoch: string) => Promise<boolean>;
    log?: FastifyBaseLogger;
  }) {
    this.reachable = deps.reachable;
    this.firstEver = deps.firstEver;
    this.redis = deps.redis;
    this.prefix = deps.prefix;
    this.holds = deps.holds;
    this.newEpoch = deps.newEpoch;
    this.log = deps.log;
  }

  start(): void {
    if (this.poller) return;
    this.poller = setInterval(() => void this.poll(), POLL_MS);
    this.poller.unref();
    this.redis.on("ready", this.onReady);
    if (this.redis.status === "ready") void this.checkRestart();
  }

  stop(): void {
    if (this.poller) clearInterval(this.poller);
    this.poller = undefined;
    this.redis.off("ready", this.onReady);
  }

  /** The epoch in force when this instance follows it already (nothing to wait for). */
  get known(): string | undefined {
    return this.epoch;
  }

  /** The epoch in force, once this instance's holds are in it. */
  current(): Promise<string> {
    if (this.epoch !== undefined) return Promise.resolve(this.epoch);
    this.adopting ??= this.follow().finally(() => {
      this.adopting = undefined;
    });
    return this.adopting;
  }

  /** A script said the epoch is not the one this instance uses: follow the new one. */
  changed(): void {
    this.epoch = undefined;
  }

  /** Runs a decision that may place a hold; the epoch is not followed while it is unanswered. */
  async tracked<T>(decide: () => Promise<T>): Promise<T> {
    this.deciding();
    try {
      return await decide();
    } finally {
      this.decided();
    }
  }

  /** A decision that may place a hold was sent (as `tracked`, for a caller that awaits it itself). */
  deciding(): void {
    this.inFlight += 1;
  }

  /** That decision was answered, or failed. */
  decided(): void {
    this.inFlight -= 1;
  }

  /** Drops the epoch in force, if still the one this instance knows: every instance rebuilds. */
  async distrust(): Promise<void> {
    const known = this.epoch ?? this.registeredIn;
    if (known !== undefined) await this.redis.zonaMoneyDrop(0, this.prefix, known);
    this.changed();
  }

  private async poll(): Promise<void> {
    let stored: string;
    try {
      stored = await this.redis.zonaMoneyEpoch(0, this.prefix, String(MONEY_TTL_SECONDS));
    } catch {
      this.reachable(false);
      return;
    }
    this.reachable(true);
    if (this.epoch !== undefined && stored === this.epoch) return;
    this.changed();
    await this.current().catch(() => {});
  }

  private async follow(): Promise<string> {
    const deadline = Date.now() + ADOPT_WAIT_MS;
    while (Date.now() < deadline) {
      const stored = await this.redis.zonaMoneyEpoch(0, this.prefix, String(MONEY_TTL_SECONDS));
      if (stored === "") {
        await this.rebuild();
        continue;
      }
      if (this.registeredIn !== stored && !(await this.register(stored))) continue;
      const [id, pending] = stored.split(":");
      if (id !== undefined && pending === undefined) {
        this.epoch = id;
        return id;
      }
      await sleep(RETRY_MS);
    }
    throw serviceUnavailable();
  }

  /** Starts a new epoch unless another instance does; returns at once when it does. */
  private async rebuild(): Promise<void> {
    const id = this.newEpoch();
    const won = await this.redis.set(`${this.prefix}rebuild`, id, "EX", PENDING_TTL_SECONDS, "NX");
    if (won !== "OK") {
      await sleep(RETRY_MS);
      return;
    }
    const pending = `${id}:pending`;
    if ((await this.redis.set(`${this.prefix}epoch`, pending, "EX", PENDING_TTL_SECONDS, "NX")) !== "OK")
      return;
    if (await this.firstEver(id)) {
      this.log?.info({}, "money in Redis: the installation's first epoch");
    } else {
      this.log?.info(
        {},
        "money in Redis is missing (a flush or a restart): rebuilding it from PostgreSQL and the holds in flight",
      );
      await this.register(pending);
      await sleep(GRACE_MS);
    }
    await this.redis.zonaMoneyReady(0, this.prefix, pending, id, String(MONEY_TTL_SECONDS));
  }

  /** Puts this instance's holds in flight into a stored epoch; false when it is no longer the one. */
  private async register(stored: string): Promise<boolean> {
    while (this.inFlight > 0) await sleep(1);
    const args = this.holds().flatMap((hold) => [hold.requestId, holdText(hold)]);
    const reply = await this.redis.zonaMoneyRegister(
      0,
      this.prefix,
      stored,
      String(MONEY_TTL_SECONDS),
      ...args,
    );
    if (reply[0] !== "ok") return false;
    this.registeredIn = stored;
    return true;
  }

  /** On every (re)connection: a Redis with another run id restarted, maybe from an old snapshot. */
  private async checkRestart(): Promise<void> {
    try {
      const runId = /run_id:(\w+)/.exec(await this.redis.info("server"))?.[1];
      const before = this.runId;
      this.runId = runId;
      if (before !== undefined && runId !== before) {
        this.log?.warn({}, "Redis restarted: the money it kept is rebuilt from PostgreSQL");
        await this.distrust();
      }
    } catch {
      // Asked again at the next connection.
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
