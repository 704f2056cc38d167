import { randomBytes } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import pg from "pg";
import type { Store } from "../../src/store/database.ts";
import { type MemoryTemplate, memoryTemplate, openStore } from "../../src/store/open-store.ts";

/** The environment variable naming the file of the run's PGlite template (set by the global setup). */
export const PGLITE_TEMPLATE_ENV = "ZONA_TEST_PGLITE_TEMPLATE";

/** Writes a migrated, empty PGlite database to `file`, for every test process of the run. */
export async function writePgliteTemplate(file: string): Promise<void> {
  await writeFile(file, (await memoryTemplate()).archive);
}

let template: Promise<MemoryTemplate> | undefined;

/**
 * The migrated, empty database every PGlite test store starts as: the run's file, else one made in
 * this process. Creating a cluster and migrating it takes seconds; a copy of the template opens in
 * a fraction of that, with the same schema (a migration the template lacks is applied at open).
 */
function pgliteTemplate(): Promise<MemoryTemplate> {
  const file = process.env[PGLITE_TEMPLATE_ENV];
  template ??= file ? readFile(file).then((archive) => ({ archive })) : memoryTemplate();
  return template;
}

/** The databases storage tests run on: PGlite always, PostgreSQL when TEST_DATABASE_URL is set. */
export const STORE_KINDS: Array<"pglite" | "postgres"> = process.env.TEST_DATABASE_URL
  ? ["pglite", "postgres"]
  : ["pglite"];

/**
 * A fresh, empty, migrated store; PostgreSQL gets a database of its own that is dropped on close.
 * PGlite starts as a copy of the run's migrated template, or, with `migrateAtOpen`, as a new
 * cluster that the open migrates (for the tests of the migrations themselves).
 */
export async function openTestStore(
  kind: "pglite" | "postgres" = "pglite",
  options: { migrateAtOpen?: boolean } = {},
): Promise<Store> {
  if (kind === "pglite") {
    return openStore(
      options.migrateAtOpen ? { memory: true } : { memory: true, template: await pgliteTemplate() },
    );
  }
  const database = await createTestDatabase();
  const store = await openStore({ databaseUrl: database.url });
  return {
    ...store,
    async close() {
      await store.close();
      await database.drop();
    },
  };
}

/** A new empty PostgreSQL database on the TEST_DATABASE_URL server. */
export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const adminUrl = process.env.TEST_DATABASE_URL;
  if (!adminUrl) throw new Error("TEST_DATABASE_URL is not set");
  const name = `zona_test_${randomBytes(6).toString("hex")}`;
  await withAdminClient(adminUrl, (client) => client.query(`CREATE DATABASE ${name}`));
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      await withAdminClient(adminUrl, (client) =>
        client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
      );
    },
  };
}

async function withAdminClient<T>(url: string, run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}
