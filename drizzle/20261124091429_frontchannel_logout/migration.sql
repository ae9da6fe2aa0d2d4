ALTER TABLE "clients" ADD COLUMN "frontchannel_logout_uri" text;--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "frontchannel_logout_session_required" boolean DEFAULT false NOT NULL;