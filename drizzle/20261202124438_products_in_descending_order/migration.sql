CREATE INDEX "products_price_desc_id_idx" ON "products" ("price_cents" DESC,"id");--> statement-breakpoint
CREATE INDEX "products_created_desc_id_idx" ON "products" ("created_at" DESC,"id");