/**
 * `limit`/`offset` arguments of the list fields, their checks, and their cost: a list costs
 * `limit` times its selection, so `limit: 200` costs what it loads. Nested lists (a product's
 * reviews, an order's items) take a bounded `limit` of their own, applied as a SQL LIMIT inside
 * the one relational statement and costed the same way, so no accepted request loads more rows
 * than GRAPHQL_MAX_COST.
 */
import type { ObjectRef } from '@pothos/core';
import type { Placeholder } from 'drizzle-orm';
import { placeholder, rowCount } from '../db/performance/relational-query-cache.js';
import { POLICY, type NestedList } from '../policy.js';
import { builder, type SchemaTypes } from './builder.js';
import { GqlInvalidArgument } from './errors.js';
import { OrderBySyntaxError, parseOrderBy } from '../api/order-by.js';

export const DEFAULT_PAGE_SIZE = POLICY.pageSize.value.default;
export const MAX_PAGE_SIZE = POLICY.pageSize.value.max;

/** The `limit` and `offset` arguments every list field takes. */
export const pageArgs = builder.args((t) => ({
  limit: t.int({ defaultValue: DEFAULT_PAGE_SIZE, description: `From 1 to ${MAX_PAGE_SIZE}.` }),
  offset: t.int({ defaultValue: 0 }),
}));

export interface PageArgs {
  limit?: number | null;
  offset?: number | null;
}

/**
 * The page a list field loads; INVALID_ARGUMENT outside 1..200 / ≥ 0. A root list passes its
 * context: with `pageLookahead` (set by the REST layer) it loads one row past the page, in the
 * same statement, so the caller knows whether a next page exists without a second query.
 */
export function page(args: PageArgs, context?: { pageLookahead?: boolean | undefined }): { limit: number; offset: number } {
  const limit = args.limit ?? DEFAULT_PAGE_SIZE;
  const offset = args.offset ?? 0;
  if (limit < 1 || limit > MAX_PAGE_SIZE) {
    throw new GqlInvalidArgument(`limit must be from 1 to ${MAX_PAGE_SIZE}, got ${limit}`, { extensions: { field: 'limit' } });
  }
  if (offset < 0) throw new GqlInvalidArgument(`offset must not be negative, got ${offset}`, { extensions: { field: 'offset' } });
  return { limit: context?.pageLookahead ? limit + 1 : limit, offset };
}

/**
 * `limit` and `offset` of a relational query for `page(args)`: the page size written into the
 * statement, so PostgreSQL can keep one plan for it (`rowCount`), the offset bound per request and
 * left out on the first page, which is then planned once however large the table.
 */
export function pageQuery({ limit, offset }: { limit: number; offset: number }): { limit: Placeholder; offset?: Placeholder } {
  // Drizzle writes whatever SQL it is given as a limit; its types name only numbers and placeholders.
  return { limit: rowCount(limit) as unknown as Placeholder, ...(offset > 0 && { offset: placeholder('offset') }) };
}

/**
 * Complexity of a list field: its own 1 plus `limit` times its selection. An out-of-range
 * limit is costed at the nearest allowed value, so the client gets the clearer argument error.
 */
export function pageCost(args: PageArgs): { field: number; multiplier: number } {
  const limit = args.limit ?? DEFAULT_PAGE_SIZE;
  return { field: 1, multiplier: Math.min(Math.max(limit, 1), MAX_PAGE_SIZE) };
}

/** Default and maximum size of a nested list. */
export interface NestedListBounds extends NestedList {
  /** Fields the list may be ordered by (`orderBy`, AIP-132), as clients write them → Drizzle columns; `id` breaks ties. */
  sortable: Readonly<Record<string, string>>;
}

/** The `limit` and `orderBy` arguments of a nested list field. */
export function nestedListArgs(bounds: NestedListBounds) {
  return builder.args((t) => ({
    limit: t.int({ defaultValue: bounds.defaultSize, description: `From 1 to ${bounds.maxSize}.` }),
    orderBy: t.string({ description: `AIP-132 order over ${Object.keys(bounds.sortable).join(', ')}; by id when absent.` }),
  }));
}

/** The relational `orderBy` of a nested list; INVALID_ARGUMENT naming `<field>.orderBy` for anything not sortable. */
export function nestedOrder(bounds: NestedListBounds, args: { orderBy?: string | null }): Record<string, 'asc' | 'desc'> {
  let terms;
  try {
    terms = parseOrderBy(args.orderBy ?? '', new Set(Object.keys(bounds.sortable)));
  } catch (error) {
    if (!(error instanceof OrderBySyntaxError)) throw error;
    throw new GqlInvalidArgument(`${bounds.field} orderBy ${error.message}`, { extensions: { field: `${bounds.field}.orderBy` } });
  }
  const order: Record<string, 'asc' | 'desc'> = {};
  for (const term of terms) order[bounds.sortable[term.field]!] = term.direction;
  if (!('id' in order)) order.id = 'asc';
  return order;
}

/** The size a nested list loads; INVALID_ARGUMENT outside 1..maxSize. */
export function nestedLimit(bounds: NestedListBounds, args: { limit?: number | null }): number {
  const limit = args.limit ?? bounds.defaultSize;
  if (limit < 1 || limit > bounds.maxSize) {
    throw new GqlInvalidArgument(`${bounds.field} limit must be from 1 to ${bounds.maxSize}, got ${limit}`, {
      extensions: { field: `${bounds.field}.limit` },
    });
  }
  return limit;
}

/** Complexity of a nested list: like `pageCost`, `limit` (clamped to its bounds) times its selection. */
export function nestedListCost(bounds: NestedListBounds) {
  return (args: { limit?: number | null }): { field: number; multiplier: number } => {
    const limit = args.limit ?? bounds.defaultSize;
    return { field: 1, multiplier: Math.min(Math.max(limit, 1), bounds.maxSize) };
  };
}

// ---------------------------------------------------------------- cursor connections (Relay)

/** `first` as a page size: absent or 0 is the default, above the maximum is the maximum (AIP-158), negative is refused. */
export function connectionSize(first: number | null | undefined): number {
  if (first === null || first === undefined || first === 0) return DEFAULT_PAGE_SIZE;
  if (first < 0) throw new GqlInvalidArgument(`first must not be negative, got ${first}`, { extensions: { field: 'first' } });
  return Math.min(first, MAX_PAGE_SIZE);
}

/** The arguments of every connection field. */
export const connectionArgs = builder.args((t) => ({
  first: t.int({ description: `Page size: absent or 0 means ${DEFAULT_PAGE_SIZE}; more than ${MAX_PAGE_SIZE} means ${MAX_PAGE_SIZE}.` }),
  after: t.string({ description: 'The `endCursor` of the previous page; valid only with the same `filter` and `orderBy`.' }),
  orderBy: t.string({ description: 'AIP-132 order, such as `priceCents desc, name`; `id` breaks ties.' }),
  filter: t.string({ description: 'AIP-160 filter, such as `priceCents < 5000 AND seller.name = "Acme"`.' }),
}));

/** A connection costs its page size times its selection, like a list. */
export function connectionCost(args: { first?: number | null }): { field: number; multiplier: number } {
  const first = args.first ?? 0;
  return { field: 1, multiplier: first <= 0 ? DEFAULT_PAGE_SIZE : Math.min(first, MAX_PAGE_SIZE) };
}

export interface PageInfoShape {
  hasNextPage: boolean;
  hasPreviousPage: boolean;
  startCursor: string | null;
  endCursor: string | null;
}

export const PageInfo = builder.objectRef<PageInfoShape>('PageInfo').implement({
  description: 'Where a page of a connection stands (Relay cursor connections). Paging is forward only.',
  fields: (t) => ({
    hasNextPage: t.exposeBoolean('hasNextPage'),
    hasPreviousPage: t.exposeBoolean('hasPreviousPage', { description: 'Always false: pages are read forward.' }),
    startCursor: t.exposeString('startCursor', { nullable: true }),
    endCursor: t.exposeString('endCursor', { nullable: true, description: 'Pass as `after` for the next page; null on an empty page.' }),
  }),
});

const PAGE_ITEMS = { field: 0, multiplier: 1 };

/** One page of a connection: the rows and a lazily signed cursor per row. */
export interface ConnectionShape<Row> {
  nodes: Row[];
  edges: { node: Row; cursor: () => string }[];
  pageInfo: PageInfoShape;
}

/** `<Name>Connection { edges { cursor node } nodes pageInfo }` and `<Name>Edge` over a node type. */
export function connectionType<Row>(name: string, node: ObjectRef<PothosSchemaTypes.ExtendDefaultTypes<SchemaTypes>, unknown>) {
  const Edge = builder.objectRef<{ node: Row; cursor: () => string }>(`${name}Edge`).implement({
    fields: (t) => ({
      cursor: t.string({ resolve: (edge) => edge.cursor() }),
      node: t.field({ type: node, resolve: (edge) => edge.node as never }),
    }),
  });
  return builder.objectRef<ConnectionShape<Row>>(`${name}Connection`).implement({
    fields: (t) => ({
      // The connection field already multiplies by the page size: the lists inside count once.
      edges: t.field({ type: [Edge], complexity: PAGE_ITEMS, resolve: (connection) => connection.edges }),
      nodes: t.field({ type: [node], complexity: PAGE_ITEMS, resolve: (connection) => connection.nodes as never }),
      pageInfo: t.field({ type: PageInfo, resolve: (connection) => connection.pageInfo }),
    }),
  });
}
