ALTER TABLE "credit_balances" RENAME COLUMN "balance_micros" TO "credited_micros";--> statement-breakpoint
ALTER TABLE "credit_balances" ADD COLUMN "spent_micros" bigint DEFAULT 0 NOT NULL;
