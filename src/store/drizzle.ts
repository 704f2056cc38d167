// Drizzle ORM, loaded as CommonJS. Node's ES module loader looks up the package scope of every file
// it loads and re-reads drizzle-orm's 179 kB package.json (its exports map) for each of its ~100
// files: 650 ms of every start, on a small machine. Its CommonJS build loads in 75 ms. Every runtime
// import of drizzle-orm in src/ goes through here (types may come from "drizzle-orm" directly), so
// there is one copy of its classes.
import { createRequire } from "node:module";
import type * as Orm from "drizzle-orm";
import type * as NodePostgres from "drizzle-orm/node-postgres";
import type * as PgCore from "drizzle-orm/pg-core";
import type * as Pglite from "drizzle-orm/pglite";

const require = createRequire(import.meta.url);
const orm = require("drizzle-orm") as typeof Orm;
const pgCore = require("drizzle-orm/pg-core") as typeof PgCore;

export const { and, asc, count, desc, eq, gt, inArray, isNull, lt, lte, ne, or, sql } = orm;
export const {
  bigint,
  boolean,
  customType,
  index,
  integer,
  jsonb,
  PgDialect,
  pgTable,
  primaryKey,
  real,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} = pgCore;

/** The node-postgres driver (distributed mode). */
export function drizzlePostgres(
  ...args: Parameters<typeof NodePostgres.drizzle>
): ReturnType<typeof NodePostgres.drizzle> {
  return (require("drizzle-orm/node-postgres") as typeof NodePostgres).drizzle(...args);
}

/** The PGlite driver (embedded mode); loaded on first use, as it brings PGlite's JavaScript along. */
export function drizzlePglite(...args: Parameters<typeof Pglite.drizzle>): ReturnType<typeof Pglite.drizzle> {
  return (require("drizzle-orm/pglite") as typeof Pglite).drizzle(...args);
}
