import { index, integer, jsonb, pgTable, text, timestamp } from "./drizzle.ts";

/**
 * Work that must survive a restart (video jobs, document ingestion) in embedded mode, where BullMQ
 * cannot run: one row per job waiting or running, claimed by a lease that a live worker renews, so
 * a job whose process died is taken again once its lease runs out, and that death is counted.
 */
export const durableJobs = pgTable(
  "durable_jobs",
  {
    id: text("id").primaryKey(),
    name: text("name").notNull(),
    data: jsonb("data").notNull(),
    /** Not before: a new job now, a deferred or retried one later. */
    runAt: timestamp("run_at", { withTimezone: true }).notNull().defaultNow(),
    /** While a worker holds the job; null or past: free to take. */
    lockedUntil: timestamp("locked_until", { withTimezone: true }),
    /** Runs that failed (a deferral is not a failure). */
    attempts: integer("attempts").notNull().default(0),
    /** When the run in progress began; cleared by every end a process sees, so set on a free job: its process died. */
    runningSince: timestamp("running_since", { withTimezone: true }),
    /** Runs that began and never ended (their process died): at `server.job_crash_limit` the job is given up. */
    deaths: integer("deaths").notNull().default(0),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("durable_jobs_run_at_idx").on(t.runAt)],
);
