import type { Database, Store } from "../database.ts";
import { and, eq, lt, sql } from "../drizzle.ts";
import { creditBalances, keyMonthSpend, reservations, usageRecords } from "../schema.ts";
import { balanceLeft, creditsFree } from "./credits-left.ts";
import { totalsOf, usageBatchStatement, writtenRecords } from "./usage-batch-statement.ts";
import type { RecordedTotals, UsageRecordRow, WrittenRecord } from "./usage-writes.ts";

/** A reservation as stored. */
export type ReservationRow = typeof reservations.$inferSelect;
/** A usage record as stored. */
export type UsageRow = typeof usageRecords.$inferSelect;

/** Why a reservation was refused. */
export type ReserveRefusal = "spending_limit_reached" | "insufficient_credits";

/** A reservation closed by `settle`, and the usage record it left (none when written before). */
export interface Settled {
  reservation: ReservationRow;
  record: UsageRow | undefined;
  /** The key's month spend and the account's prepaid spend as the settlement left them. */
  totals: RecordedTotals;
}

/** What PostgreSQL holds of one key month or one account when Redis's copy is (re)loaded. */
export interface MoneyOfRecord {
  /** The key month's spend, or what the account is credited. */
  micros: number;
  /** The account's prepaid spend (the key month's spend again for a key month). */
  spentMicros: number;
  /** The version of what the account is credited (0 for a key month). */
  version: number;
  /** The durable reservations (videos) that hold money of it. */
  durable: ReservationRow[];
}

/** What settling writes besides the money: the usage record's measured facts. */
export interface SettleFacts {
  costMicros: number;
  units: Record<string, number>;
  outcome: string;
  zone: string | null;
  machine: string | null;
  durationMs: number | null;
}

/**
 * The money moves of a request, each one atomic: reserve the highest possible cost against the
 * key's monthly limit and the account's credits; settle to the real cost or release it, once.
 */
export class BillingRepository {
  private readonly db: Database;
  private readonly named: Store["named"];
  /** `named`: the store's prepared statements (PostgreSQL), for the batch of usage records. */
  constructor(db: Database, named?: Store["named"]) {
    this.db = db;
    this.named = named;
  }

  /**
   * Holds `amountMicros` for a request, or says why not. Each check is a conditional UPDATE, which
   * PostgreSQL serialises on the row: concurrent requests cannot both take the last room.
   */
  async reserve(
    row: typeof reservations.$inferInsert,
    monthlyLimitMicros: number | null,
    options: { unchecked?: boolean } = {},
  ): Promise<ReserveRefusal | undefined> {
    try {
      await this.db.transaction(async (tx) => {
        const amount = row.amountMicros;
        // A request of the app API has no key, so no key's monthly limit: only credits can refuse it.
        if (row.keyId !== null && row.keyId !== undefined) {
          const keyId = row.keyId;
          await tx.insert(keyMonthSpend).values({ keyId, month: row.month }).onConflictDoNothing();
          const limit =
            monthlyLimitMicros === null || options.unchecked
              ? sql`TRUE`
              : sql`${keyMonthSpend.spentMicros} + ${keyMonthSpend.reservedMicros} + ${amount} <= ${monthlyLimitMicros}`;
          const spend = await tx
            .update(keyMonthSpend)
            .set({ reservedMicros: sql`${keyMonthSpend.reservedMicros} + ${amount}` })
            .where(and(eq(keyMonthSpend.keyId, keyId), eq(keyMonthSpend.month, row.month), limit))
            .returning({ keyId: keyMonthSpend.keyId });
          if (spend.length === 0) throw new Refused("spending_limit_reached");
        }
        if (row.prepaid) {
          // "No credits left" refuses even a request that would cost nothing.
          const needed = options.unchecked ? Number.MIN_SAFE_INTEGER : Math.max(amount, 1);
          const held = await tx
            .update(creditBalances)
            .set({ heldMicros: sql`${creditBalances.heldMicros} + ${amount}` })
            .where(and(eq(creditBalances.accountId, row.accountId), sql`${creditsFree()} >= ${needed}`))
            .returning({ accountId: creditBalances.accountId });
          if (held.length === 0) throw new Refused("insufficient_credits");
        }
        await tx.insert(reservations).values(row);
      });
      return undefined;
    } catch (error) {
      if (error instanceof Refused) return error.reason;
      throw error;
    }
  }

  /**
   * Whether `amountMicros` would fit now, without holding it: the same two checks as `reserve`, read
   * only. For requests that must refuse before they send anything to a model but reserve later
   * (the reservation itself still decides, atomically).
   */
  async wouldRefuse(
    row: { keyId: string | null; accountId: string; month: string; amountMicros: number; prepaid: boolean },
    monthlyLimitMicros: number | null,
  ): Promise<ReserveRefusal | undefined> {
    if (row.keyId !== null && monthlyLimitMicros !== null) {
      const spend = await this.db
        .select({ used: sql<string>`${keyMonthSpend.spentMicros} + ${keyMonthSpend.reservedMicros}` })
        .from(keyMonthSpend)
        .where(and(eq(keyMonthSpend.keyId, row.keyId), eq(keyMonthSpend.month, row.month)));
      if (Number(spend[0]?.used ?? 0) + row.amountMicros > monthlyLimitMicros)
        return "spending_limit_reached";
    }
    if (row.prepaid) {
      const balances = await this.db
        .select({ free: creditsFree() })
        .from(creditBalances)
        .where(eq(creditBalances.accountId, row.accountId));
      if (Number(balances[0]?.free ?? 0) < Math.max(row.amountMicros, 1)) return "insufficient_credits";
    }
    return undefined;
  }

  /**
   * Closes a reservation: the real cost (at most what was reserved) is spent, the rest given back,
   * and the usage record written. Returns the reservation and its record, or undefined when the
   * reservation was closed already (settling twice changes nothing).
   */
  async settle(requestId: string, facts: SettleFacts): Promise<Settled | undefined> {
    return this.db.transaction(async (tx) => {
      const taken = await tx.delete(reservations).where(eq(reservations.requestId, requestId)).returning();
      const reservation = taken[0];
      if (!reservation) return undefined;
      const cost = Math.max(0, Math.min(facts.costMicros, reservation.amountMicros));
      const totals: RecordedTotals = { keyMonths: [], credits: [] };
      if (reservation.keyId !== null) {
        totals.keyMonths = await tx
          .update(keyMonthSpend)
          .set({
            reservedMicros: sql`${keyMonthSpend.reservedMicros} - ${reservation.amountMicros}`,
            spentMicros: sql`${keyMonthSpend.spentMicros} + ${cost}`,
          })
          .where(and(eq(keyMonthSpend.keyId, reservation.keyId), eq(keyMonthSpend.month, reservation.month)))
          .returning({
            keyId: keyMonthSpend.keyId,
            month: keyMonthSpend.month,
            spentMicros: keyMonthSpend.spentMicros,
          });
      }
      if (reservation.prepaid) {
        totals.credits = await tx
          .update(creditBalances)
          .set({
            heldMicros: sql`${creditBalances.heldMicros} - ${reservation.amountMicros}`,
            spentMicros: sql`${creditBalances.spentMicros} + ${cost}`,
            updatedAt: sql`now()`,
          })
          .where(eq(creditBalances.accountId, reservation.accountId))
          .returning({ accountId: creditBalances.accountId, spentMicros: creditBalances.spentMicros });
      }
      const records = await tx
        .insert(usageRecords)
        .values({
          requestId,
          keyId: reservation.keyId,
          accountId: reservation.accountId,
          month: reservation.month,
          endpoint: reservation.endpoint,
          model: reservation.model,
          units: facts.units,
          costMicros: cost,
          zone: facts.zone,
          machine: facts.machine,
          outcome: facts.outcome,
          durationMs: facts.durationMs,
        })
        .onConflictDoNothing()
        .returning();
      return { reservation, record: records[0], totals };
    });
  }

  /**
   * Writes usage records whose money was settled elsewhere (nothing was reserved in the database:
   * keys without a monthly limit on a postpaid installation, or every request where the embedded
   * money book holds the money) in one statement for the whole batch: each cost goes to its key's
   * month and, for a `prepaid` row, to what its account spent of its credits. A record
   * written before (same request id) changes nothing.
   */
  async record(rows: Array<UsageRecordRow>): Promise<void> {
    await this.recordBatch(rows, false);
  }

  /** As `record`, and says what the batch left of every key month and account it changed. */
  async recordWithTotals(rows: Array<UsageRecordRow>): Promise<RecordedTotals> {
    return (await this.recordBatch(rows, true)) ?? { keyMonths: [], credits: [] };
  }

  /** As `record`, and says what the write left of each row's key month and account, in order. */
  async recordEach(rows: Array<UsageRecordRow>): Promise<WrittenRecord[]> {
    return writtenRecords(rows, await this.recordWithTotals(rows));
  }

  private async recordBatch(
    rows: Array<UsageRecordRow>,
    totals: boolean,
  ): Promise<RecordedTotals | undefined> {
    if (rows.length === 0) return undefined;
    const { name, batch, statement } = usageBatchStatement(rows, totals);
    const answered = this.named
      ? await this.named(name, () => statement(batch), [batch])
      : ((await this.db.execute(statement(batch))) as unknown as { rows: unknown[] }).rows;
    return totals ? totalsOf(answered) : undefined;
  }

  /**
   * What PostgreSQL holds of a key's month (its spend) or of an account (what it is credited and
   * spent), with the durable reservations holding money of it, read as one (a repeatable-read snapshot).
   */
  async moneyOfRecord(of: { keyId: string; month: string } | { accountId: string }): Promise<MoneyOfRecord> {
    return this.db.transaction(
      async (tx) => {
        if ("keyId" in of) {
          const spend = await tx
            .select({ spentMicros: keyMonthSpend.spentMicros })
            .from(keyMonthSpend)
            .where(and(eq(keyMonthSpend.keyId, of.keyId), eq(keyMonthSpend.month, of.month)));
          const durable = await tx
            .select()
            .from(reservations)
            .where(and(eq(reservations.keyId, of.keyId), eq(reservations.month, of.month)));
          const spent = spend[0]?.spentMicros ?? 0;
          return { micros: spent, spentMicros: spent, version: 0, durable };
        }
        const balance = await tx
          .select({
            creditedMicros: creditBalances.creditedMicros,
            spentMicros: creditBalances.spentMicros,
            version: creditBalances.version,
          })
          .from(creditBalances)
          .where(eq(creditBalances.accountId, of.accountId));
        const durable = await tx
          .select()
          .from(reservations)
          .where(and(eq(reservations.accountId, of.accountId), eq(reservations.prepaid, true)));
        return {
          micros: balance[0]?.creditedMicros ?? 0,
          spentMicros: balance[0]?.spentMicros ?? 0,
          version: balance[0]?.version ?? 0,
          durable,
        };
      },
      { isolationLevel: "repeatable read", accessMode: "read only" },
    );
  }

  /** Every key's months and every account's credits: what the embedded money book starts from. */
  async moneySnapshot(): Promise<MoneySnapshot> {
    return this.db.transaction(async (tx) => {
      const keyMonths = await tx
        .select({
          keyId: keyMonthSpend.keyId,
          month: keyMonthSpend.month,
          spentMicros: keyMonthSpend.spentMicros,
          reservedMicros: keyMonthSpend.reservedMicros,
        })
        .from(keyMonthSpend);
      const credits = await tx
        .select({
          accountId: creditBalances.accountId,
          balanceMicros: balanceLeft(),
          heldMicros: creditBalances.heldMicros,
        })
        .from(creditBalances);
      return { keyMonths, credits };
    });
  }

  /** Request ids of reservations that outlived their expiry (their process died). */
  async expired(now: Date, limit: number): Promise<string[]> {
    const rows = await this.db
      .select({ requestId: reservations.requestId })
      .from(reservations)
      .where(lt(reservations.expiresAt, now))
      .limit(limit);
    return rows.map((row) => row.requestId);
  }
}

/** What the database holds of every key's months and every account's credits (the money book's start). */
export interface MoneySnapshot {
  keyMonths: Array<{ keyId: string; month: string; spentMicros: number; reservedMicros: number }>;
  credits: Array<{ accountId: string; balanceMicros: number; heldMicros: number }>;
}

class Refused extends Error {
  readonly reason: ReserveRefusal;
  constructor(reason: ReserveRefusal) {
    super(reason);
    this.reason = reason;
  }
}
