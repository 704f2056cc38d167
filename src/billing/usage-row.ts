import type { SettleFacts } from "../store/repositories/billing.ts";
import type { UsageRecordRow } from "../store/repositories/usage-writes.ts";

/** The usage record of a request whose money was settled in the process (written in a batch). */
export function usageRow(
  requestId: string,
  payer: { keyId: string | null; accountId: string; month: string; prepaid?: boolean },
  about: { endpoint: string; model: string | null },
  facts: SettleFacts,
): UsageRecordRow {
  return {
    requestId,
    keyId: payer.keyId,
    accountId: payer.accountId,
    month: payer.month,
    endpoint: about.endpoint,
    model: about.model,
    ...facts,
    // The real time, as the database's now() was: it orders records, the (test) clock makes months.
    createdMs: Date.now(),
    ...(payer.prepaid ? { prepaid: true } : {}),
  };
}

/** What a reservation released by the sweep records: its request never ended, and costs nothing. */
export const EXPIRED_FACTS: SettleFacts = {
  costMicros: 0,
  units: {},
  outcome: "expired",
  zone: null,
  machine: null,
  durationMs: null,
};
