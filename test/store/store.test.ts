import { cpSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { hashApiKey } from "../../src/auth/api-key-format.ts";
import { DataDirBusyError } from "../../src/store/data-dir-lock.ts";
import type { Store } from "../../src/store/database.ts";
import { openStore } from "../../src/store/open-store.ts";
import { AccountsRepository } from "../../src/store/repositories/accounts.ts";
import { ApiKeysRepository } from "../../src/store/repositories/api-keys.ts";
import { CreditsRepository } from "../../src/store/repositories/credits.ts";
import { createTestDatabase, openTestStore, STORE_KINDS } from "../helpers/test-store.ts";

const MIGRATIONS = readdirSync(new URL("../../src/store/migrations/", import.meta.url)).filter((f) =>
  f.endsWith(".sql"),
);

async function migrationNames(store: Store): Promise<string[]> {
  const result = await store.db.execute(sql`SELECT name FROM zona_migrations ORDER BY name`);
  return (result as unknown as { rows: Array<{ name: string }> }).rows.map((row) => row.name);
}

describe.each(STORE_KINDS)("Storage repositories (%s)", (kind) => {
  let store: Store;
  beforeAll(async () => {
    // A new cluster that the open migrates, not a copy of the tests' migrated template.
    store = await openTestStore(kind, { migrateAtOpen: true });
  });
  afterAll(() => store.close());

  it("applies every migration at open", async () => {
    expect(await migrationNames(store)).toEqual(MIGRATIONS);
  });

  it("accounts: email unique case-insensitively, found in any case", async () => {
    const repo = new AccountsRepository(store.db);
    const first = await repo.insert({ email: "Anna@Example.ch" });
    expect(first?.email).toBe("Anna@Example.ch");
    expect(await repo.insert({ email: "anna@example.CH" })).toBeUndefined();
    expect((await repo.findByEmail("ANNA@example.ch"))?.id).toBe(first?.id);
  });

  it("keys: found by hash together with the state of their account", async () => {
    const account = await new AccountsRepository(store.db).insert({
      email: "keys-repo@example.ch",
      disabled: true,
    });
    const repo = new ApiKeysRepository(store.db);
    const hash = hashApiKey("sk-test-secret");
    await repo.insert({
      accountId: account?.id ?? "",
      name: "k",
      displayPrefix: "sk-test-...",
      keyHash: hash,
      zones: ["ch-ti", "ch-zh"],
      monthlyLimitMicros: 12_500_000,
    });
    const found = await repo.findByHash(hash);
    expect(found).toMatchObject({
      accountDisabled: true,
      key: { zones: ["ch-ti", "ch-zh"], monthlyLimitMicros: 12_500_000, revokedAt: null },
    });
    expect(await repo.findByHash(hashApiKey("sk-other"))).toBeUndefined();
  });

  it("credits: 40 concurrent changes, each written once, the ledger adding up to the balance", async () => {
    const account = await new AccountsRepository(store.db).insert({ email: "ledger@example.ch" });
    const id = account?.id ?? "";
    const repo = new CreditsRepository(store.db);
    await Promise.all(
      Array.from({ length: 40 }, (_, i) => repo.add(id, i % 2 === 0 ? 3_000_000 : 1_000_000, null)),
    );
    expect((await repo.balance(id)).balanceMicros).toBe(80_000_000);
    const ledger = await repo.ledger(id, 100);
    expect(ledger).toHaveLength(40);
    expect(ledger.reduce((sum, entry) => sum + entry.amountMicros, 0)).toBe(80_000_000);
    expect(await repo.add(id, -80_000_001, null)).toBeUndefined();
    expect(await repo.set(id, 5, "reset")).toEqual({ balanceMicros: 5, heldMicros: 0 });
    expect(await repo.balance(id)).toEqual({ balanceMicros: 5, heldMicros: 0 });
  });
});

describe("Storage: PGlite in ZONA_DATA_DIR", () => {
  // A data folder made once (its first open creates the cluster and migrates it in a process of
  // its own, seconds); each test works on a copy of it.
  let first: string;
  beforeAll(async () => {
    first = mkdtempSync(join(tmpdir(), "zona-store-first-"));
    await (await openStore({ dataDir: first })).close();
  });
  afterAll(() => rmSync(first, { recursive: true, force: true }));
  // Each data folder holds a whole database: removed after its test, also when it failed.
  const made: string[] = [];
  const newDataDir = (prefix: string) => {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    made.push(dir);
    cpSync(first, dir, { recursive: true });
    return dir;
  };
  afterEach(() => {
    for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it("keeps data across a restart", async () => {
    const dataDir = newDataDir("zona-store-");
    const first = await openStore({ dataDir });
    await new AccountsRepository(first.db).insert({ email: "persist@example.ch" });
    await first.close();
    const second = await openStore({ dataDir });
    try {
      expect(await new AccountsRepository(second.db).findByEmail("persist@example.ch")).toBeDefined();
      expect(await migrationNames(second)).toEqual(MIGRATIONS);
    } finally {
      await second.close();
    }
  });

  it("lets one process at a time hold the folder, and takes over a lock left by a dead process", async () => {
    const dataDir = newDataDir("zona-lock-");
    const store = await openStore({ dataDir });
    store.announce("http://127.0.0.1:9999");
    try {
      writeFileSync(join(dataDir, "probe"), "");
      // A second open in this process must fail too: the lock names a live pid that is not a stale one.
      const lockPath = join(dataDir, "zona.lock");
      writeFileSync(
        lockPath,
        JSON.stringify({ pid: process.ppid, started_at: "x", url: "http://127.0.0.1:9999" }),
      );
      await expect(openStore({ dataDir })).rejects.toBeInstanceOf(DataDirBusyError);
      await expect(openStore({ dataDir })).rejects.toThrow(/in use by another Zona process .*9999/);
    } finally {
      await store.close();
    }
    writeFileSync(join(dataDir, "zona.lock"), JSON.stringify({ pid: 2 ** 22 + 17, started_at: "x" }));
    const again = await openStore({ dataDir });
    await again.close();
  });
});

describe.skipIf(!process.env.TEST_DATABASE_URL)("Storage: PostgreSQL through DATABASE_URL", () => {
  it("instances starting together apply the migrations once", async () => {
    const database = await createTestDatabase();
    try {
      const stores = await Promise.all([1, 2, 3].map(() => openStore({ databaseUrl: database.url })));
      expect(await migrationNames(stores[0] as Store)).toEqual(MIGRATIONS);
      await Promise.all(stores.map((s) => s.close()));
      const reopened = await openStore({ databaseUrl: database.url });
      expect(await migrationNames(reopened)).toEqual(MIGRATIONS);
      await reopened.close();
    } finally {
      await database.drop();
    }
  });
});
