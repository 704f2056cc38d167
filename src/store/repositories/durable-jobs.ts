import { randomUUID } from "node:crypto";
import type { SQL } from "drizzle-orm";
import type { Database } from "../database.ts";
import { and, asc, count, eq, inArray, isNull, lte, or, sql } from "../drizzle.ts";
import { durableJobs } from "../schema.ts";

/**
 * A job a worker holds. `token` is the lease end the claim (or the last renewal) wrote: every later
 * write is conditional on it, so a worker whose lease ran out and was taken by another cannot
 * delete or re-schedule the other's run.
 */
export interface ClaimedJob {
  id: string;
  name: string;
  data: unknown;
  /** Failed runs before this one. */
  attempts: number;
  /** Runs before this one that began and never ended: their process died. */
  deaths: number;
  token: Date;
}

/** What `fail` did: kept for another run after the backoff, dropped (no attempts left), or lost (the lease was gone). */
export type FailOutcome = "retry" | "dropped" | "lost";

/**
 * The jobs of the table-backed queue (`durable_jobs`). Every time is the database's (`now()`), so
 * processes with drifting clocks agree on what is due and when a lease ends. Each operation is one
 * atomic statement (or two, each conditional on the lease), safe with several processes on one
 * PostgreSQL.
 */
export class DurableJobsRepository {
  private readonly db: Database;
  constructor(db: Database) {
    this.db = db;
  }

  /** Frees every lease: for the only process that uses the table, whose predecessor died holding some. */
  async freeLeases(): Promise<number> {
    const rows = await this.db
      .update(durableJobs)
      .set({ lockedUntil: null })
      .where(sql`${durableJobs.lockedUntil} is not null`)
      .returning({ id: durableJobs.id });
    return rows.length;
  }

  /** Adds a job unless one of the same id exists (still waiting or running); whether it was added. */
  async add(job: { id?: string; name: string; data: unknown; delayMs?: number }): Promise<boolean> {
    const rows = await this.db
      .insert(durableJobs)
      .values({
        id: job.id ?? randomUUID(),
        name: job.name,
        // Cast from text: a job whose data is null stays a JSON null, not an SQL NULL.
        data: sql`${JSON.stringify(job.data ?? null)}::jsonb`,
        runAt: after(job.delayMs ?? 0),
      })
      .onConflictDoNothing({ target: durableJobs.id })
      .returning({ id: durableJobs.id });
    return rows.length > 0;
  }

  /**
   * Takes the next due job of one of `names` whose lease is free or ran out, and leases it for
   * `leaseMs`. SKIP LOCKED lets concurrent claimers pass each other instead of queueing on one row.
   * The claim marks the run as begun; a mark found there (a run that never ended) counts a death.
   * `fresh` takes only jobs that never died: a process already running jobs takes no suspect.
   */
  async claim(
    names: readonly string[],
    leaseMs: number,
    options: { fresh?: boolean } = {},
  ): Promise<ClaimedJob | undefined> {
    if (names.length === 0) return undefined;
    const due = this.db
      .select({ id: durableJobs.id })
      .from(durableJobs)
      .where(
        and(
          inArray(durableJobs.name, [...names]),
          lte(durableJobs.runAt, sql`now()`),
          or(isNull(durableJobs.lockedUntil), lte(durableJobs.lockedUntil, sql`now()`)),
          options.fresh ? and(eq(durableJobs.deaths, 0), isNull(durableJobs.runningSince)) : undefined,
        ),
      )
      .orderBy(asc(durableJobs.runAt), asc(durableJobs.createdAt))
      .limit(1)
      .for("update", { skipLocked: true });
    const rows = await this.db
      .update(durableJobs)
      .set({
        lockedUntil: leaseEnd(leaseMs),
        deaths: sql`${durableJobs.deaths} + (${durableJobs.runningSince} is not null)::int`,
        runningSince: sql`now()`,
      })
      .where(eq(durableJobs.id, sql`(${due})`))
      .returning({
        id: durableJobs.id,
        name: durableJobs.name,
        // As text, parsed here: the drivers would turn a JSON string holding a number into that number.
        data: sql<string>`${durableJobs.data}::text`,
        attempts: durableJobs.attempts,
        deaths: durableJobs.deaths,
        token: durableJobs.lockedUntil,
      });
    const row = rows[0];
    if (!row?.token) return undefined;
    return {
      id: row.id,
      name: row.name,
      data: JSON.parse(row.data),
      attempts: row.attempts,
      deaths: row.deaths,
      token: row.token,
    };
  }

  /** Extends a lease still held; the new token, or undefined when the lease was lost. */
  async renew(job: ClaimedJob, leaseMs: number): Promise<Date | undefined> {
    const rows = await this.db
      .update(durableJobs)
      .set({ lockedUntil: leaseEnd(leaseMs) })
      .where(held(job))
      .returning({ token: durableJobs.lockedUntil });
    return rows[0]?.token ?? undefined;
  }

  /** Deletes a finished job; false when the lease was lost. */
  async finish(job: ClaimedJob): Promise<boolean> {
    const rows = await this.db.delete(durableJobs).where(held(job)).returning({ id: durableJobs.id });
    return rows.length > 0;
  }

  /** Frees a job to run again after `delayMs`, without counting a failure; false when the lease was lost. */
  async defer(job: ClaimedJob, delayMs: number): Promise<boolean> {
    const rows = await this.db
      .update(durableJobs)
      .set({ runAt: after(delayMs), lockedUntil: null, runningSince: null })
      .where(held(job))
      .returning({ id: durableJobs.id });
    return rows.length > 0;
  }

  /** Frees a job as it was (due at once, no failure counted): its run was cut by a shutdown. */
  async release(job: ClaimedJob): Promise<boolean> {
    const rows = await this.db
      .update(durableJobs)
      .set({ lockedUntil: null, runningSince: null })
      .where(held(job))
      .returning({ id: durableJobs.id });
    return rows.length > 0;
  }

  /** Counts a failed run: the job runs again after `backoffMs`, or is deleted once it failed `maxAttempts` times. */
  async fail(job: ClaimedJob, options: { maxAttempts: number; backoffMs: number }): Promise<FailOutcome> {
    const dropped = await this.db
      .delete(durableJobs)
      .where(and(held(job), sql`${durableJobs.attempts} + 1 >= ${options.maxAttempts}`))
      .returning({ id: durableJobs.id });
    if (dropped.length > 0) return "dropped";
    const kept = await this.db
      .update(durableJobs)
      .set({
        attempts: sql`${durableJobs.attempts} + 1`,
        runAt: after(options.backoffMs),
        lockedUntil: null,
        runningSince: null,
      })
      .where(held(job))
      .returning({ id: durableJobs.id });
    return kept.length > 0 ? "retry" : "lost";
  }

  /**
   * Milliseconds until a job of `names` may next be claimed (its run time, or the end of the lease
   * holding it), negative when one is due now; undefined when there is none.
   */
  async msUntilNextDue(names: readonly string[]): Promise<number | undefined> {
    if (names.length === 0) return undefined;
    // A held job may be taken once its lease ends (its process may have died).
    const claimableAt = sql`greatest(${durableJobs.runAt}, coalesce(${durableJobs.lockedUntil}, ${durableJobs.runAt}))`;
    const rows = await this.db
      // Drizzle decodes no NULL: the minimum of no row stays null.
      .select({
        ms: sql<number | null>`extract(epoch from (min(${claimableAt}) - now())) * 1000`.mapWith(Number),
      })
      .from(durableJobs)
      .where(inArray(durableJobs.name, [...names]));
    return rows[0]?.ms ?? undefined;
  }

  /** Jobs of `names` in the table, waiting, deferred or running anywhere. */
  async countOf(names: readonly string[]): Promise<number> {
    if (names.length === 0) return 0;
    return this.countWhere(inArray(durableJobs.name, [...names]));
  }

  /** Jobs no worker holds (queued, deferred or waiting for a retry), of every name. */
  async countWaiting(): Promise<number> {
    return this.countWhere(or(isNull(durableJobs.lockedUntil), lte(durableJobs.lockedUntil, sql`now()`)));
  }

  private async countWhere(where: SQL | undefined): Promise<number> {
    const rows = await this.db.select({ n: count() }).from(durableJobs).where(where);
    return rows[0]?.n ?? 0;
  }
}

/** Still held by this claim: the lease end is the token. */
function held(job: ClaimedJob): SQL | undefined {
  return and(eq(durableJobs.id, job.id), eq(durableJobs.lockedUntil, job.token));
}

function after(ms: number): SQL {
  return sql`now() + ${Math.max(0, ms)}::double precision * interval '1 millisecond'`;
}

/** Truncated to milliseconds, the precision of a JavaScript Date: the token must compare equal once read back. */
function leaseEnd(ms: number): SQL {
  return sql`date_trunc('milliseconds', ${after(ms)})`;
}
