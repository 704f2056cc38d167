import type { BillingRepository, ReserveRefusal, SettleFacts } from "../store/repositories/billing.ts";
import type { Charge } from "./charge.ts";
import type { Settlements, Write } from "./settlements.ts";
import type { SharedHold } from "./shared/shared-hold.ts";
import type { UsageBatcher } from "./usage-batcher.ts";

/** What the billing service lends the payments of the modes where memory or Redis decides. */
export interface PaymentTools {
  usage: UsageBatcher;
  repo: BillingRepository;
  settlements: Settlements;
  /** Closes a request's money with its write: tracked for shutdown, retried, metered. */
  close(
    requestId: string,
    charge: Charge,
    amount: number,
    facts: SettleFacts,
    path: "direct" | "batched",
    write: Write<unknown>,
    undo?: () => void,
  ): Promise<boolean>;
  /** Writes a reservation row (checked in the database unless `unchecked`), or throws the 402. */
  holdInDatabase(charge: Charge, amount: number, now: Date, unchecked?: boolean): Promise<void>;
  /** Throws 402 (`spending_limit_reached` or `insufficient_credits`) for a refusal (and counts it). */
  refuse(refusal: ReserveRefusal | undefined): void;
  /** Counts a reservation decided in the database because Redis was away (the metric). */
  decidedInDatabase(): void;
  /** The hold of a charge. */
  holdOf(charge: Charge, amount: number, now: Date, kind: "r" | "d"): SharedHold;
}
