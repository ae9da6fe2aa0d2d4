ALTER TABLE "clients" ADD COLUMN "backchannel_logout_session_required" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "grants" ADD COLUMN "sid" text;