import { join } from "node:path";
import { drizzle as drizzlePostgres } from "drizzle-orm/node-postgres";
import pg from "pg";
import { lockDataDir } from "./data-dir-lock.ts";
import type { Database, SqlSession, Store } from "./database.ts";
import { migrate } from "./migrate.ts";
import * as schema from "./schema.ts";

/** PostgreSQL could not be reached or refused the connection at start; the message names where, never the password. */
export class DatabaseUnreachableError extends Error {
  override name = "DatabaseUnreachableError";
}

// A server that swallows packets would keep the start waiting for ever (pg's own default).
const CONNECT_WAIT_MS = 15_000;

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
    // pgvector comes with it (a 50 kB bundle, no measurable start cost); migration 0008 creates it.
    const [{ PGlite }, { drizzle: drizzlePglite }, { vector }] = await Promise.all([
      import("@electric-sql/pglite"),
      import("drizzle-orm/pglite"),
      import("@electric-sql/pglite-pgvector"),
    ]);
    const client = await PGlite.create({
      ...(dataDir === undefined ? {} : { dataDir: join(dataDir, "pglite") }),
      extensions: { vector },
      // PostgreSQL's default 128 MB of shared buffers would sit in Zona's own memory (the WASM heap);
      // the operating system caches the data folder anyway, so a small pool costs little speed and
      // keeps some 100 MB out of the process.
      startParams: [...PGlite.defaultStartParams, "-c", `shared_buffers=${PGLITE_SHARED_BUFFERS}`],
    });
    const query = async <T>(text: string, params?: unknown[]) => (await client.query<T>(text, params)).rows;
    await migrate({
      exec: async (text) => {
        await client.exec(text);
      },
      query,
      release: async () => {},
    });
    const migrations = await countMigrations(query);
    const db = drizzlePglite({ client, schema }) as unknown as Database;
    return {
      db,
      kind: "pglite",
      announce: (url) => lock?.update({ url }),
      ping: () => checkMigrations(query, migrations),
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
  // A server that does not answer a connection must not hold a request longer than this.
  const pool = new pg.Pool({ connectionString: url, max: 20, connectionTimeoutMillis: 5_000 });
  // A connection dropped by the server (restart, failover) must not crash the process. The pool
  // hears it for idle clients; a client checked out between two statements of a transaction
  // emits it on itself, so every client gets a listener too. The failed statement rejects
  // (a 503 for its request), the pool drops the dead client, and the next query opens a new one.
  pool.on("error", () => {});
  pool.on("connect", (client) => client.on("error", () => {}));
  let migrations: number;
  try {
    const client = await connectFirst(pool, url);
    const session: SqlSession = {
      exec: async (text) => {
        await client.query(text);
      },
      query: async <T>(text: string, params?: unknown[]) => (await client.query(text, params)).rows as T[],
      release: async () => client.release(),
    };
    try {
      await migrate(session);
      migrations = await countMigrations(session.query);
    } finally {
      await session.release();
    }
  } catch (error) {
    await pool.end().catch(() => {});
    throw error;
  }
  const db = drizzlePostgres({ client: pool, schema }) as unknown as Database;
  const query = async <T>(text: string) => (await pool.query(text)).rows as T[];
  return {
    db,
    kind: "postgres",
    announce: () => {},
    ping: () => checkMigrations(query, migrations),
    close: () => pool.end(),
  };
}

/** The pool's first connection, or DatabaseUnreachableError naming the server and why. */
async function connectFirst(pool: pg.Pool, url: string): Promise<pg.PoolClient> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no answer within ${CONNECT_WAIT_MS / 1000} s`)),
      CONNECT_WAIT_MS,
    );
  });
  const connecting = pool.connect();
  try {
    return await Promise.race([connecting, late]);
  } catch (error) {
    // A connection that arrives after the wait goes back to the pool, which is being ended.
    connecting.then(
      (client) => client.release(),
      () => {},
    );
    throw new DatabaseUnreachableError(`cannot reach the database at ${whereIs(url)} (${reasonOf(error)})`);
  } finally {
    clearTimeout(timer);
  }
}

/** `host:port/database` of a connection URL: what an operator needs, without user or password. */
function whereIs(url: string): string {
  try {
    const parsed = new URL(url);
    const host = parsed.searchParams.get("host") ?? parsed.hostname;
    return `${host}:${parsed.port || "5432"}${parsed.pathname === "/" ? "" : parsed.pathname}`;
  } catch {
    return "the configured address";
  }
}

/** A network error's code (ECONNREFUSED...), else the server's own message (which never holds the password). */
function reasonOf(error: unknown): string {
  const failure = error as { code?: unknown; message?: unknown; errors?: Array<{ code?: unknown }> };
  // Node tries every address of a name; the AggregateError it gives carries the codes inside.
  const code = failure.code ?? failure.errors?.[0]?.code;
  if (typeof code === "string" && /^E[A-Z]+$/.test(code)) return code;
  return typeof failure.message === "string" && failure.message !== "" ? failure.message : String(error);
}

type Query = <T>(text: string) => Promise<T[]>;

async function countMigrations(query: Query): Promise<number> {
  const rows = await query<{ n: number }>("SELECT count(*)::int AS n FROM zona_migrations");
  return rows[0]?.n ?? 0;
}

/** Readiness of the database: it answers, and still holds the migrations seen at start. */
async function checkMigrations(query: Query, expected: number): Promise<void> {
  const found = await countMigrations(query);
  if (found < expected) throw new Error(`migrations not applied (${found} of ${expected})`);
}
