CREATE TABLE "device_codes" (
	"device_code_hash" text PRIMARY KEY,
	"user_code_hash" text NOT NULL UNIQUE,
	"client_id" text NOT NULL,
	"scope" text NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"user_id" integer,
	"interval_seconds" integer NOT NULL,
	"last_polled_at" timestamp with time zone,
	"expires_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "device_codes_status" CHECK ("status" in ('pending', 'approved', 'denied', 'consumed'))
);
--> statement-breakpoint
ALTER TABLE "grants" ALTER COLUMN "user_id" DROP NOT NULL;--> statement-breakpoint
CREATE INDEX "device_codes_expires_idx" ON "device_codes" ("expires_at");--> statement-breakpoint
ALTER TABLE "device_codes" ADD CONSTRAINT "device_codes_client_id_clients_id_fkey" FOREIGN KEY ("client_id") REFERENCES "clients"("id") ON DELETE CASCADE;--> statement-breakpoint
ALTER TABLE "device_codes" ADD CONSTRAINT "device_codes_user_id_users_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE;