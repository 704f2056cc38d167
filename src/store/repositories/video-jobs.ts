import type { Database } from "../database.ts";
import { and, asc, desc, eq, gt, inArray, isNull, lt, lte, sql } from "../drizzle.ts";
import { videoJobs } from "../schema.ts";

/** A video job as stored, without its clip. */
export type VideoJobRow = Omit<typeof videoJobs.$inferSelect, "clip">;
/** What a new job is stored with. */
export type NewVideoJob = Omit<
  typeof videoJobs.$inferInsert,
  | "status"
  | "progress"
  | "clip"
  | "clipSeconds"
  | "machine"
  | "engineJobId"
  | "startedAt"
  | "completedAt"
  | "expiresAt"
  | "statusUnreadableSince"
>;

/** The states of a job that is not finished: one such job per person at most. */
export const UNFINISHED = ["queued", "in_progress"] as const;

/** One page of a person's jobs. */
export interface VideoPage {
  rows: VideoJobRow[];
  hasMore: boolean;
}

// Every column but the clip, which only the content route reads.
const ROW = {
  id: videoJobs.id,
  person: videoJobs.person,
  accountId: videoJobs.accountId,
  keyId: videoJobs.keyId,
  model: videoJobs.model,
  prompt: videoJobs.prompt,
  seconds: videoJobs.seconds,
  size: videoJobs.size,
  seed: videoJobs.seed,
  tier: videoJobs.tier,
  zones: videoJobs.zones,
  status: videoJobs.status,
  progress: videoJobs.progress,
  errorCode: videoJobs.errorCode,
  errorMessage: videoJobs.errorMessage,
  requestId: videoJobs.requestId,
  machine: videoJobs.machine,
  engineJobId: videoJobs.engineJobId,
  clipSeconds: videoJobs.clipSeconds,
  createdAt: videoJobs.createdAt,
  startedAt: videoJobs.startedAt,
  completedAt: videoJobs.completedAt,
  expiresAt: videoJobs.expiresAt,
  statusUnreadableSince: videoJobs.statusUnreadableSince,
};

/**
 * The video jobs: each step of a job is one conditional statement, so that the request side
 * (create, delete) and the workers of every instance never both win the same change.
 */
export class VideoJobsRepository {
  private readonly db: Database;
  constructor(db: Database) {
    this.db = db;
  }

  /** Stores a new queued job and returns it; undefined when the person already has one queued or in progress. */
  async insert(job: NewVideoJob): Promise<VideoJobRow | undefined> {
    const rows = await this.db
      .insert(videoJobs)
      .values({ ...job, status: "queued", progress: 0 })
      .onConflictDoNothing()
      .returning(ROW);
    return rows[0];
  }

  /** A job by id, whoever owns it (the workers). */
  async byId(id: string): Promise<VideoJobRow | undefined> {
    const rows = await this.db.select(ROW).from(videoJobs).where(eq(videoJobs.id, id));
    return rows[0];
  }

  /** A person's job; undefined for a missing one and for another person's. */
  async owned(person: string, id: string): Promise<VideoJobRow | undefined> {
    const rows = await this.db
      .select(ROW)
      .from(videoJobs)
      .where(and(eq(videoJobs.id, id), eq(videoJobs.person, person)));
    return rows[0];
  }

  /** A person's finished clip and when it expires; undefined when there is none. */
  async clip(person: string, id: string): Promise<{ clip: Buffer; expiresAt: Date | null } | undefined> {
    const rows = await this.db
      .select({ clip: videoJobs.clip, expiresAt: videoJobs.expiresAt })
      .from(videoJobs)
      .where(and(eq(videoJobs.id, id), eq(videoJobs.person, person), eq(videoJobs.status, "completed")));
    const row = rows[0];
    return row?.clip ? { clip: row.clip, expiresAt: row.expiresAt } : undefined;
  }

  /** A page of a person's jobs after a cursor id (ids sort as their creation times). */
  async list(
    person: string,
    page: { after?: string; limit: number; order: "asc" | "desc" },
  ): Promise<VideoPage> {
    const cursor =
      page.after === undefined
        ? undefined
        : page.order === "desc"
          ? lt(videoJobs.id, page.after)
          : gt(videoJobs.id, page.after);
    const rows = await this.db
      .select(ROW)
      .from(videoJobs)
      .where(and(eq(videoJobs.person, person), cursor))
      .orderBy(page.order === "desc" ? desc(videoJobs.id) : asc(videoJobs.id))
      .limit(page.limit + 1);
    return { rows: rows.slice(0, page.limit), hasMore: rows.length > page.limit };
  }

  /** Deletes a person's job; returns it as it was, or undefined when there was none. */
  async removeOwned(person: string, id: string): Promise<VideoJobRow | undefined> {
    const rows = await this.db
      .delete(videoJobs)
      .where(and(eq(videoJobs.id, id), eq(videoJobs.person, person)))
      .returning(ROW);
    return rows[0];
  }

  /** Jobs in progress per machine, for the machines named. */
  async runningOn(machines: string[]): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    if (machines.length === 0) return counts;
    const rows = await this.db
      .select({ machine: videoJobs.machine, count: sql<number>`count(*)::int` })
      .from(videoJobs)
      .where(and(eq(videoJobs.status, "in_progress"), inArray(videoJobs.machine, machines)))
      .groupBy(videoJobs.machine);
    for (const row of rows) if (row.machine !== null) counts.set(row.machine, Number(row.count));
    return counts;
  }

  /**
   * Gives a queued job to a machine if the machine has a free place (fewer than `capacity` jobs in
   * progress). The count and the change are made under a lock on the machine's name, so that two
   * workers (of any instance) cannot both take its last place.
   */
  async claim(id: string, machine: string, capacity: number, now: Date): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`zona:video-machine:${machine}`}))`);
      const running = await tx
        .select({ count: sql<number>`count(*)::int` })
        .from(videoJobs)
        .where(and(eq(videoJobs.status, "in_progress"), eq(videoJobs.machine, machine)));
      if (Number(running[0]?.count ?? 0) >= capacity) return false;
      const taken = await tx
        .update(videoJobs)
        .set({ status: "in_progress", machine, startedAt: now, progress: 0 })
        .where(and(eq(videoJobs.id, id), eq(videoJobs.status, "queued")))
        .returning({ id: videoJobs.id });
      return taken.length === 1;
    });
  }

  /** Puts a job its machine did not accept back in the queue. */
  async unclaim(id: string): Promise<void> {
    await this.db
      .update(videoJobs)
      .set({ status: "queued", machine: null, engineJobId: null, startedAt: null, progress: 0 })
      .where(and(eq(videoJobs.id, id), eq(videoJobs.status, "in_progress"), isNull(videoJobs.engineJobId)));
  }

  /** Notes the engine's id of the job; false when the job was deleted (or ended) meanwhile. */
  async started(id: string, engineJobId: string): Promise<boolean> {
    const rows = await this.db
      .update(videoJobs)
      .set({ engineJobId })
      .where(and(eq(videoJobs.id, id), eq(videoJobs.status, "in_progress"), isNull(videoJobs.engineJobId)))
      .returning({ id: videoJobs.id });
    return rows.length === 1;
  }

  async progress(id: string, progress: number): Promise<void> {
    await this.db
      .update(videoJobs)
      .set({ progress })
      .where(and(eq(videoJobs.id, id), eq(videoJobs.status, "in_progress")));
  }

  /**
   * Notes that the running job's state could not be read at `now`, unless a failed read since the
   * last good one is noted already; returns the time noted (undefined when the job is not running).
   */
  async stateUnread(id: string, now: Date): Promise<Date | undefined> {
    const rows = await this.db
      .update(videoJobs)
      .set({
        statusUnreadableSince: sql`coalesce(${videoJobs.statusUnreadableSince}, ${now.toISOString()}::timestamptz)`,
      })
      .where(and(eq(videoJobs.id, id), eq(videoJobs.status, "in_progress")))
      .returning({ since: videoJobs.statusUnreadableSince });
    return rows[0]?.since ?? undefined;
  }

  /** Forgets the failed reads of the job's state: it was read again. */
  async stateRead(id: string): Promise<void> {
    await this.db
      .update(videoJobs)
      .set({ statusUnreadableSince: null })
      .where(and(eq(videoJobs.id, id), sql`${videoJobs.statusUnreadableSince} is not null`));
  }

  /** Stores the finished clip; false when the job was deleted (or ended) meanwhile. */
  async complete(
    id: string,
    done: { clip: Buffer; clipSeconds: number; completedAt: Date; expiresAt: Date },
  ): Promise<boolean> {
    const rows = await this.db
      .update(videoJobs)
      .set({ status: "completed", progress: 100, ...done })
      .where(and(eq(videoJobs.id, id), eq(videoJobs.status, "in_progress")))
      .returning({ id: videoJobs.id });
    return rows.length === 1;
  }

  /** Ends a job that is not finished as failed; false when it had ended or was deleted. */
  async fail(
    id: string,
    error: { code: string; message: string },
    now: Date,
    expiresAt: Date,
  ): Promise<boolean> {
    const rows = await this.db
      .update(videoJobs)
      .set({
        status: "failed",
        errorCode: error.code,
        errorMessage: error.message,
        completedAt: now,
        expiresAt,
      })
      .where(and(eq(videoJobs.id, id), inArray(videoJobs.status, [...UNFINISHED])))
      .returning({ id: videoJobs.id });
    return rows.length === 1;
  }

  /** Ids of every job not finished (to make sure each has its queue entry). */
  async unfinished(limit: number): Promise<string[]> {
    const rows = await this.db
      .select({ id: videoJobs.id })
      .from(videoJobs)
      .where(inArray(videoJobs.status, [...UNFINISHED]))
      .orderBy(asc(videoJobs.id))
      .limit(limit);
    return rows.map((row) => row.id);
  }

  /** Deletes the jobs (and clips) whose 7 days are over; returns how many. */
  async deleteExpired(now: Date): Promise<number> {
    const rows = await this.db
      .delete(videoJobs)
      .where(lte(videoJobs.expiresAt, now))
      .returning({ id: videoJobs.id });
    return rows.length;
  }
}
