/**
 * Migration 0013: an account's credits become what the operator credited and what usage spent.
 * A balance written before it is the credited sum, with nothing spent: the same balance.
 */
import { readdirSync, readFileSync } from "node:fs";
import { PGlite } from "@electric-sql/pglite";
import { vector } from "@electric-sql/pglite-pgvector";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const DIR = new URL("../../src/store/migrations/", import.meta.url);
const FILES = readdirSync(DIR)
  .filter((name) => name.endsWith(".sql"))
  .sort();
const THIS = "0013_credits_spent.sql";

/** A migration as migrate.ts runs it: in one transaction. */
const run = (db: PGlite, name: string) =>
  db.exec(`BEGIN;\n${readFileSync(new URL(name, DIR), "utf8")}\n;COMMIT;`);

describe("Migration 0013: credits credited and spent (spec Billing: prepaid credits)", () => {
  let db: PGlite;
  beforeAll(async () => {
    db = await PGlite.create({ extensions: { vector } });
    for (const name of FILES.filter((file) => file < THIS)) await run(db, name);
  });
  afterAll(() => db.close());

  it("keeps every balance, its held amount and its version; the ledger is untouched", async () => {
    const account = await db.query<{ id: string }>(
      "INSERT INTO accounts (email) VALUES ('before@example.ch') RETURNING id",
    );
    const id = account.rows[0]?.id;
    await db.query(
      "INSERT INTO credit_balances (account_id, balance_micros, held_micros, version) VALUES ($1, 2500000, 400000, 7)",
      [id],
    );
    await db.query(
      "INSERT INTO credit_ledger (account_id, kind, amount_micros, balance_after_micros) VALUES ($1, 'set', 2500000, 2500000)",
      [id],
    );
    await run(db, THIS);
    const after = await db.query(
      "SELECT credited_micros::int AS credited, spent_micros::int AS spent, held_micros::int AS held, version::int AS version FROM credit_balances WHERE account_id = $1",
      [id],
    );
    expect(after.rows).toEqual([{ credited: 2_500_000, spent: 0, held: 400_000, version: 7 }]);
    const ledger = await db.query("SELECT count(*)::int AS n FROM credit_ledger WHERE account_id = $1", [id]);
    expect(ledger.rows).toEqual([{ n: 1 }]);
  });
});
