import type { usageRecords } from "../schema.ts";

// What a write of usage records takes and what it leaves, apart from the repository that writes
// them, so that the batch statement and the usage journal need only these shapes.

/**
 * A usage record of a request that reserved nothing, as the batch writes it. `createdMs` (epoch
 * ms) is when the request ended: records written in one statement, or later from the journal,
 * keep their own times and order (else they all get the statement's time).
 */
export type UsageRecordRow = Omit<typeof usageRecords.$inferInsert, "createdAt"> & {
  createdMs?: number;
  /** The cost is taken from the account's prepaid credits (added to what they spent). */
  prepaid?: boolean;
};

/**
 * The spend of every key month and account a write changed, as it left them: what Redis's copy of
 * the money is brought up to (a spend only grows). An operator's change also says what the account
 * is credited, with its version (a newer version replaces an older one).
 */
export interface RecordedTotals {
  keyMonths: Array<{ keyId: string; month: string; spentMicros: number }>;
  credits: Array<CreditTotals>;
}

/**
 * What one usage record's write left: its cost, and the spends of its key month and of its account
 * (when the write charged it) right after the statement that wrote it (undefined where it changed
 * none).
 */
export interface WrittenRecord {
  costMicros: number;
  keyMonthAfter: number | undefined;
  accountAfter: number | undefined;
}

/** An account's prepaid spend as a write left it, and what it is credited when the write changed that. */
export interface CreditTotals {
  accountId: string;
  spentMicros: number;
  credited?: { micros: number; version: number };
}
