import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { lockDataDir } from "./data-dir-lock.ts";
import type { Database, SqlSession, Store } from "./database.ts";
import { drizzlePglite, drizzlePostgres, PgDialect } from "./drizzle.ts";
import { hasPendingMigrations, migrate } from "./migrate.ts";
import { migrateInOwnProcess } from "./pglite-thread/migrate-in-own-process.ts";
import { pgliteSession } from "./pglite-thread/pglite-session.ts";
import { PgliteThread } from "./pglite-thread/pglite-thread.ts";
import { BillingRepository } from "./repositories/billing.ts";
import * as schema from "./schema.ts";
import { FileUsageJournal, MemoryUsageJournal, replayJournal } from "./usage-journal.ts";

/** PostgreSQL could not be reached or refused the connection at start; the message names where, never the password. */
export class DatabaseUnreachableError extends Error {
  override name = "DatabaseUnreachableError";
}

// A server that swallows packets would keep the start waiting for ever (pg's own default).
const CONNECT_WAIT_MS = 15_000;

/**
 * Where the data lives: PostgreSQL when a URL is given, else PGlite in a folder, or in memory
 * (tests), there optionally as a copy of a template (`memoryTemplate`) instead of a new cluster.
 */
export type StoreOptions =
  | { databaseUrl: string }
  | { dataDir: string }
  | { memory: true; template?: MemoryTemplate };

/** Opens the database, applies the migrations and returns the store. */
export async function openStore(options: StoreOptions): Promise<Store> {
  if ("databaseUrl" in options) return openPostgres(options.databaseUrl);
  if ("dataDir" in options) return openPglite(options.dataDir);
  return openPglite(undefined, options.template);
}

/** A migrated, empty database in memory as PGlite's archive of its data folder. */
export interface MemoryTemplate {
  archive: Uint8Array;
}

/**
 * An empty database in memory with every migration applied, kept as an archive: a store opened in
 * memory from it skips creating the cluster and migrating (seconds each time, for the tests' many
 * stores). Migrations it lacks are still applied at open.
 */
export async function memoryTemplate(): Promise<MemoryTemplate> {
  const thread = await PgliteThread.start({ dataDir: undefined, sharedBuffers: PGLITE_SHARED_BUFFERS });
  try {
    await migrate(pgliteSession(thread));
    // Written out to the data files, so that a copy does not replay the write-ahead log at its start.
    await thread.exec("CHECKPOINT");
    return { archive: await thread.dump() };
  } finally {
    await thread.close();
  }
}

const PGLITE_SHARED_BUFFERS = "16MB";
const USAGE_JOURNAL_FILE = "usage-journal.jsonl";

async function openPglite(dataDir: string | undefined, template?: MemoryTemplate): Promise<Store> {
  const lock = dataDir === undefined ? undefined : lockDataDir(dataDir);
  let thread: PgliteThread | undefined;
  try {
    const options = {
      dataDir: dataDir === undefined ? undefined : join(dataDir, "pglite"),
      sharedBuffers: PGLITE_SHARED_BUFFERS,
      ...(template === undefined ? {} : { template: template.archive }),
    };
    if (options.dataDir !== undefined && !existsSync(join(options.dataDir, "PG_VERSION"))) {
      await migrateInOwnProcess(options.dataDir, PGLITE_SHARED_BUFFERS);
    }
    thread = await PgliteThread.start(options);
    if (await hasPendingMigrations(pgliteSession(thread))) {
      if (options.dataDir === undefined) await migrate(pgliteSession(thread));
      else {
        // A new version's migrations: applied by a process of their own, as on a first start.
        await thread.close();
        thread = undefined;
        await migrateInOwnProcess(options.dataDir, PGLITE_SHARED_BUFFERS);
        thread = await PgliteThread.start(options);
      }
    }
    const session = pgliteSession(thread);
    const migrations = await countMigrations(session.query);
    // Drizzle's PGlite driver only calls query, exec and transaction, which the thread provides.
    const db = drizzlePglite({ client: thread as never, schema }) as unknown as Database;
    const journal =
      dataDir === undefined
        ? new MemoryUsageJournal()
        : new FileUsageJournal(join(dataDir, USAGE_JOURNAL_FILE));
    await replayJournal(journal, new BillingRepository(db)).catch((error: unknown) => {
      journal.close();
      throw error;
    });
    const open = thread;
    const filesDir =
      dataDir === undefined
        ? join(tmpdir(), `zona-files-${randomBytes(8).toString("hex")}`)
        : join(dataDir, "files");
    return {
      db,
      kind: "pglite",
      named: namedVia(async (name, text, params) => (await open.named(name, text, params)).rows),
      usageJournal: journal,
      filesDir,
      announce: (url) => lock?.update({ url }),
      ping: () => checkMigrations(session.query, migrations),
      async close() {
        journal.close();
        await open.close();
        if (dataDir === undefined) await rm(filesDir, { recursive: true, force: true });
        lock?.release();
      },
    };
  } catch (error) {
    await thread?.close().catch(() => {});
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
    named: namedVia(async (name, text, values) => (await pool.query({ name, text, values })).rows),
    announce: () => {},
    ping: () => checkMigrations(query, migrations),
    close: () => pool.end(),
  };
}

/** `Store.named` over a session that runs a statement's text under its name; each text is built once. */
function namedVia(
  run: (name: string, text: string, params: unknown[]) => Promise<unknown[]>,
): NonNullable<Store["named"]> {
  const dialect = new PgDialect();
  const texts = new Map<string, string>();
  return (name, statement, params) => {
    let text = texts.get(name);
    if (text === undefined) {
      text = dialect.sqlToQuery(statement()).sql;
      texts.set(name, text);
    }
    return run(name, text, params);
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
