CREATE TABLE "durable_jobs" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"data" jsonb NOT NULL,
	"run_at" timestamp with time zone DEFAULT now() NOT NULL,
	"locked_until" timestamp with time zone,
	"attempts" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "video_jobs" (
	"id" text PRIMARY KEY NOT NULL,
	"person" text NOT NULL,
	"account_id" uuid NOT NULL,
	"key_id" uuid,
	"model" text NOT NULL,
	"prompt" text NOT NULL,
	"seconds" integer NOT NULL,
	"size" text NOT NULL,
	"seed" integer,
	"tier" text NOT NULL,
	"zones" jsonb,
	"status" text NOT NULL,
	"progress" integer DEFAULT 0 NOT NULL,
	"error_code" text,
	"error_message" text,
	"request_id" text NOT NULL,
	"machine" text,
	"engine_job_id" text,
	"clip_seconds" integer,
	"clip" "bytea",
	"created_at" timestamp with time zone NOT NULL,
	"started_at" timestamp with time zone,
	"completed_at" timestamp with time zone,
	"expires_at" timestamp with time zone
);
--> statement-breakpoint
CREATE INDEX "durable_jobs_run_at_idx" ON "durable_jobs" USING btree ("run_at");--> statement-breakpoint
CREATE UNIQUE INDEX "video_jobs_one_running_idx" ON "video_jobs" USING btree ("person") WHERE "video_jobs"."status" in ('queued', 'in_progress');--> statement-breakpoint
CREATE INDEX "video_jobs_person_idx" ON "video_jobs" USING btree ("person","id");--> statement-breakpoint
CREATE INDEX "video_jobs_machine_idx" ON "video_jobs" USING btree ("machine") WHERE "video_jobs"."status" = 'in_progress';--> statement-breakpoint
CREATE INDEX "video_jobs_expires_idx" ON "video_jobs" USING btree ("expires_at");