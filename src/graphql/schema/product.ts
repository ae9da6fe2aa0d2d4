import { products } from '../../db/schema.js';
import { builder } from '../builder.js';
import { needsScope } from '../scopes.js';
import {
  connectionArgs,
  connectionCost,
  connectionType,
  nestedLimit,
  nestedListArgs,
  nestedListCost,
  nestedOrder,
  page,
  pageArgs,
  pageCost,
  pageQuery,
  type NestedListBounds,
} from '../pagination.js';
import { POLICY } from '../../policy.js';
import { listArgs, listQuery, orderByOf, resolveConnection, type ListSpec } from '../listing.js';

/** A product's reviews, oldest first; a product can have any number of them. */
export const REVIEWS: NestedListBounds = { ...POLICY.reviewsList.value, sortable: { id: 'id', rating: 'rating', createdAt: 'createdAt' } };

type ProductRow = typeof products.$inferSelect;

/** What the catalogue may be filtered and sorted by; `price` is short for `priceCents`. */
export const PRODUCT_LIST: ListSpec = {
  name: 'products',
  filter: {
    id: { column: 'id', type: 'int' },
    name: { column: 'name', type: 'string' },
    description: { column: 'description', type: 'string' },
    priceCents: { column: 'priceCents', type: 'int' },
    price: { column: 'priceCents', type: 'int' },
    currency: { column: 'currency', type: 'string' },
    createdAt: { column: 'createdAt', type: 'timestamp' },
    updatedAt: { column: 'updatedAt', type: 'timestamp' },
    'seller.id': { relation: 'seller', column: 'id', type: 'int' },
    'seller.name': { relation: 'seller', column: 'name', type: 'string' },
    'seller.rating': { relation: 'seller', column: 'rating', type: 'real' },
    'reviews.rating': { relation: 'reviews', column: 'rating', type: 'int' },
    'reviews.author': { relation: 'reviews', column: 'author', type: 'string' },
  },
  sort: {
    id: { column: 'id', type: 'int' },
    name: { column: 'name', type: 'string' },
    priceCents: { column: 'priceCents', type: 'int' },
    price: { column: 'priceCents', type: 'int' },
    createdAt: { column: 'createdAt', type: 'timestamp' },
  },
  defaultOrder: [{ field: 'id', direction: 'asc' }],
};

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
      description: `The product's reviews, oldest first unless \`orderBy\` says otherwise: the first \`limit\` (default ${REVIEWS.defaultSize}, at most ${REVIEWS.maxSize}).`,
      args: nestedListArgs(REVIEWS),
      complexity: nestedListCost(REVIEWS),
      query: (args) => ({ orderBy: nestedOrder(REVIEWS, args), limit: nestedLimit(REVIEWS, args) }),
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
  }),
});

const ProductConnection = connectionType<ProductRow>('Product', Product);

builder.queryFields((t) => ({
  products: t.drizzleField({
    type: [Product],
    description: 'The catalogue, by id.',
    extensions: needsScope('products:read'),
    args: { ...pageArgs, ...listArgs },
    complexity: pageCost,
    resolve: (query, _root, args, context) => {
      const paged = page(args, context);
      const { filter, keys } = listQuery(PRODUCT_LIST, args);
      const config = query({ ...(filter.where && { where: filter.where as never }), orderBy: orderByOf(keys), ...pageQuery(paged) });
      return context.queries.findMany<ProductRow>(context.db, 'products', config, { ...filter.values, offset: paged.offset });
    },
  }),
  productsConnection: t.field({
    type: ProductConnection,
    description: 'The catalogue as a cursor connection: filtered (AIP-160), ordered (AIP-132, id by default) and paged by `after`.',
    extensions: needsScope('products:read'),
    args: connectionArgs,
    complexity: connectionCost,
    resolve: (_root, args, context, info) => resolveConnection<ProductRow>({ spec: PRODUCT_LIST, table: 'products', typeName: 'Product', args }, context, info),
  }),
  product: t.drizzleField({
    type: Product,
    nullable: true,
    description: 'One product, or null when there is none with this id.',
    extensions: needsScope('products:read'),
    args: { id: t.arg.int({ required: true }) },
    resolve: (query, _root, args, context) =>
      context.queries.findById<ProductRow>(context.db, 'products', query({}), args.id),
  }),
}));
