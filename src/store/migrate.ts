import { readdir, readFile } from "node:fs/promises";
import type { SqlSession } from "./database.ts";

const MIGRATIONS_DIR = new URL("./migrations/", import.meta.url);
// Any constant works; it only has to be the same for every Zona instance sharing a database.
const MIGRATION_LOCK_ID = 7_251_640_002;

/** The migrations' file names, in the order they apply. */
async function migrationFiles(): Promise<string[]> {
  return (await readdir(MIGRATIONS_DIR)).filter((name) => name.endsWith(".sql")).sort();
}

/** Whether some migration is not applied yet (a database without Zona's tables has them all to do). */
export async function hasPendingMigrations(session: Pick<SqlSession, "query">): Promise<boolean> {
  const files = await migrationFiles();
  const table = await session.query<{ present: boolean }>(
    "SELECT to_regclass('zona_migrations') IS NOT NULL AS present",
  );
  if (!table[0]?.present) return true;
  const done = new Set(
    (await session.query<{ name: string }>("SELECT name FROM zona_migrations")).map((row) => row.name),
  );
  return files.some((file) => !done.has(file));
}

/** Applies every SQL migration not yet applied, in name order, each in its own transaction. */
export async function migrate(session: SqlSession): Promise<string[]> {
  const files = await migrationFiles();
  const applied: string[] = [];
  // The advisory lock makes instances that start together apply the migrations once.
  await session.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK_ID]);
  try {
    await session.exec(
      "CREATE TABLE IF NOT EXISTS zona_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())",
    );
    const done = new Set(
      (await session.query<{ name: string }>("SELECT name FROM zona_migrations")).map((row) => row.name),
    );
    for (const file of files) {
      if (done.has(file)) continue;
      const text = await readFile(new URL(file, MIGRATIONS_DIR), "utf8");
      const name = file.replaceAll("'", "");
      await session.exec(`BEGIN;\n${text}\n;INSERT INTO zona_migrations (name) VALUES ('${name}');\nCOMMIT;`);
      applied.push(file);
    }
  } catch (error) {
    await session.exec("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    await session.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK_ID]);
  }
  return applied;
}
