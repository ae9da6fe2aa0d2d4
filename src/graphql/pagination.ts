/**
 * `limit`/`offset` arguments of the list fields, their checks, and their cost: a list costs
 * `limit` times its selection, so `limit: 200` costs what it loads. Nested lists (a product's
 * reviews, an order's items) take a bounded `limit` of their own, applied as a SQL LIMIT inside
 * the one relational statement and costed the same way, so no accepted request loads more rows
 * than GRAPHQL_MAX_COST.
 */
import { placeholder } from '../db/performance/relational-query-cache.js';
import { POLICY, type NestedList } from '../policy.js';
import { builder } from './builder.js';
import { GqlInvalidArgument } from './errors.js';

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

/** `limit` and `offset` of a relational query, bound per request from `page(args)`. */
export const pagePlaceholders = { limit: placeholder('limit'), offset: placeholder('offset') };

/**
 * Complexity of a list field: its own 1 plus `limit` times its selection. An out-of-range
 * limit is costed at the nearest allowed value, so the client gets the clearer argument error.
 */
export function pageCost(args: PageArgs): { field: number; multiplier: number } {
  const limit = args.limit ?? DEFAULT_PAGE_SIZE;
  return { field: 1, multiplier: Math.min(Math.max(limit, 1), MAX_PAGE_SIZE) };
}

/** Default and maximum size of a nested list. */
export type NestedListBounds = NestedList;

/** The `limit` argument of a nested list field. */
export function nestedListArgs(bounds: NestedListBounds) {
  return builder.args((t) => ({
    limit: t.int({ defaultValue: bounds.defaultSize, description: `From 1 to ${bounds.maxSize}.` }),
  }));
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
