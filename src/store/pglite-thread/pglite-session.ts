import type { SqlSession } from "../database.ts";

/** What the migrator needs of a PGlite client: PGlite itself or the thread that holds it. */
interface PgliteClient {
  query(text: string, params?: unknown[]): Promise<{ rows: unknown[] }>;
  exec(text: string): Promise<unknown>;
}

/** The migrator's raw SQL over a PGlite client (one connection: nothing to release). */
export function pgliteSession(client: PgliteClient): SqlSession {
  return {
    exec: async (text) => {
      await client.exec(text);
    },
    query: async <T>(text: string, params?: unknown[]) => (await client.query(text, params)).rows as T[],
    release: async () => {},
  };
}
