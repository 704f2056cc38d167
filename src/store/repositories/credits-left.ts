import type { SQL } from "drizzle-orm";
import { sql } from "../drizzle.ts";
import { creditBalances } from "../schema.ts";

/** An account's balance, in SQL: what the operator credited minus what its usage spent. */
export function balanceLeft(): SQL<number> {
  return sql<number>`${creditBalances.creditedMicros} - ${creditBalances.spentMicros}`.mapWith(Number);
}

/** What requests may still hold of an account's credits, in SQL: its balance minus what is held. */
export function creditsFree(): SQL<number> {
  return sql<number>`${balanceLeft()} - ${creditBalances.heldMicros}`.mapWith(Number);
}
