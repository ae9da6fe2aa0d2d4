DROP INDEX "reviews_product_idx";--> statement-breakpoint
CREATE INDEX "reviews_product_id_idx" ON "reviews" ("product_id","id");--> statement-breakpoint
CREATE INDEX "reviews_product_rating_id_idx" ON "reviews" ("product_id","rating","id");--> statement-breakpoint
CREATE INDEX "reviews_product_rating_desc_id_idx" ON "reviews" ("product_id","rating" DESC,"id");--> statement-breakpoint
CREATE INDEX "reviews_product_created_id_idx" ON "reviews" ("product_id","created_at","id");--> statement-breakpoint
CREATE INDEX "reviews_product_created_desc_id_idx" ON "reviews" ("product_id","created_at" DESC,"id");