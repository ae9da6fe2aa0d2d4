ALTER TABLE "authorization_codes" DROP CONSTRAINT "authorization_codes_client_id_clients_id_fkey";--> statement-breakpoint
ALTER TABLE "authorization_codes" DROP CONSTRAINT "authorization_codes_user_id_users_id_fkey";--> statement-breakpoint
ALTER TABLE "refresh_tokens" DROP CONSTRAINT "refresh_tokens_client_id_clients_id_fkey";--> statement-breakpoint
ALTER TABLE "refresh_tokens" DROP CONSTRAINT "refresh_tokens_user_id_users_id_fkey";