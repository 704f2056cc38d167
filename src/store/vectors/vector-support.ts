import type { Database } from "../database.ts";
import { sql } from "../drizzle.ts";

/** How a store finds the passages nearest a vector: pgvector in the database, or an exact scan in the process. */
export type VectorPath = "pgvector" | "scan";

/** What the database offers for vector search, found once per store. */
export type VectorSupport =
  | {
      path: "pgvector";
      /** pgvector 0.8 or later: an HNSW scan filtered by base keeps going until it has k rows. */
      iterativeScan: boolean;
    }
  | { path: "scan" };

// Keyed by the Drizzle database, which lives as long as its store.
const detected = new WeakMap<Database, Promise<VectorSupport>>();

/** Whether migration 0008 could install pgvector in this store's database (asked once, then remembered). */
export function vectorSupport(db: Database): Promise<VectorSupport> {
  let found = detected.get(db);
  if (found === undefined) {
    found = detect(db);
    detected.set(db, found);
    // A database that did not answer is asked again next time, not taken for one without pgvector.
    found.catch(() => detected.delete(db));
  }
  return found;
}

async function detect(db: Database): Promise<VectorSupport> {
  const result = await db.execute(sql`SELECT extversion FROM pg_extension WHERE extname = 'vector'`);
  const version = (result as unknown as { rows: Array<{ extversion: string }> }).rows[0]?.extversion;
  if (version === undefined) return { path: "scan" };
  const [major = 0, minor = 0] = version.split(".").map(Number);
  return { path: "pgvector", iterativeScan: major > 0 || minor >= 8 };
}
