CREATE TABLE "registration_tokens" (
	"token_hash" text PRIMARY KEY,
	"label" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "registration_type" text DEFAULT 'static' NOT NULL;--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "registration_access_token_hash" text;--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "client_uri" text;--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "logo_uri" text;--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "registration_metadata" jsonb;--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "metadata_expires_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "grants" ADD COLUMN "resources" text[] DEFAULT '{}'::text[] NOT NULL;