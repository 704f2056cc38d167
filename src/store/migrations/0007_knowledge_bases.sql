CREATE TABLE "kb_documents" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"kb_id" uuid NOT NULL,
	"filename" text NOT NULL,
	"format" text NOT NULL,
	"size_bytes" integer NOT NULL,
	"status" text NOT NULL,
	"error" text,
	"passages" integer DEFAULT 0 NOT NULL,
	"pages" integer,
	"content" "bytea",
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "kb_passages" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"kb_id" uuid NOT NULL,
	"document_id" uuid NOT NULL,
	"ordinal" integer NOT NULL,
	"text" text NOT NULL,
	"page" integer,
	"heading" text,
	"embedding" real[] NOT NULL,
	"words" "tsvector" GENERATED ALWAYS AS (to_tsvector('simple', coalesce("heading", '') || ' ' || "text")) STORED NOT NULL
);
--> statement-breakpoint
CREATE TABLE "knowledge_bases" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"slug" text NOT NULL,
	"account_id" uuid NOT NULL,
	"name" text NOT NULL,
	"description" text,
	"shared" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "kb_documents" ADD CONSTRAINT "kb_documents_kb_id_knowledge_bases_id_fk" FOREIGN KEY ("kb_id") REFERENCES "public"."knowledge_bases"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "kb_passages" ADD CONSTRAINT "kb_passages_kb_id_knowledge_bases_id_fk" FOREIGN KEY ("kb_id") REFERENCES "public"."knowledge_bases"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "kb_passages" ADD CONSTRAINT "kb_passages_document_id_kb_documents_id_fk" FOREIGN KEY ("document_id") REFERENCES "public"."kb_documents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "knowledge_bases" ADD CONSTRAINT "knowledge_bases_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "kb_documents_kb_idx" ON "kb_documents" USING btree ("kb_id");--> statement-breakpoint
CREATE INDEX "kb_passages_kb_idx" ON "kb_passages" USING btree ("kb_id");--> statement-breakpoint
CREATE INDEX "kb_passages_document_idx" ON "kb_passages" USING btree ("document_id");--> statement-breakpoint
CREATE INDEX "kb_passages_words_idx" ON "kb_passages" USING gin ("words");--> statement-breakpoint
CREATE UNIQUE INDEX "knowledge_bases_slug_unique" ON "knowledge_bases" USING btree ("slug");--> statement-breakpoint
CREATE INDEX "knowledge_bases_account_idx" ON "knowledge_bases" USING btree ("account_id");