import type { FastifyBaseLogger } from "fastify";
import type { BillingRepository } from "../../store/repositories/billing.ts";
import type { SharedHold } from "./shared-hold.ts";

/** Thrown while Redis cannot be reached: the caller decides in PostgreSQL instead. */
export class RedisAway extends Error {
  constructor() {
    super("Redis is unreachable: money is decided in PostgreSQL");
  }
}

// An instance that finds Redis away decides in PostgreSQL only this long after: every instance has
// then noticed (each polls Redis every 200 ms) and written its holds in flight to PostgreSQL.
const CARRY_GRACE_MS = 500;

/**
 * The policy while Redis is away: money is decided in PostgreSQL, by the reservation transactions
 * of a single-database installation. So that those decisions see what is in flight, each instance
 * first writes its holds to PostgreSQL as reservations ("carried": they then close there). When
 * Redis answers again, what it kept is not trusted (decisions were taken without it): the epoch is
 * dropped and the copies rebuilt from PostgreSQL.
 */
export class AwayFromRedis {
  private readonly repo: BillingRepository;
  private readonly log: FastifyBaseLogger | undefined;
  private readonly open: Map<string, SharedHold>;
  /** Since when Redis is away, and the write of this instance's holds to PostgreSQL then. */
  private away: { since: number; carried: Promise<void> } | undefined;
  /** Holds written to PostgreSQL while Redis was away: they close there, as reservations. */
  private readonly carried = new Set<string>();

  /** `open`: the instance's holds in flight, from which carried holds are taken out. */
  constructor(deps: { repo: BillingRepository; open: Map<string, SharedHold>; log?: FastifyBaseLogger }) {
    this.repo = deps.repo;
    this.open = deps.open;
    this.log = deps.log;
  }

  get active(): boolean {
    return this.away !== undefined;
  }

  /** Redis is away: carries the holds in flight (once); resolves once PostgreSQL may decide. */
  begin(): Promise<void> {
    if (!this.away) {
      this.log?.warn({}, "Redis is unreachable: money is decided in PostgreSQL until it is back");
      this.away = { since: Date.now(), carried: this.carry() };
    }
    const { since, carried } = this.away;
    return carried.then(() => sleep(since + CARRY_GRACE_MS - Date.now()));
  }

  /** Redis answers again; true when it had been away (its copy must then be rebuilt). */
  end(): boolean {
    if (!this.away) return false;
    this.away = undefined;
    this.log?.info({}, "Redis is back: money is decided there again, rebuilt from PostgreSQL");
    return true;
  }

  /** Whether a hold was carried to PostgreSQL (it then closes there); once. */
  wasCarried(requestId: string): boolean {
    return this.carried.delete(requestId);
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
}

function sleep(ms: number): Promise<void> {
  return ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve();
}
