CREATE TABLE "ended_sessions" (
	"sid" text PRIMARY KEY,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "ended_sessions_expires_idx" ON "ended_sessions" ("expires_at");