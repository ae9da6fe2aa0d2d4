/**
 * Rows for tests, inserted directly: each `build*` takes the database (or anything with a
 * `db`, such as a Runtime) and overrides, fills in the rest and returns the inserted row.
 *
 * @example
 *   const product = await buildProduct(runtime, { priceCents: 1200, reviews: 2 });
 *   const order = await buildOrder(runtime, { userId, status: 'paid', items: [{ product, quantity: 3 }] });
 */
import { randomBytes } from 'node:crypto';
import type { Db } from '../../src/db/database.js';
import { orderItems, orders, products, reviews, sellers, shippingPolicies } from '../../src/db/schema.js';

export type DbSource = Db | { db: Db };

function dbOf(source: DbSource): Db {
  return 'db' in source ? source.db : source;
}

const uniqueName = (prefix: string) => `${prefix} ${randomBytes(3).toString('hex')}`;

export type Seller = typeof sellers.$inferSelect;
export type ShippingPolicy = typeof shippingPolicies.$inferSelect;
export type Product = typeof products.$inferSelect;
export type Review = typeof reviews.$inferSelect;
export type Order = typeof orders.$inferSelect;
export type OrderItem = typeof orderItems.$inferSelect;

export async function buildSeller(source: DbSource, overrides: Partial<typeof sellers.$inferInsert> = {}): Promise<Seller> {
  const [row] = await dbOf(source)
    .insert(sellers)
    .values({ name: uniqueName('Seller'), rating: 4.5, ...overrides })
    .returning();
  return row!;
}

export async function buildShippingPolicy(
  source: DbSource,
  overrides: Partial<typeof shippingPolicies.$inferInsert> = {},
): Promise<ShippingPolicy> {
  const [row] = await dbOf(source)
    .insert(shippingPolicies)
    .values({ name: uniqueName('Policy'), minDays: 2, maxDays: 5, feeCents: 499, regions: ['US', 'CA'], ...overrides })
    .returning();
  return row!;
}

export async function buildReview(
  source: DbSource,
  overrides: Partial<typeof reviews.$inferInsert> & { productId: number },
): Promise<Review> {
  const [row] = await dbOf(source)
    .insert(reviews)
    .values({ author: 'ana', rating: 4, body: 'Works well.', ...overrides })
    .returning();
  return row!;
}

export interface ProductOverrides extends Partial<typeof products.$inferInsert> {
  /** How many reviews to add (ratings 1, 2, 3…). */
  reviews?: number;
  /** Give the product a new shipping policy (ignored when shippingPolicyId is set). */
  withShippingPolicy?: boolean;
}

/** A product with a new seller unless `sellerId` is given. */
export async function buildProduct(source: DbSource, overrides: ProductOverrides = {}): Promise<Product> {
  const { reviews: reviewCount = 0, withShippingPolicy = false, ...columns } = overrides;
  const sellerId = columns.sellerId ?? (await buildSeller(source)).id;
  const shippingPolicyId =
    columns.shippingPolicyId !== undefined ? columns.shippingPolicyId : withShippingPolicy ? (await buildShippingPolicy(source)).id : null;
  const [row] = await dbOf(source)
    .insert(products)
    .values({ name: uniqueName('Product'), description: 'A test product.', priceCents: 1000, currency: 'USD', ...columns, sellerId, shippingPolicyId })
    .returning();
  for (let i = 0; i < reviewCount; i++) {
    await buildReview(source, { productId: row!.id, author: `reviewer${i + 1}`, rating: (i % 5) + 1 });
  }
  return row!;
}

export interface OrderOverrides extends Partial<Omit<typeof orders.$inferInsert, 'userId'>> {
  userId: number;
  /** Lines of the order; one line of a new product by default. */
  items?: { product?: Product; productId?: number; quantity?: number; unitPriceCents?: number }[];
}

/** An order with its items; `totalCents` is their sum unless given. */
export async function buildOrder(source: DbSource, overrides: OrderOverrides): Promise<Order & { items: OrderItem[] }> {
  const { items = [{}], ...columns } = overrides;
  const lines = [];
  for (const item of items) {
    const product = item.product ?? (item.productId === undefined ? await buildProduct(source) : undefined);
    lines.push({
      productId: item.productId ?? product!.id,
      quantity: item.quantity ?? 1,
      unitPriceCents: item.unitPriceCents ?? product?.priceCents ?? 1000,
    });
  }
  const totalCents = lines.reduce((sum, line) => sum + line.quantity * line.unitPriceCents, 0);
  const db = dbOf(source);
  const [order] = await db.insert(orders).values({ totalCents, ...columns }).returning();
  const inserted = lines.length ? await db.insert(orderItems).values(lines.map((line) => ({ ...line, orderId: order!.id }))).returning() : [];
  return { ...order!, items: inserted };
}
