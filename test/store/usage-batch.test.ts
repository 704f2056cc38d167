import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Store } from "../../src/store/database.ts";
import { AccountsRepository } from "../../src/store/repositories/accounts.ts";
import { ApiKeysRepository } from "../../src/store/repositories/api-keys.ts";
import { BillingRepository } from "../../src/store/repositories/billing.ts";
import { CreditsRepository } from "../../src/store/repositories/credits.ts";
import type { RecordedTotals, UsageRecordRow } from "../../src/store/repositories/usage-writes.ts";
import { openTestStore, STORE_KINDS } from "../helpers/test-store.ts";

const MONTH = "2026-11";

interface Payer {
  accountId: string;
  keyId: string;
}

/** The four accounts of the test, each with a key and 10,000,000 micros of credits. */
type Payers = [Payer, Payer, Payer, Payer];

/** A record of `cost` micros for the payer; `prepaid` charges the account's credits. */
function record(payer: Payer, requestId: string, costMicros: number, prepaid: boolean): UsageRecordRow {
  return {
    requestId,
    keyId: payer.keyId,
    accountId: payer.accountId,
    month: MONTH,
    endpoint: "chat.completions",
    model: "m",
    units: { prompt_tokens: 1, completion_tokens: 1 },
    costMicros,
    outcome: "ok",
    ...(prepaid ? { prepaid: true } : {}),
  };
}

function sorted(totals: RecordedTotals): RecordedTotals {
  return {
    keyMonths: [...totals.keyMonths].sort((a, b) => a.keyId.localeCompare(b.keyId)),
    credits: [...totals.credits].sort((a, b) => a.accountId.localeCompare(b.accountId)),
  };
}

// Spec "Billing" (prices in credits on a prepaid installation; a request that costs nothing charges
// nothing) and the one usage record per request id: what one statement writes for a batch of records.
describe.each(STORE_KINDS)("Usage records written in one statement (%s)", (kind) => {
  let store: Store;
  let repo: BillingRepository;
  let credits: CreditsRepository;
  let payers: Payers;

  beforeAll(async () => {
    store = await openTestStore(kind);
    repo = new BillingRepository(store.db, store.named);
    credits = new CreditsRepository(store.db);
    const accounts = new AccountsRepository(store.db);
    const keys = new ApiKeysRepository(store.db);
    const made: Payer[] = [];
    for (const name of ["a", "b", "c", "d"]) {
      const account = await accounts.insert({ email: `usage-batch-${name}@example.ch` });
      const accountId = account?.id ?? "";
      await credits.add(accountId, 10_000_000, null);
      const key = await keys.insert({
        accountId,
        name,
        displayPrefix: `sk-${name}...`,
        keyHash: `hash-${kind}-${name}`,
        zones: null,
        monthlyLimitMicros: null,
      });
      made.push({ accountId, keyId: key?.id ?? "" });
    }
    payers = made as Payers;
  });
  afterAll(() => store?.close());

  const creditsLeft = async (payer: Payer) => (await credits.balance(payer.accountId)).balanceMicros;

  const cases: Array<{
    name: string;
    rows: (p: Payers) => UsageRecordRow[];
    /** Credits left on each of the four accounts after the batch (10,000,000 before). */
    left: number[];
    totals: (p: Payers) => RecordedTotals;
  }> = [
    {
      name: "postpaid only: each key's month grows, no credits are charged",
      rows: ([a, b]) => [
        record(a, "post-1", 100, false),
        record(a, "post-2", 50, false),
        record(b, "post-3", 7, false),
      ],
      left: [10_000_000, 10_000_000, 10_000_000, 10_000_000],
      totals: ([a, b]) => ({
        keyMonths: [
          { keyId: a.keyId, month: MONTH, spentMicros: 150 },
          { keyId: b.keyId, month: MONTH, spentMicros: 7 },
        ],
        credits: [],
      }),
    },
    {
      name: "every record prepaid: each account is charged the sum of its records; a free one charges nothing",
      rows: ([, , c, d]) => [
        record(c, "pre-1", 300, true),
        record(c, "pre-2", 200, true),
        record(d, "pre-3", 40, true),
        record(d, "pre-4", 0, true),
      ],
      left: [10_000_000, 10_000_000, 9_999_500, 9_999_960],
      totals: ([, , c, d]) => ({
        keyMonths: [
          { keyId: c.keyId, month: MONTH, spentMicros: 500 },
          { keyId: d.keyId, month: MONTH, spentMicros: 40 },
        ],
        credits: [
          { accountId: c.accountId, spentMicros: 500 },
          { accountId: d.accountId, spentMicros: 40 },
        ],
      }),
    },
    {
      name: "prepaid and postpaid records in one batch (a change of installation.prepaid): only the prepaid ones are charged",
      rows: ([a, , c]) => [
        record(a, "mixed-1", 1_000, false),
        record(c, "mixed-2", 20, true),
        record(c, "mixed-3", 9_000, false),
      ],
      left: [10_000_000, 10_000_000, 9_999_480, 9_999_960],
      totals: ([a, , c]) => ({
        keyMonths: [
          { keyId: a.keyId, month: MONTH, spentMicros: 1_150 },
          { keyId: c.keyId, month: MONTH, spentMicros: 9_520 },
        ],
        credits: [{ accountId: c.accountId, spentMicros: 520 }],
      }),
    },
    {
      name: "request ids written before: nothing is recorded or charged again",
      rows: ([a, , c]) => [record(c, "pre-1", 300, true), record(a, "post-1", 100, false)],
      left: [10_000_000, 10_000_000, 9_999_480, 9_999_960],
      totals: () => ({ keyMonths: [], credits: [] }),
    },
  ];

  // The cases run in order: each starts where the one before left the accounts.
  it.each(cases)("$name", async ({ rows, left, totals }) => {
    const answered = await repo.recordWithTotals(rows(payers));
    expect(sorted(answered)).toEqual(sorted(totals(payers)));
    expect(await Promise.all(payers.map(creditsLeft))).toEqual(left);
  });

  it("without totals, the same statements write the same: records and charges", async () => {
    const [, b, , d] = payers;
    await repo.record([record(b, "plain-1", 11, false), record(d, "plain-2", 60, true)]);
    expect(await Promise.all(payers.map(creditsLeft))).toEqual([
      10_000_000, 10_000_000, 9_999_480, 9_999_900,
    ]);
    const again = await repo.recordWithTotals([record(d, "plain-3", 1, true)]);
    expect(again.credits).toEqual([{ accountId: d.accountId, spentMicros: 101 }]);
  });
});
