import { randomBytes } from "node:crypto";
import pg from "pg";
import type { Store } from "../../src/store/database.ts";
import { openStore } from "../../src/store/open-store.ts";

/** The databases storage tests run on: PGlite always, PostgreSQL when TEST_DATABASE_URL is set. */
export const STORE_KINDS: Array<"pglite" | "postgres"> = process.env.TEST_DATABASE_URL
  ? ["pglite", "postgres"]
  : ["pglite"];

/** A fresh, empty, migrated store; PostgreSQL gets a database of its own that is dropped on close. */
export async function openTestStore(kind: "pglite" | "postgres" = "pglite"): Promise<Store> {
  if (kind === "pglite") return openStore({ memory: true });
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
