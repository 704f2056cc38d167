ALTER TABLE "durable_jobs" ADD COLUMN "running_since" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "durable_jobs" ADD COLUMN "deaths" integer DEFAULT 0 NOT NULL;