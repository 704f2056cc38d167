CREATE TABLE "kb_document_parts" (
	"document_id" uuid NOT NULL,
	"ordinal" integer NOT NULL,
	"bytes" "bytea" NOT NULL,
	CONSTRAINT "kb_document_parts_document_id_ordinal_pk" PRIMARY KEY("document_id","ordinal")
);
--> statement-breakpoint
ALTER TABLE "kb_document_parts" ADD CONSTRAINT "kb_document_parts_document_id_kb_documents_id_fk" FOREIGN KEY ("document_id") REFERENCES "public"."kb_documents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
-- Files uploaded before this migration and not read yet become one part each.
INSERT INTO "kb_document_parts" ("document_id", "ordinal", "bytes") SELECT "id", 0, "content" FROM "kb_documents" WHERE "content" IS NOT NULL;--> statement-breakpoint
ALTER TABLE "kb_documents" DROP COLUMN "content";