/**
 * Paging and addressing of collections. Two ways to page a list:
 *
 * - page tokens (AIP-158), the default: `page_size` and `page_token`, the next token in
 *   `Next-Page-Token` and in an RFC 8288 `Link: <…>; rel="next"`. Tokens are the GraphQL
 *   connection's signed cursors, so pages are stable under concurrent writes;
 * - `limit`/`offset` (legacy): kept for existing clients; pages drift when rows are inserted or
 *   deleted between requests.
 *
 * Mixing the two is a 400. `filter` and `order_by` work with both.
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
/** AIP-158 page sizes: the same bounds as the legacy limit. */
export const DEFAULT_PAGE_SIZE = DEFAULT_LIMIT;
export const MAX_PAGE_SIZE = MAX_LIMIT;

const shown = (raw: string) => (raw.length > 32 ? `${raw.slice(0, 32)}…` : raw);

function integerParameter(req: Request, name: string, fallback: number, min: number, max: number): number {
  const raw = queryParameter(req, name);
  if (raw === undefined) return fallback;
  const text = raw.trim();
  if (!/^\d{1,10}$/.test(text) || Number(text) < min || Number(text) > max) {
    throw new RestInvalidArgument(`'${name}' must be a whole number from ${min} to ${max}, got '${shown(raw)}'`, {
      fieldViolations: [{ field: name, description: `a whole number from ${min} to ${max}` }],
    });
  }
  return Number(text);
}

export interface OffsetPage {
  kind: 'offset';
  limit: number;
  offset: number;
}

export interface TokenPage {
  kind: 'token';
  pageSize: number;
  /** The token of the page to read; undefined (or empty in the request) for the first page. */
  pageToken: string | undefined;
}

/** How the request pages: `limit`/`offset` if it names either, otherwise page tokens. */
export function pagingOf(req: Request): OffsetPage | TokenPage {
  const legacy = queryParameter(req, 'limit') !== undefined || queryParameter(req, 'offset') !== undefined;
  const tokens = queryParameter(req, 'page_size') !== undefined || queryParameter(req, 'page_token') !== undefined;
  if (legacy && tokens) {
    throw new RestInvalidArgument('page with page_size/page_token or with limit/offset, not both', {
      fieldViolations: [{ field: 'page_size', description: 'not together with limit or offset' }],
    });
  }
  if (legacy) return { kind: 'offset', ...pageOf(req) };
  const token = queryParameter(req, 'page_token');
  return { kind: 'token', pageSize: pageSizeOf(req), pageToken: token === '' ? undefined : token };
}

/**
 * `page_size` (AIP-158): absent or 0 is the default (50), above the maximum (200) is the
 * maximum; anything but a whole number is a 400.
 */
export function pageSizeOf(req: Request): number {
  const raw = queryParameter(req, 'page_size');
  if (raw === undefined) return DEFAULT_PAGE_SIZE;
  const text = raw.trim();
  if (!/^\d+$/.test(text)) {
    throw new RestInvalidArgument(`'page_size' must be a whole number (0 for the default), got '${shown(raw)}'`, {
      fieldViolations: [{ field: 'page_size', description: 'a whole number, 0 for the default' }],
    });
  }
  const size = text.length > 10 ? Infinity : Number(text);
  return size === 0 ? DEFAULT_PAGE_SIZE : Math.min(size, MAX_PAGE_SIZE);
}

/** `limit` (1..200, default 50) and `offset` (≥ 0). */
export function pageOf(req: Request): { limit: number; offset: number } {
  return {
    limit: integerParameter(req, 'limit', DEFAULT_LIMIT, 1, MAX_LIMIT),
    offset: integerParameter(req, 'offset', 0, 0, MAX_INT),
  };
}

/** The `{id}` path segment: a positive integer in canonical form, within GraphQL's Int. */
export function idOf(req: Request): number {
  const raw = String(req.params.id ?? '');
  if (!/^[1-9]\d{0,9}$/.test(raw) || Number(raw) > MAX_INT) {
    throw new RestInvalidArgument(`the id must be a positive integer (at most ${MAX_INT}), got '${shown(raw)}'`, {
      fieldViolations: [{ field: 'id', description: `a positive integer, at most ${MAX_INT}` }],
    });
  }
  return Number(raw);
}

/**
 * The RFC 8288 `Link` header to the next page: the same path and query parameters as sent,
 * with `changes` applied, absolute against the public issuer URL.
 */
export function nextLink(runtime: Runtime, req: Request, changes: Record<string, string>): string {
  const url = new URL(`${runtime.config.issuer}${req.baseUrl}${req.path}`);
  for (const [name, value] of Object.entries(changes)) url.searchParams.set(name, value);
  for (const [name, value] of Object.entries(req.query as Record<string, unknown>)) {
    if (typeof value === 'string' && !Object.hasOwn(changes, name)) url.searchParams.set(name, value);
  }
  return `<${url.href}>; rel="next"`;
}

/**
 * One offset page and whether another follows, from one SQL statement: the list loads one item
 * past the page (GraphQL's `pageLookahead`), at every page size up to the largest.
 */
export async function fetchPage(
  rest: RestExecutor,
  operation: CompiledOperation,
  page: { limit: number; offset: number },
  variables: Record<string, unknown>,
  principal: Principal,
): Promise<{ items: unknown[]; hasNext: boolean }> {
  const items = (await rest.run(operation, { ...variables, limit: page.limit, offset: page.offset }, principal, { pageLookahead: true })) as unknown[];
  return items.length > page.limit ? { items: items.slice(0, page.limit), hasNext: true } : { items, hasNext: false };
}
