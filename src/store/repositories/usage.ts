import type { SQL } from "drizzle-orm";
import type { Database } from "../database.ts";
import { and, desc, eq, sql } from "../drizzle.ts";
import { keyMonthSpend, usageRecords } from "../schema.ts";
import type { UsageRow } from "./billing.ts";

/** Which usage records to read. */
export interface UsageFilter {
  accountId?: string;
  keyId?: string;
  month?: string;
}

/** Cost and count of one endpoint and model in a month. */
export interface UsageGroup {
  endpoint: string;
  model: string | null;
  requests: number;
  costMicros: number;
}

/** Reads usage records for operators. */
export class UsageRepository {
  private readonly db: Database;
  constructor(db: Database) {
    this.db = db;
  }

  async list(filter: UsageFilter, page: { limit: number; offset: number }): Promise<UsageRow[]> {
    return this.db
      .select()
      .from(usageRecords)
      .where(where(filter))
      .orderBy(desc(usageRecords.createdAt), desc(usageRecords.requestId))
      .limit(page.limit)
      .offset(page.offset);
  }

  async find(requestId: string): Promise<UsageRow | undefined> {
    const rows = await this.db.select().from(usageRecords).where(eq(usageRecords.requestId, requestId));
    return rows[0];
  }

  async groups(filter: UsageFilter): Promise<UsageGroup[]> {
    return this.db
      .select({
        endpoint: usageRecords.endpoint,
        model: usageRecords.model,
        requests: sql<number>`count(*)::int`,
        costMicros: sql<number>`coalesce(sum(${usageRecords.costMicros}), 0)::bigint`.mapWith(Number),
      })
      .from(usageRecords)
      .where(where(filter))
      .groupBy(usageRecords.endpoint, usageRecords.model)
      .orderBy(usageRecords.endpoint, usageRecords.model);
  }

  /** What a key spent and holds in a month. */
  async keySpend(keyId: string, month: string): Promise<{ spentMicros: number; reservedMicros: number }> {
    const rows = await this.db
      .select({ spentMicros: keyMonthSpend.spentMicros, reservedMicros: keyMonthSpend.reservedMicros })
      .from(keyMonthSpend)
      .where(and(eq(keyMonthSpend.keyId, keyId), eq(keyMonthSpend.month, month)));
    return rows[0] ?? { spentMicros: 0, reservedMicros: 0 };
  }
}

function where(filter: UsageFilter): SQL | undefined {
  const conditions: SQL[] = [];
  if (filter.accountId) conditions.push(eq(usageRecords.accountId, filter.accountId));
  if (filter.keyId) conditions.push(eq(usageRecords.keyId, filter.keyId));
  if (filter.month) conditions.push(eq(usageRecords.month, filter.month));
  return conditions.length > 0 ? and(...conditions) : undefined;
}
