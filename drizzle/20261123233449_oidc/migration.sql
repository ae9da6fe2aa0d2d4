ALTER TABLE "authorization_codes" ADD COLUMN "nonce" text;--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "subject_type" text DEFAULT 'public' NOT NULL;--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "post_logout_redirect_uris" text[] DEFAULT '{}'::text[] NOT NULL;--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "backchannel_logout_uri" text;--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "policy_uri" text;--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "tos_uri" text;--> statement-breakpoint
ALTER TABLE "grants" ADD COLUMN "auth_time" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "grants" ADD COLUMN "last_used_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "display_name" text;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "email" text;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "email_verified" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "session_epoch" integer DEFAULT 0 NOT NULL;