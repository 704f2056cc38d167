import type { Database } from "../database.ts";
import { eq } from "../drizzle.ts";
import { serviceSecrets } from "../schema.ts";

/** Secrets the service makes once and every instance shares (kept in the database, never in files). */
export class ServiceSecretsRepository {
  private readonly db: Database;
  constructor(db: Database) {
    this.db = db;
  }

  /** The secret of a name; the first caller's `make()` wins when several instances start at once. */
  async getOrCreate(name: string, make: () => string): Promise<string> {
    await this.db.insert(serviceSecrets).values({ name, value: make() }).onConflictDoNothing();
    const rows = await this.db.select().from(serviceSecrets).where(eq(serviceSecrets.name, name));
    const row = rows[0];
    if (!row) throw new Error(`service secret ${name} could not be stored`);
    return row.value;
  }
}
