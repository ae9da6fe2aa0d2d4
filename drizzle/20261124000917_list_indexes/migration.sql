CREATE INDEX "orders_user_id_idx" ON "orders" ("user_id","id");--> statement-breakpoint
CREATE INDEX "orders_user_created_id_idx" ON "orders" ("user_id","created_at","id");--> statement-breakpoint
CREATE INDEX "orders_user_total_id_idx" ON "orders" ("user_id","total_cents","id");--> statement-breakpoint
CREATE INDEX "products_name_id_idx" ON "products" ("name","id");--> statement-breakpoint
CREATE INDEX "products_price_id_idx" ON "products" ("price_cents","id");--> statement-breakpoint
CREATE INDEX "products_created_id_idx" ON "products" ("created_at","id");