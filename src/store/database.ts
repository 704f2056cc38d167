import type { SQL } from "drizzle-orm";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import type * as schema from "./schema.ts";
import type { UsageJournal } from "./usage-journal.ts";

/** The Drizzle database both drivers (PGlite and node-postgres) give: one query builder for both. */
export type Database = PgDatabase<PgQueryResultHKT, typeof schema>;

/** Raw SQL access used by the migrator, whichever driver is underneath. */
export interface SqlSession {
  /** Runs one or more statements without parameters. */
  exec(text: string): Promise<void>;
  /** Runs one statement with parameters and returns its rows. */
  query<T>(text: string, params?: unknown[]): Promise<T[]>;
  release(): Promise<void>;
}

/** An open database with the schema applied. */
export interface Store {
  db: Database;
  kind: "pglite" | "postgres";
  /**
   * Embedded mode: where usage records become durable before the database has them (replayed at
   * open). Undefined for PostgreSQL, where instances come and go and the database is the record.
   */
  usageJournal?: UsageJournal;
  /**
   * Embedded mode: a folder only this process uses, for uploaded files waiting to be read (in the
   * data folder; a temporary one, removed at close, for a database in memory).
   */
  filesDir?: string;
  /**
   * Runs a statement as a named prepared statement, which each connection (PGlite's one session, or
   * each of PostgreSQL's pooled connections) parses and plans once instead of at every call (for a
   * hot statement whose text never varies under its name, only its parameters); its rows. The
   * text is built by `statement` once per name; `params` are bound at each call, in its order.
   */
  named?(name: string, statement: () => SQL, params: unknown[]): Promise<unknown[]>;
  /** Tells other processes (the `zona` command) where the server holding this store listens. */
  announce(url: string): void;
  /**
   * Readiness: resolves when the database answers a query and holds every migration this process
   * applied or found at start; rejects with the reason otherwise.
   */
  ping(): Promise<void>;
  close(): Promise<void>;
}
