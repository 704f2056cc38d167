import { index, integer, jsonb, pgTable, sql, text, timestamp, uniqueIndex, uuid } from "./drizzle.ts";
import { bytea } from "./schema-types.ts";

/**
 * Pictures answered as links (`response_format: url`), kept until their link expires (24 hours)
 * and then deleted by the sweep; every instance serves every link. Never the prompt.
 */
export const imageFiles = pgTable(
  "image_files",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    /** The marked PNG as delivered. */
    png: bytea("png").notNull(),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("image_files_expires_idx").on(t.expiresAt)],
);

/**
 * Video generation jobs, one row per job for the 7 days it is kept. At most one
 * queued or running job per person, held by a unique partial index: two requests at once, on any
 * instance, cannot both start one. The clip lives here too, so that every instance serves it.
 */
export const videoJobs = pgTable(
  "video_jobs",
  {
    /** `video_` + creation time + randomness: ordering by id is ordering by creation. */
    id: text("id").primaryKey(),
    /** Whose job: `account:<id>` for the key API, `user:<id>` for a signed-in user. */
    person: text("person").notNull(),
    accountId: uuid("account_id").notNull(),
    keyId: uuid("key_id"),
    model: text("model").notNull(),
    prompt: text("prompt").notNull(),
    seconds: integer("seconds").notNull(),
    size: text("size").notNull(),
    seed: integer("seed"),
    tier: text("tier").notNull(),
    /** The zones it may run in; null: anywhere. */
    zones: jsonb("zones").$type<string[] | null>(),
    /** `queued`, `in_progress`, `completed` or `failed`. */
    status: text("status").notNull(),
    progress: integer("progress").notNull().default(0),
    errorCode: text("error_code"),
    errorMessage: text("error_message"),
    /** The reservation holding the highest cost until the job ends. */
    requestId: text("request_id").notNull(),
    /** The machine making it, and the engine's own id of the job there. */
    machine: text("machine"),
    engineJobId: text("engine_job_id"),
    /** Seconds of the delivered clip, as billed. */
    clipSeconds: integer("clip_seconds"),
    clip: bytea("clip"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull(),
    startedAt: timestamp("started_at", { withTimezone: true }),
    completedAt: timestamp("completed_at", { withTimezone: true }),
    /** Set when the job ends (completed or failed): then it is kept 7 days. */
    expiresAt: timestamp("expires_at", { withTimezone: true }),
    /**
     * When the running job's state first could not be read from its machine since the last good
     * read; null while it reads. Kept here so that every instance, and a restart, count from it.
     */
    statusUnreadableSince: timestamp("status_unreadable_since", { withTimezone: true }),
  },
  (t) => [
    uniqueIndex("video_jobs_one_running_idx")
      .on(t.person)
      .where(sql`${t.status} in ('queued', 'in_progress')`),
    index("video_jobs_person_idx").on(t.person, t.id),
    index("video_jobs_machine_idx").on(t.machine).where(sql`${t.status} = 'in_progress'`),
    index("video_jobs_expires_idx").on(t.expiresAt),
  ],
);
