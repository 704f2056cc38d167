import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Store } from "../../src/store/database.ts";
import { databaseUnavailableCause } from "../../src/store/database-unavailable.ts";
import { openStore } from "../../src/store/open-store.ts";
import { PgliteThread } from "../../src/store/pglite-thread/pglite-thread.ts";
import { AccountsRepository } from "../../src/store/repositories/accounts.ts";
import { BillingRepository } from "../../src/store/repositories/billing.ts";
import { UsageRepository } from "../../src/store/repositories/usage.ts";
import type { UsageRecordRow } from "../../src/store/repositories/usage-writes.ts";
import { EMBEDDED_FOLDER_TEST_MS } from "../helpers/embedded-folder-timeout.ts";

// The embedded database runs in its own thread, so its work never holds a request; the
// usage journal makes a record durable before the database has it.

/** A usage record of a key-less request of `accountId`. */
function usageRow(accountId: string, requestId: string, costMicros: number): UsageRecordRow {
  return {
    requestId,
    keyId: null,
    accountId,
    month: "2026-11",
    endpoint: "chat.completions",
    model: "m",
    units: { input_tokens: 3 },
    costMicros,
    zone: null,
    machine: null,
    outcome: "ok",
    durationMs: 5,
  };
}

const rows = (result: unknown) => (result as { rows: Array<Record<string, unknown>> }).rows;

describe("Embedded database in its own thread", () => {
  let store: Store;
  beforeAll(async () => {
    store = await openStore({ memory: true });
  });
  afterAll(() => store.close());

  it("a PostgreSQL error crosses the thread with its fields (SQLSTATE code, constraint)", async () => {
    const accounts = new AccountsRepository(store.db);
    await accounts.insert({ email: "twice@example.ch" });
    const failure = await store.db
      .execute(sql`INSERT INTO accounts (email) VALUES ('twice@example.ch')`)
      .catch((error: unknown) => error as Error & { cause?: { code?: string } });
    expect(failure).toBeInstanceOf(Error);
    expect((failure as { cause?: { code?: string } }).cause?.code).toBe("23505");
  });

  it("a transaction that throws is rolled back; one that returns is committed; others wait for it", async () => {
    await store.db.execute(sql`CREATE TABLE thread_tx (n int)`);
    await expect(
      store.db.transaction(async (tx) => {
        await tx.execute(sql`INSERT INTO thread_tx VALUES (1)`);
        throw new Error("no");
      }),
    ).rejects.toThrow("no");
    const [, outside] = await Promise.all([
      store.db.transaction(async (tx) => {
        await tx.execute(sql`INSERT INTO thread_tx VALUES (2)`);
        await new Promise((resolve) => setTimeout(resolve, 50));
        await tx.execute(sql`INSERT INTO thread_tx VALUES (3)`);
      }),
      // Sent while the transaction is open: it runs after the commit, never in between.
      new Promise((resolve) => setTimeout(resolve, 10)).then(() =>
        store.db.execute(sql`SELECT count(*)::int AS n FROM thread_tx`),
      ),
    ]);
    expect(rows(outside)[0]?.n).toBe(2);
  });

  it("a named statement runs with new parameters each time; a failing one leaves the session usable; it never runs inside another caller's transaction", async () => {
    const named = store.named;
    if (!named) throw new Error("the embedded store runs named statements");
    await store.db.execute(sql`CREATE TABLE thread_named (n int PRIMARY KEY)`);
    const insert = (n: number) =>
      named(
        "test_named_insert",
        () => sql`INSERT INTO thread_named VALUES (${0}) RETURNING n, ${""}::text AS t`,
        [n, "x"],
      );
    expect(await insert(1)).toEqual([{ n: 1, t: "x" }]);
    expect(await insert(2)).toEqual([{ n: 2, t: "x" }]);
    // A unique violation: the error crosses with its code, and the next calls work.
    const failure = await insert(2).catch((error: unknown) => error as Error & { code?: string });
    expect((failure as { code?: string }).code).toBe("23505");
    expect(await insert(3)).toEqual([{ n: 3, t: "x" }]);
    // A statement that does not parse is not remembered: the same name works once it does.
    await expect(named("test_named_bad", () => sql`SELECT FROM nowhere_at_all`, [])).rejects.toThrow(
      /nowhere_at_all/,
    );
    expect(
      await named("test_named_count", () => sql`SELECT count(*)::int AS n FROM thread_named`, []),
    ).toEqual([{ n: 3 }]);

    const [, during] = await Promise.all([
      store.db
        .transaction(async (tx) => {
          await tx.execute(sql`INSERT INTO thread_named VALUES (10)`);
          await new Promise((resolve) => setTimeout(resolve, 50));
          throw new Error("rolled back");
        })
        .catch(() => {}),
      new Promise((resolve) => setTimeout(resolve, 10)).then(() => insert(11)),
    ]);
    expect(during).toEqual([{ n: 11, t: "x" }]);
    expect(
      await named("test_named_count", () => sql`SELECT count(*)::int AS n FROM thread_named`, []),
    ).toEqual([{ n: 4 }]);
  });

  it("records written in one statement keep the times their requests ended (the list's order)", async () => {
    const accountId =
      (await new AccountsRepository(store.db).insert({ email: "order@example.ch" }))?.id ?? "";
    const at = Date.parse("2026-11-24T10:00:00Z");
    const row = (requestId: string, createdMs: number) => ({
      ...usageRow(accountId, requestId, 1),
      createdMs,
    });
    await new BillingRepository(store.db).record([row("req_b_later", at + 5), row("req_a_first", at)]);
    const listed = await new UsageRepository(store.db).list({ accountId }, { limit: 10, offset: 0 });
    expect(listed.map((record) => record.requestId)).toEqual(["req_b_later", "req_a_first"]);
    expect(listed[1]?.createdAt.toISOString()).toBe("2026-11-24T10:00:00.000Z");
  });

  it("timestamps come back as Drizzle reads them (dates), json as objects, bigint as numbers", async () => {
    const account = await new AccountsRepository(store.db).insert({ email: "types@example.ch" });
    expect(account?.createdAt).toBeInstanceOf(Date);
    const result = await store.db.execute(sql`SELECT '{"a":[1]}'::jsonb AS j, 9007199254740991::bigint AS b`);
    expect(rows(result)[0]).toEqual({ j: { a: [1] }, b: 9007199254740991 });
  });

  it("a thread that has stopped answers as a database that is unavailable (a 503, not a 500)", async () => {
    const thread = await PgliteThread.start({ dataDir: undefined, sharedBuffers: "16MB" });
    await thread.close();
    const failure = await thread.query("SELECT 1").catch((error: unknown) => error);
    expect(databaseUnavailableCause(failure)).toBeDefined();
  });
});

describe("Usage journal of the embedded data folder", () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it(
    "records left in the journal by a process that died are written at the next open, once; a torn last line is skipped",
    async () => {
      const dataDir = mkdtempSync(join(tmpdir(), "zona-journal-"));
      dirs.push(dataDir);
      const first = await openStore({ dataDir });
      const accountId =
        (await new AccountsRepository(first.db).insert({ email: "journal@example.ch" }))?.id ?? "";
      const row = (requestId: string, costMicros: number) => usageRow(accountId, requestId, costMicros);
      // One record is in the database already (written before the crash), one only in the journal.
      await new BillingRepository(first.db).record([row("req_written", 7)]);
      first.usageJournal?.append([row("req_written", 7), row("req_journaled", 11)]);
      await first.close();
      const path = join(dataDir, "usage-journal.jsonl");
      writeFileSync(path, `${readFileSync(path, "utf8")}{"requestId":"req_torn","acc`);

      const second = await openStore({ dataDir });
      try {
        const usage = new UsageRepository(second.db);
        expect((await usage.find("req_written"))?.costMicros).toBe(7);
        expect((await usage.find("req_journaled"))?.costMicros).toBe(11);
        expect(await usage.find("req_torn")).toBeUndefined();
        expect(readFileSync(path, "utf8")).toBe("");
      } finally {
        await second.close();
      }
    },
    EMBEDDED_FOLDER_TEST_MS,
  );
});

describe("First start of an embedded data folder", () => {
  it(
    "a folder PGlite cannot create its files in fails the open with PGlite's reason, and releases the folder",
    async () => {
      const dataDir = mkdtempSync(join(tmpdir(), "zona-first-"));
      try {
        writeFileSync(join(dataDir, "pglite"), "not a folder");
        const failure = await openStore({ dataDir }).catch((error: unknown) => error as Error);
        expect(failure).toBeInstanceOf(Error);
        // PGlite's file system throws a bare errno object: the message names the folder and the reason.
        expect((failure as Error).message).toBe(`${join(dataDir, "pglite")}: not a folder (ENOTDIR)`);
        // The lock is released: the next open fails for the same reason, not as "busy".
        const again = await openStore({ dataDir }).catch((error: unknown) => error as Error);
        expect((again as Error).name).not.toBe("DataDirBusyError");
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
    EMBEDDED_FOLDER_TEST_MS,
  );
});
