CREATE TABLE "key_month_spend" (
	"key_id" uuid NOT NULL,
	"month" text NOT NULL,
	"spent_micros" bigint DEFAULT 0 NOT NULL,
	"reserved_micros" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "key_month_spend_key_id_month_pk" PRIMARY KEY("key_id","month")
);
--> statement-breakpoint
CREATE TABLE "reservations" (
	"request_id" text PRIMARY KEY NOT NULL,
	"key_id" uuid NOT NULL,
	"account_id" uuid NOT NULL,
	"month" text NOT NULL,
	"amount_micros" bigint NOT NULL,
	"prepaid" boolean NOT NULL,
	"endpoint" text NOT NULL,
	"model" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "usage_records" (
	"request_id" text PRIMARY KEY NOT NULL,
	"key_id" uuid NOT NULL,
	"account_id" uuid NOT NULL,
	"month" text NOT NULL,
	"endpoint" text NOT NULL,
	"model" text,
	"units" jsonb NOT NULL,
	"cost_micros" bigint NOT NULL,
	"zone" text,
	"machine" text,
	"outcome" text NOT NULL,
	"duration_ms" integer,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "credit_balances" ADD COLUMN "held_micros" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "key_month_spend" ADD CONSTRAINT "key_month_spend_key_id_api_keys_id_fk" FOREIGN KEY ("key_id") REFERENCES "public"."api_keys"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "reservations_expires_idx" ON "reservations" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "usage_account_month_idx" ON "usage_records" USING btree ("account_id","month","created_at");--> statement-breakpoint
CREATE INDEX "usage_key_month_idx" ON "usage_records" USING btree ("key_id","month","created_at");