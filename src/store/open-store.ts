import { join } from "node:path";
import { drizzle as drizzlePostgres } from "drizzle-orm/node-postgres";
import pg from "pg";
import { lockDataDir } from "./data-dir-lock.ts";
import type { Database, SqlSession, Store } from "./database.ts";
import { migrate } from "./migrate.ts";
import * as schema from "./schema.ts";

/** Where the data lives: PostgreSQL when a URL is given, else PGlite in a folder, or in memory (tests). */
export type StoreOptions = { databaseUrl: string } | { dataDir: string } | { memory: true };

/** Opens the database, applies the migrations and returns the store. */
export async function openStore(options: StoreOptions): Promise<Store> {
  if ("databaseUrl" in options) return openPostgres(options.databaseUrl);
  if ("dataDir" in options) return openPglite(options.dataDir);
  return openPglite(undefined);
}

const PGLITE_SHARED_BUFFERS = "16MB";

async function openPglite(dataDir: string | undefined): Promise<Store> {
  const lock = dataDir === undefined ? undefined : lockDataDir(dataDir);
  try {
    // Loaded only in embedded mode: PGlite alone takes some 190 MB, which a server on PostgreSQL does without.
    const [{ PGlite }, { drizzle: drizzlePglite }] = await Promise.all([
      import("@electric-sql/pglite"),
      import("drizzle-orm/pglite"),
    ]);
    const client = await PGlite.create({
      ...(dataDir === undefined ? {} : { dataDir: join(dataDir, "pglite") }),
      // PostgreSQL's default 128 MB of shared buffers would sit in Zona's own memory (the WASM heap);
      // the operating system caches the data folder anyway, so a small pool costs little speed and
      // keeps some 100 MB out of the process.
      startParams: [...PGlite.defaultStartParams, "-c", `shared_buffers=${PGLITE_SHARED_BUFFERS}`],
    });
    await migrate({
      exec: async (text) => {
        await client.exec(text);
      },
      query: async <T>(text: string, params?: unknown[]) => (await client.query<T>(text, params)).rows,
      release: async () => {},
    });
    const db = drizzlePglite({ client, schema }) as unknown as Database;
    return {
      db,
      kind: "pglite",
      announce: (url) => lock?.update({ url }),
      async close() {
        await client.close();
        lock?.release();
      },
    };
  } catch (error) {
    lock?.release();
    throw error;
  }
}

async function openPostgres(url: string): Promise<Store> {
  const pool = new pg.Pool({ connectionString: url, max: 20 });
  // An idle connection dropped by the server (restart, failover) must not crash the process:
  // the pool discards it and the next query opens a new one.
  pool.on("error", () => {});
  try {
    const client = await pool.connect();
    const session: SqlSession = {
      exec: async (text) => {
        await client.query(text);
      },
      query: async <T>(text: string, params?: unknown[]) => (await client.query(text, params)).rows as T[],
      release: async () => client.release(),
    };
    try {
      await migrate(session);
    } finally {
      await session.release();
    }
  } catch (error) {
    await pool.end();
    throw error;
  }
  const db = drizzlePostgres({ client: pool, schema }) as unknown as Database;
  return { db, kind: "postgres", announce: () => {}, close: () => pool.end() };
}
