CREATE TABLE "model_activations" (
	"model_id" text PRIMARY KEY NOT NULL,
	"activated_at" timestamp with time zone DEFAULT now() NOT NULL
);
