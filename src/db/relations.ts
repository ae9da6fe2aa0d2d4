import { defineRelations } from 'drizzle-orm';
import * as schema from './schema.js';

/** Relations for Drizzle's relational query builder (v2), which @pothos/plugin-drizzle plans against. */
export const relations = defineRelations(schema, (r) => ({
  products: {
    seller: r.one.sellers({ from: r.products.sellerId, to: r.sellers.id, optional: false }),
    shippingPolicy: r.one.shippingPolicies({ from: r.products.shippingPolicyId, to: r.shippingPolicies.id }),
    reviews: r.many.reviews({ from: r.products.id, to: r.reviews.productId }),
  },
  sellers: {
    products: r.many.products({ from: r.sellers.id, to: r.products.sellerId }),
  },
  reviews: {
    product: r.one.products({ from: r.reviews.productId, to: r.products.id, optional: false }),
  },
  orders: {
    user: r.one.users({ from: r.orders.userId, to: r.users.id, optional: false }),
    items: r.many.orderItems({ from: r.orders.id, to: r.orderItems.orderId }),
  },
  orderItems: {
    order: r.one.orders({ from: r.orderItems.orderId, to: r.orders.id, optional: false }),
    product: r.one.products({ from: r.orderItems.productId, to: r.products.id, optional: false }),
  },
}));

export type Relations = typeof relations;
