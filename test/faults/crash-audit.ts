import type { Store } from "../../src/store/database.ts";
import {
  creditBalances,
  creditLedger,
  keyMonthSpend,
  reservations,
  usageRecords,
} from "../../src/store/schema.ts";
import type { CompletedAnswer } from "./crash-load.ts";
import type { CrashAccount, CrashKey } from "./crash-setup.ts";

/** What the database holds after the load, against what the clients received. Every count but the first three should be 0. */
export interface CrashAudit {
  usageRecords: number;
  /** Records by outcome (ok, partial, failed, expired...). */
  outcomes: Record<string, number>;
  completedWithRecord: number;
  /** Whole answers without a record, or whose record is not `ok` with a cost. */
  completedWithoutRecord: string[];
  completedNotBilled: string[];
  /** Reservations still held (after the sweep). */
  heldReservations: number;
  /** Keys whose month's spend is not the sum of their records, or that still hold money. */
  keySpendMismatches: string[];
  /** Keys that spent more than their monthly limit. */
  overspentKeys: string[];
  /** Accounts whose balance is not their credits minus their records' costs, that hold credits, or are below 0. */
  creditMismatches: string[];
  /** Accounts whose ledger (the operator's changes) does not add up to what they are credited, or whose spend is not their records' costs. */
  ledgerMismatches: string[];
}

const MICROS = 1_000_000;

/** Reads the whole billing state (the run's database holds nothing else) and checks it. */
export async function auditCrash(
  store: Store,
  run: { completed: CompletedAnswer[]; keys: CrashKey[]; accounts: CrashAccount[]; prepaid: boolean },
): Promise<CrashAudit> {
  const accountIds = new Set(run.accounts.map((a) => a.id));
  const records = (await store.db.select().from(usageRecords)).filter((r) => accountIds.has(r.accountId));
  const held = (await store.db.select().from(reservations)).filter((r) => accountIds.has(r.accountId));
  const spends = await store.db.select().from(keyMonthSpend);
  const balances = await store.db.select().from(creditBalances);
  const ledger = await store.db.select().from(creditLedger);

  const byRequest = new Map(records.map((r) => [r.requestId, r]));
  const outcomes: Record<string, number> = {};
  for (const r of records) outcomes[r.outcome] = (outcomes[r.outcome] ?? 0) + 1;
  const audit: CrashAudit = {
    usageRecords: records.length,
    outcomes,
    completedWithRecord: 0,
    completedWithoutRecord: [],
    completedNotBilled: [],
    heldReservations: held.length,
    keySpendMismatches: [],
    overspentKeys: [],
    creditMismatches: [],
    ledgerMismatches: [],
  };
  for (const answer of run.completed) {
    const record = byRequest.get(answer.requestId);
    if (!record || record.keyId !== answer.keyId) {
      audit.completedWithoutRecord.push(answer.requestId);
      continue;
    }
    audit.completedWithRecord += 1;
    if (record.outcome !== "ok" || record.costMicros <= 0) audit.completedNotBilled.push(answer.requestId);
  }

  for (const key of run.keys) {
    const costs = records.filter((r) => r.keyId === key.keyId).reduce((sum, r) => sum + r.costMicros, 0);
    const months = spends.filter((s) => s.keyId === key.keyId);
    const spent = months.reduce((sum, s) => sum + s.spentMicros, 0);
    const reserved = months.reduce((sum, s) => sum + s.reservedMicros, 0);
    if (spent !== costs || reserved !== 0) {
      audit.keySpendMismatches.push(`${key.keyId}: spent ${spent}, records ${costs}, reserved ${reserved}`);
    }
    if (key.monthlyLimit !== null && spent > key.monthlyLimit * MICROS) {
      audit.overspentKeys.push(`${key.keyId}: spent ${spent} over ${key.monthlyLimit * MICROS}`);
    }
  }

  if (run.prepaid) {
    for (const account of run.accounts) {
      const costs = records
        .filter((r) => r.accountId === account.id)
        .reduce((sum, r) => sum + r.costMicros, 0);
      const balance = balances.find((b) => b.accountId === account.id);
      const expected = account.credits * MICROS - costs;
      const left = balance ? balance.creditedMicros - balance.spentMicros : undefined;
      if (!balance || left !== expected || balance.heldMicros !== 0 || (left ?? 0) < 0) {
        audit.creditMismatches.push(
          `${account.id}: balance ${left}, expected ${expected}, held ${balance?.heldMicros}`,
        );
      }
      const entries = ledger.filter((l) => l.accountId === account.id);
      const total = entries.reduce((sum, l) => sum + l.amountMicros, 0);
      // Usage adds each record's cost to the account's spend once: a record charged twice (or not
      // at all) shows as a difference between these sums; a request has one record at most.
      if (total !== balance?.creditedMicros || balance?.spentMicros !== costs) {
        audit.ledgerMismatches.push(
          `${account.id}: ledger ${total}, credited ${balance?.creditedMicros}, spent ${balance?.spentMicros}, records' costs ${costs}`,
        );
      }
    }
  }
  return audit;
}
