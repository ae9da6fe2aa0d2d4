CREATE TABLE "used_jtis" (
	"signer" text,
	"jti_hash" text,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "used_jtis_pkey" PRIMARY KEY("signer","jti_hash")
);
--> statement-breakpoint
ALTER TABLE "authorization_codes" ADD COLUMN "dpop_jkt" text;--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "token_endpoint_auth_method" text;--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "jwks" jsonb;--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "jwks_uri" text;--> statement-breakpoint
ALTER TABLE "clients" ADD COLUMN "dpop_bound_access_tokens" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "refresh_tokens" ADD COLUMN "dpop_jkt" text;--> statement-breakpoint
CREATE INDEX "used_jtis_expires_idx" ON "used_jtis" ("expires_at");