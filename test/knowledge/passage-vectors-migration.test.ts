/**
 * Migration 0008: pgvector and the passages' HNSW index where the database offers the
 * extension, and a migration that passes where it does not, or where the role may not create it.
 */
import { readFileSync } from "node:fs";
import { PGlite } from "@electric-sql/pglite";
import { vector } from "@electric-sql/pglite-pgvector";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const MIGRATION = readFileSync(
  new URL("../../src/store/migrations/0008_passage_vectors.sql", import.meta.url),
  "utf8",
);

/** The migration as migrate.ts runs it: in one transaction. */
const runMigration = (db: PGlite) => db.exec(`BEGIN;\n${MIGRATION}\n;COMMIT;`);

async function state(db: PGlite) {
  const extension = await db.query("SELECT 1 FROM pg_extension WHERE extname = 'vector'");
  const index = await db.query("SELECT 1 FROM pg_indexes WHERE indexname = 'kb_passages_embedding_idx'");
  return { extension: extension.rows.length === 1, index: index.rows.length === 1 };
}

describe("Migration 0008: passage vectors", () => {
  let db: PGlite;
  beforeAll(async () => {
    db = await PGlite.create({ extensions: { vector } });
    // A role like an application's on a managed PostgreSQL: owns its tables, may not create extensions.
    await db.exec(`
      CREATE ROLE zona_app NOSUPERUSER;
      GRANT CREATE ON SCHEMA public TO zona_app;
      CREATE TABLE kb_passages (id int PRIMARY KEY, embedding real[] NOT NULL);
      ALTER TABLE kb_passages OWNER TO zona_app;
    `);
  });
  afterAll(() => db.close());

  it("passes without creating anything when the role may not create the extension", async () => {
    await db.exec("SET ROLE zona_app");
    await runMigration(db);
    await db.exec("RESET ROLE");
    expect(await state(db)).toEqual({ extension: false, index: false });
  });

  it("creates the extension and the HNSW index where it can, and may run again", async () => {
    await runMigration(db);
    expect(await state(db)).toEqual({ extension: true, index: true });
    await runMigration(db);
    expect(await state(db)).toEqual({ extension: true, index: true });
  });
});
