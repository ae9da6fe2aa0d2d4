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
CREATE TABLE "idempotency_keys" (
	"user_id" integer,
	"client_id" text,
	"key" text,
	"request_hash" text NOT NULL,
	"order_id" integer,
	"response" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "idempotency_keys_pkey" PRIMARY KEY("user_id","client_id","key")
);
--> statement-breakpoint
CREATE TABLE "registration_tokens" (
	"token_hash" text PRIMARY KEY,
	"label" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "used_jtis" (
	"signer" text,
	"jti_hash" text,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "used_jtis_pkey" PRIMARY KEY("signer","jti_hash")
);
--> statement-breakpoint
ALTER TABLE "authorization_codes" ADD COLUMN "dpop_jkt" text;--> statement-breakpoint
ALTER TABLE "authorization_codes" ADD COLUMN "nonce" text;--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "token_endpoint_auth_method" text;--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "jwks" jsonb;--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "jwks_uri" text;--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "dpop_bound_access_tokens" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "subject_type" text DEFAULT 'public' NOT NULL;--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "post_logout_redirect_uris" text[] DEFAULT '{}'::text[] NOT NULL;--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "backchannel_logout_uri" text;--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "policy_uri" text;--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "tos_uri" text;--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "registration_type" text DEFAULT 'static' NOT NULL;--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "registration_access_token_hash" text;--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "client_uri" text;--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "logo_uri" text;--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "registration_metadata" jsonb;--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "metadata_expires_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "grants" ADD COLUMN "auth_time" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "grants" ADD COLUMN "last_used_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "grants" ADD COLUMN "resources" text[] DEFAULT '{}'::text[] NOT NULL;--> statement-breakpoint
ALTER TABLE "refresh_tokens" ADD COLUMN "dpop_jkt" text;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "display_name" text;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "email" text;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "email_verified" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "session_epoch" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "grants" ALTER COLUMN "user_id" DROP NOT NULL;--> statement-breakpoint
CREATE INDEX "device_codes_expires_idx" ON "device_codes" ("expires_at");--> statement-breakpoint
CREATE INDEX "idempotency_keys_expires_idx" ON "idempotency_keys" ("expires_at");--> statement-breakpoint
CREATE INDEX "orders_user_id_idx" ON "orders" ("user_id","id");--> statement-breakpoint
CREATE INDEX "orders_user_created_id_idx" ON "orders" ("user_id","created_at","id");--> statement-breakpoint
CREATE INDEX "orders_user_total_id_idx" ON "orders" ("user_id","total_cents","id");--> statement-breakpoint
CREATE INDEX "products_name_id_idx" ON "products" ("name","id");--> statement-breakpoint
CREATE INDEX "products_price_id_idx" ON "products" ("price_cents","id");--> statement-breakpoint
CREATE INDEX "products_created_id_idx" ON "products" ("created_at","id");--> statement-breakpoint
CREATE INDEX "used_jtis_expires_idx" ON "used_jtis" ("expires_at");--> statement-breakpoint
ALTER TABLE "device_codes" ADD CONSTRAINT "device_codes_client_id_clients_id_fkey" FOREIGN KEY ("client_id") REFERENCES "clients"("id") ON DELETE CASCADE;--> statement-breakpoint
ALTER TABLE "device_codes" ADD CONSTRAINT "device_codes_user_id_users_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE;--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_user_id_users_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE;--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_order_id_orders_id_fkey" FOREIGN KEY ("order_id") REFERENCES "orders"("id") ON DELETE CASCADE;