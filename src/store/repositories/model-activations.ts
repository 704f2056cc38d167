import type { Database } from "../database.ts";
import { eq } from "../drizzle.ts";
import { modelActivations } from "../schema.ts";

/** Which on-request models are activated. */
export class ModelActivationsRepository {
  private readonly db: Database;
  constructor(db: Database) {
    this.db = db;
  }

  async active(): Promise<Set<string>> {
    const rows = await this.db.select({ modelId: modelActivations.modelId }).from(modelActivations);
    return new Set(rows.map((row) => row.modelId));
  }

  async activate(modelId: string): Promise<void> {
    await this.db.insert(modelActivations).values({ modelId }).onConflictDoNothing();
  }

  async deactivate(modelId: string): Promise<void> {
    await this.db.delete(modelActivations).where(eq(modelActivations.modelId, modelId));
  }
}
