import { placeholder } from '../../db/performance/relational-query-cache.js';
import { products } from '../../db/schema.js';
import { builder } from '../builder.js';
import { needsScope } from '../scopes.js';
import { nestedLimit, nestedListArgs, nestedListCost, page, pageArgs, pageCost, pagePlaceholders, type NestedListBounds } from '../pagination.js';
import { POLICY } from '../../policy.js';

/** A product's reviews, oldest first; a product can have any number of them. */
export const REVIEWS: NestedListBounds = POLICY.reviewsList.value;

type ProductRow = typeof products.$inferSelect;

export const Product = builder.drizzleObject('products', {
  name: 'Product',
  // Wherever a Product is reached (a list, an order item), reading it needs products:read.
  extensions: needsScope('products:read'),
  select: {},
  fields: (t) => ({
    id: t.exposeInt('id'),
    name: t.exposeString('name'),
    description: t.exposeString('description', { nullable: true }),
    priceCents: t.exposeInt('priceCents'),
    currency: t.exposeString('currency', { description: 'ISO 4217 code, such as USD.' }),
    seller: t.relation('seller'),
    shippingPolicy: t.relation('shippingPolicy', { nullable: true }),
    reviews: t.relation('reviews', {
      description: `The product's reviews, oldest first: the first \`limit\` (default ${REVIEWS.defaultSize}, at most ${REVIEWS.maxSize}).`,
      args: nestedListArgs(REVIEWS),
      complexity: nestedListCost(REVIEWS),
      query: (args) => ({ orderBy: { id: 'asc' }, limit: nestedLimit(REVIEWS, args) }),
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
  }),
});

builder.queryFields((t) => ({
  products: t.drizzleField({
    type: [Product],
    description: 'The catalogue, by id.',
    extensions: needsScope('products:read'),
    args: pageArgs,
    complexity: pageCost,
    resolve: (query, _root, args, context) => {
      const { limit, offset } = page(args, context);
      const config = query({ orderBy: { id: 'asc' }, ...pagePlaceholders });
      return context.queries.findMany<ProductRow>(context.db, 'products', config, { limit, offset });
    },
  }),
  product: t.drizzleField({
    type: Product,
    nullable: true,
    description: 'One product, or null when there is none with this id.',
    extensions: needsScope('products:read'),
    args: { id: t.arg.int({ required: true }) },
    resolve: (query, _root, args, context) =>
      context.queries.findFirst<ProductRow>(context.db, 'products', query({ where: { id: placeholder('id') } }), { id: args.id }),
  }),
}));
