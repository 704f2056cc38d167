import type { SQL } from "drizzle-orm";
import { sql } from "../drizzle.ts";
import { creditBalances, keyMonthSpend, usageRecords } from "../schema.ts";
import type { RecordedTotals, UsageRecordRow, WrittenRecord } from "./usage-writes.ts";

/**
 * The one statement that writes a batch of usage records: each record (a request id written before
 * changes nothing), each cost added to its key's month and, for prepaid rows, to what its account
 * spent of its credits; with `totals`, it answers what it left of every key month and account it
 * changed. Its text depends only on the variant, so it has a fixed name for a prepared statement,
 * and its one parameter is the batch as JSON: `statement(batch)` is the statement.
 */
export function usageBatchStatement(
  rows: Array<UsageRecordRow>,
  totals: boolean,
): { name: string; batch: string; statement: (batch: string) => SQL } {
  // One JSON parameter for the whole batch: PostgreSQL reads it with jsonb_to_recordset, which
  // costs far less than binding twelve parameters per row.
  const batch = JSON.stringify(
    rows.map((row) => ({
      request_id: row.requestId,
      key_id: row.keyId,
      account_id: row.accountId,
      month: row.month,
      endpoint: row.endpoint,
      model: row.model ?? null,
      units: row.units,
      cost_micros: row.costMicros,
      zone: row.zone ?? null,
      machine: row.machine ?? null,
      outcome: row.outcome,
      duration_ms: row.durationMs ?? null,
      created_ms: row.createdMs ?? null,
      prepaid: row.prepaid === true,
    })),
  );
  const charges = creditChargesOf(rows);
  const statement = (json: string) => sql`
      WITH batch AS (
        SELECT * FROM jsonb_to_recordset(${json}::jsonb) AS batch(request_id text, key_id uuid,
          account_id uuid, month text, endpoint text, model text, units jsonb, cost_micros bigint, zone text,
          machine text, outcome text, duration_ms integer, created_ms bigint, prepaid boolean)
      ),
      recorded AS (
        INSERT INTO ${usageRecords} (request_id, key_id, account_id, month, endpoint, model, units, cost_micros,
          zone, machine, outcome, duration_ms, created_at)
        SELECT request_id, key_id, account_id, month, endpoint, model, units, cost_micros, zone, machine, outcome,
          duration_ms, coalesce(to_timestamp(created_ms / 1000.0), now())
        FROM batch
        ON CONFLICT (request_id) DO NOTHING
        RETURNING request_id, key_id, account_id, month, cost_micros
      ),
      spent AS (
        INSERT INTO ${keyMonthSpend} (key_id, month, spent_micros)
        SELECT key_id, month, sum(cost_micros) FROM recorded WHERE key_id IS NOT NULL GROUP BY key_id, month
        ORDER BY key_id, month
        ON CONFLICT (key_id, month) DO UPDATE SET spent_micros = ${keyMonthSpend}.spent_micros + excluded.spent_micros
        RETURNING key_id, month, spent_micros
      )
      ${VARIANTS[charges].charges}
      ${totals ? (charges === "none" ? totalsOfKeys : totalsWithCredits) : sql`SELECT 1`}
    `;
  // Six texts, one per variant: each is planned once per connection where the store can.
  const name = `zona_usage_batch_${VARIANTS[charges].name}${totals ? "_totals" : ""}`;
  return { name, batch, statement };
}

/** The totals a batch statement answered. */
export function totalsOf(answered: unknown[]): RecordedTotals {
  const found: RecordedTotals = { keyMonths: [], credits: [] };
  for (const row of answered as TotalsRow[]) {
    if (row.kind === "k") {
      found.keyMonths.push({ keyId: row.id, month: row.month ?? "", spentMicros: Number(row.micros) });
    } else {
      found.credits.push({ accountId: row.id, spentMicros: Number(row.micros) });
    }
  }
  return found;
}

/** What a batch's write left of each of its rows' key month and account, in the rows' order. */
export function writtenRecords(rows: Array<UsageRecordRow>, totals: RecordedTotals): WrittenRecord[] {
  const keyMonths = new Map<string, number>();
  for (const row of totals.keyMonths) keyMonths.set(`${row.keyId}:${row.month}`, row.spentMicros);
  const accounts = new Map<string, number>();
  for (const row of totals.credits) accounts.set(row.accountId, row.spentMicros);
  return rows.map((row) => ({
    costMicros: row.costMicros,
    keyMonthAfter: row.keyId ? keyMonths.get(`${row.keyId}:${row.month}`) : undefined,
    // Only a prepaid record that cost something is charged to its account.
    accountAfter: row.prepaid === true && row.costMicros > 0 ? accounts.get(row.accountId) : undefined,
  }));
}

/**
 * Which of a batch's records are charged to credits: none, every one that cost something (a prepaid
 * installation), or some (a batch that spans a change of `installation.prepaid`).
 */
type CreditCharges = "none" | "all" | "some";

function creditChargesOf(rows: Array<UsageRecordRow>): CreditCharges {
  let prepaid = 0;
  let postpaid = 0;
  for (const row of rows) {
    if (row.costMicros <= 0) continue;
    if (row.prepaid === true) prepaid += 1;
    else postpaid += 1;
  }
  if (prepaid === 0) return "none";
  return postpaid === 0 ? "all" : "some";
}

// The prepaid part of a batch: each account's spend grows by its new records' costs, as a key's
// month does (the balance is what it is credited minus what it spent; the records say what each
// request cost). When every record that cost something is prepaid, the inserted records alone say
// what to charge; otherwise they are matched with the batch's flags (a join that cost a prepaid
// record about a tenth of its statement's time on PostgreSQL).
const creditChargesOfAll = creditChargesFrom(sql`
        SELECT account_id, sum(cost_micros) AS total FROM recorded WHERE cost_micros > 0 GROUP BY account_id`);
const creditChargesOfSome = creditChargesFrom(sql`
        SELECT batch.account_id, sum(recorded.cost_micros) AS total
        FROM recorded JOIN batch USING (request_id)
        WHERE batch.prepaid AND recorded.cost_micros > 0
        GROUP BY batch.account_id`);

function creditChargesFrom(charged: SQL): SQL {
  return sql`,
      charged AS (${charged}
      ),
      credits AS (
        INSERT INTO ${creditBalances} (account_id, spent_micros)
        SELECT account_id, total FROM charged ORDER BY account_id
        ON CONFLICT (account_id) DO UPDATE SET spent_micros = ${creditBalances}.spent_micros + excluded.spent_micros
        RETURNING account_id, spent_micros
      )`;
}

/** Each kind of batch: the name of its statement and the part that charges credits. */
const VARIANTS: Record<CreditCharges, { name: string; charges: SQL }> = {
  none: { name: "postpaid", charges: sql`` },
  all: { name: "prepaid", charges: creditChargesOfAll },
  some: { name: "mixed", charges: creditChargesOfSome },
};

// What a batch says it left: every key month's spend, and (with credits charged) every account's.
const totalsOfKeys = sql`SELECT 'k' AS kind, key_id::text AS id, month, spent_micros AS micros FROM spent`;
const totalsWithCredits = sql`${totalsOfKeys}
      UNION ALL SELECT 'a', account_id::text, NULL, spent_micros FROM credits`;

interface TotalsRow {
  kind: "k" | "a";
  id: string;
  month: string | null;
  micros: string | number;
}
