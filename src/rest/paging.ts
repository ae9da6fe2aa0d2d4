/**
 * Paging and addressing of collections: `limit`/`offset`, the RFC 8288 `Link` to the next
 * page, and the `{id}` path segment.
 */
import type { Request } from 'express';
import { POLICY } from '../policy.js';
import type { Runtime } from '../runtime.js';
import type { Principal } from '../tokens/access-token.js';
import { RestInvalidArgument } from './errors.js';
import type { RestExecutor } from './execute.js';
import type { CompiledOperation } from './selection.js';
import { queryParameter } from './http.js';

/** GraphQL's Int: ids and offsets beyond it cannot exist. */
export const MAX_INT = 2_147_483_647;
export const DEFAULT_LIMIT = POLICY.pageSize.value.default;
export const MAX_LIMIT = POLICY.pageSize.value.max;

function integerParameter(req: Request, name: string, fallback: number, min: number, max: number): number {
  const raw = queryParameter(req, name);
  if (raw === undefined) return fallback;
  const text = raw.trim();
  if (!/^\d{1,10}$/.test(text) || Number(text) < min || Number(text) > max) {
    throw new RestInvalidArgument(`'${name}' must be a whole number from ${min} to ${max}, got '${raw.length > 32 ? `${raw.slice(0, 32)}…` : raw}'`);
  }
  return Number(text);
}

export interface Page {
  limit: number;
  offset: number;
}

/** `limit` (1..200, default 50) and `offset` (≥ 0). */
export function pageOf(req: Request): Page {
  return {
    limit: integerParameter(req, 'limit', DEFAULT_LIMIT, 1, MAX_LIMIT),
    offset: integerParameter(req, 'offset', 0, 0, MAX_INT),
  };
}

/** The `{id}` path segment: a positive integer in canonical form, within GraphQL's Int. */
export function idOf(req: Request): number {
  const raw = String(req.params.id ?? '');
  if (!/^[1-9]\d{0,9}$/.test(raw) || Number(raw) > MAX_INT) {
    throw new RestInvalidArgument(`the id must be a positive integer (at most ${MAX_INT}), got '${raw.length > 32 ? `${raw.slice(0, 32)}…` : raw}'`);
  }
  return Number(raw);
}

/**
 * The RFC 8288 `Link` header to the next page: the same path and parameters (`fields`
 * included, as sent) with `offset` advanced by `limit`, absolute against the public issuer URL.
 */
export function nextLink(runtime: Runtime, req: Request, page: Page): string {
  const url = new URL(`${runtime.config.issuer}${req.baseUrl}${req.path}`);
  const fields = queryParameter(req, 'fields');
  url.searchParams.set('limit', String(page.limit));
  url.searchParams.set('offset', String(page.offset + page.limit));
  if (fields !== undefined) url.searchParams.set('fields', fields);
  return `<${url.href}>; rel="next"`;
}

/**
 * One page and whether another follows, from one SQL statement: the list loads one item past
 * the page (GraphQL's `pageLookahead`), at every page size up to the largest.
 */
export async function fetchPage(
  rest: RestExecutor,
  operation: CompiledOperation,
  page: Page,
  principal: Principal,
): Promise<{ items: unknown[]; hasNext: boolean }> {
  const items = (await rest.run(operation, { limit: page.limit, offset: page.offset }, principal, { pageLookahead: true })) as unknown[];
  return items.length > page.limit ? { items: items.slice(0, page.limit), hasNext: true } : { items, hasNext: false };
}
