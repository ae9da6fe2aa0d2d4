// AIP-158 page tokens are the connection's signed cursors, stable under concurrent writes; legacy `limit`/`offset`
// pages drift when rows change between requests. Mixing the two is a 400.
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
  pageToken: string | undefined;
}

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

export function pageSizeOf(req: Request): number {
  const raw = queryParameter(req, 'page_size');
  if (raw === undefined) return DEFAULT_PAGE_SIZE;
  const text = raw.trim();
  if (!/^\d+$/.test(text)) {
    throw new RestInvalidArgument(`'page_size' must be a whole number (0 for the default), got '${shown(raw)}'`, {
      fieldViolations: [{ field: 'page_size', description: 'a whole number, 0 for the default' }],
    });
  }
  // Number() reads any run of digits (leading zeros included; Infinity past 309 digits), and larger is clamped anyway.
  const size = Number(text);
  return size === 0 ? DEFAULT_PAGE_SIZE : Math.min(size, MAX_PAGE_SIZE);
}

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

export function nextLink(runtime: Runtime, req: Request, changes: Record<string, string>): string {
  const url = new URL(`${runtime.config.issuer}${req.baseUrl}${req.path}`);
  for (const [name, value] of Object.entries(changes)) url.searchParams.set(name, value);
  for (const [name, value] of Object.entries(req.query as Record<string, unknown>)) {
    if (typeof value === 'string' && !Object.hasOwn(changes, name)) url.searchParams.set(name, value);
  }
  return `<${url.href}>; rel="next"`;
}

/** Loads one item past the page (`pageLookahead`), so one SQL statement also says whether another follows. */
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
