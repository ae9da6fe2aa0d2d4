/** The HTTP steps REST routes are built from, and the `RestRoute` record the router and OpenAPI document share. */
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { Runtime } from '../runtime.js';
import type { Principal } from '../tokens/access-token.js';
import { authenticateFromCache, authenticateRequest, type ResourceRequest } from '../tokens/bearer.js';
import { InvalidToken, OAuthError } from '../oauth/errors.js';
import type { Scope } from '../oauth/scopes.js';
import { fromOAuthError, invalidUrlEncoding, RestInvalidArgument, shownInMessage } from './errors.js';
import { refusingUnsentBodyOver } from '../http/expect-continue.js';
import { repeatedMemberProblem } from '../http/json-members.js';

export const MAX_BODY_BYTES = 64 * 1024;
/** Deepest accepted nesting of arrays and objects in a body; our bodies need three levels. */
export const MAX_BODY_DEPTH = 16;

export type QueryParameter = 'fields' | 'limit' | 'offset' | 'update_mask' | 'page_size' | 'page_token' | 'order_by' | 'filter';

export interface RestRoute {
  method: 'get' | 'post' | 'patch';
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  /** The scope the operation needs (checked by the GraphQL layer it runs through). */
  scope: Scope;
  query: readonly QueryParameter[];
  requestBody?: { description: string; schema: Record<string, unknown> };
  success: { status: 200 | 201; description: string; schema: Record<string, unknown>; headers: readonly ('ETag' | 'Link' | 'Location' | 'Next-Page-Token')[] };
  errors: readonly number[];
  handlers: RequestHandler[];
}

/** Authenticates the access token (Bearer, or DPoP with its proof); a refusal is 401/403 with `WWW-Authenticate`. */
export function authenticate(runtime: Runtime): RequestHandler {
  const resource = runtime.resources.rest.identifier;
  return function authenticateBearerToken(req, res, next) {
    // A token only in the query (RFC 6750 §2.3, which is not read: RFC 9700 §4.3.2) is still no token; the answer says
    // where it goes.
    if (req.headers.authorization === undefined && queryOf(req).access_token !== undefined) {
      return next(fromOAuthError(new InvalidToken(`an access token is required: ${QUERY_TOKEN_HINT}, not the access_token query parameter`, { missing: true })));
    }
    const request = { authorization: req.headers.authorization, dpop: req.headers.dpop, method: req.method, path: req.originalUrl, resource };
    const cached = authenticateFromCache(runtime, request);
    if (!cached) return authenticateFully(runtime, request, res, next);
    res.locals.principal = cached;
    next();
  };
}

async function authenticateFully(runtime: Runtime, request: ResourceRequest, res: Response, next: NextFunction): Promise<void> {
  try {
    res.locals.principal = await authenticateRequest(runtime, request);
    next();
  } catch (error) {
    next(error instanceof OAuthError ? fromOAuthError(error) : error);
  }
}

export function principalOf(res: Response): Principal {
  const principal = res.locals.principal as Principal | undefined;
  if (!principal) throw new Error('the route did not authenticate the request');
  return principal;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * body-parser reads an empty body as `{}`, so a chunked request with no bytes would pass for an empty object (a PATCH
 * that changes nothing, answered 200) where `Content-Length: 0` is refused; and it decodes bytes that are not UTF-8 as
 * U+FFFD, which a write would then store in their place. The decoded text is kept for repeatedMember.
 */
function refuseEmptyOrMalformedUtf8(req: object, _res: unknown, body: Buffer, encoding: string): void {
  const missing = () => Object.assign(new Error('a JSON object request body is required'), { type: 'entity.missing' });
  if (body.length === 0) throw missing();
  // RFC 8259 §8.1: JSON between systems is UTF-8; body-parser would also decode UTF-16 and UTF-32, past the checks here.
  if (encoding.toLowerCase() !== 'utf-8') throw Object.assign(new Error('the request body must be UTF-8'), { type: 'charset.unsupported', status: 415 });
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw Object.assign(new Error('the request body is not valid UTF-8'), { type: 'entity.charset.malformed' });
  }
  // A byte order mark alone decodes to nothing (the decoder drops it), and body-parser would read that as `{}`.
  if (text === '') throw missing();
  (req as Record<symbol, unknown>)[BODY_TEXT] = text;
}

/** The UTF-8 text of a JSON body, kept by the parser's verify step for checks JSON.parse cannot make. */
const BODY_TEXT = Symbol('JSON body text');

const parseJson = refusingUnsentBodyOver(MAX_BODY_BYTES, express.json({ limit: MAX_BODY_BYTES, strict: false, type: () => true, verify: refuseEmptyOrMalformedUtf8 }));

export function jsonObjectBody(): RequestHandler[] {
  return [
    function requireJsonContentType(req, _res, next) {
      const type = req.is(['application/json', 'application/*+json']);
      const empty = type === null || (req.headers['content-length'] === '0' && req.headers['transfer-encoding'] === undefined);
      if (empty) return next(new RestInvalidArgument('a JSON object request body is required', { reason: 'MISSING_BODY' }));
      if (type === false) {
        return next(
          new RestInvalidArgument(`the request body must be application/json, not ${req.headers['content-type'] ? `'${req.headers['content-type'].slice(0, 64)}'` : 'untyped'}`, {
            httpStatus: 415,
            reason: 'UNSUPPORTED_MEDIA_TYPE',
            metadata: { accepted: 'application/json' },
          }),
        );
      }
      next();
    },
    parseJson,
    function requireJsonObject(req, _res, next) {
      const body: unknown = req.body;
      if (typeof body !== 'object' || body === null || Array.isArray(body)) {
        return next(
          new RestInvalidArgument(`the request body must be a JSON object, not ${Array.isArray(body) ? 'an array' : body === null ? 'null' : `a ${typeof body}`}`, {
            reason: 'BODY_NOT_AN_OBJECT',
          }),
        );
      }
      if (deeperThan(body, MAX_BODY_DEPTH)) return next(new RestInvalidArgument(`the request body is nested deeper than ${MAX_BODY_DEPTH} levels`, { reason: 'BODY_TOO_DEEP' }));
      const text = (req as unknown as Record<symbol, unknown>)[BODY_TEXT];
      const repeated = typeof text === 'string' ? repeatedMemberProblem(text) : undefined;
      if (repeated) {
        return next(new RestInvalidArgument(repeated.message, { reason: 'DUPLICATE_JSON_MEMBER', fieldViolations: [{ field: repeated.field, description: repeated.message }] }));
      }
      next();
    },
  ];
}

/** Whether a parsed JSON value nests arrays/objects deeper than `max` (iteratively: no stack to blow). */
function deeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop()!;
    if (typeof current !== 'object' || current === null) continue;
    if (depth > max) return true;
    for (const child of Object.values(current)) stack.push([child, depth + 1]);
  }
  return false;
}

/** How many `&`-separated pairs the app's query parser (node's querystring, `maxKeys`) reads; it drops the rest. */
export const MAX_QUERY_PAIRS = 1000;

/** Whether the raw query string has pairs the parser dropped (empty ones count, as they do for the parser). */
function hasUnreadPairs(url: string): boolean {
  const start = url.indexOf('?');
  // Fewer characters than pairs allowed cannot hold too many separators.
  if (start < 0 || url.length - start <= MAX_QUERY_PAIRS) return false;
  let pairs = 1;
  for (let at = url.indexOf('&', start); at >= 0; at = url.indexOf('&', at + 1)) if (++pairs > MAX_QUERY_PAIRS) return true;
  return false;
}

/**
 * The name of the first query parameter whose percent-encoding does not decode to UTF-8. The query
 * parser would read it leniently (`%FF` as U+FFFD, a lone `%` as itself), so a filter or page
 * token would silently mean something else than the client wrote.
 */
function badlyEncodedParameter(url: string): string | undefined {
  const start = url.indexOf('?');
  if (start < 0 || !url.includes('%', start)) return undefined;
  for (const pair of url.slice(start + 1).split('&')) {
    if (!pair.includes('%')) continue;
    try {
      decodeURIComponent(pair.replace(/\+/g, ' '));
    } catch {
      return shownInMessage(pair.split('=', 1)[0]!);
    }
  }
  return undefined;
}

const QUERY_TOKEN_HINT = 'send the access token in the Authorization header';

function unknownQueryParameter(name: string, names: readonly string[]): RestInvalidArgument {
  const shown = shownInMessage(name);
  const hint = name === 'access_token' ? QUERY_TOKEN_HINT : `this route takes ${names.length ? names.join(', ') : 'no query parameters'}`;
  return new RestInvalidArgument(`unknown query parameter '${shown}': ${hint}`, {
    reason: 'UNKNOWN_QUERY_PARAMETER',
    metadata: { parameter: shown },
    fieldViolations: [{ field: shown, description: hint }],
  });
}

/**
 * Refuses undocumented query parameters (a typo such as `field=id` would change the answer silently), repeats, and
 * more pairs than the parser reads (a `filter` after the 1000th `&` would be dropped, not applied).
 */
export function onlyQueryParameters(names: readonly QueryParameter[]): RequestHandler {
  const known = new Set<string>(names);
  return function refuseUnknownQueryParameters(req, _res, next) {
    if (hasUnreadPairs(req.originalUrl)) {
      const description = `too many query parameters: at most ${MAX_QUERY_PAIRS} '&'-separated pairs, empty ones included`;
      return next(new RestInvalidArgument(description, { reason: 'TOO_MANY_QUERY_PARAMETERS', metadata: { limit: String(MAX_QUERY_PAIRS) } }));
    }
    const badlyEncoded = badlyEncodedParameter(req.originalUrl);
    if (badlyEncoded !== undefined) {
      return next(invalidUrlEncoding(`the query parameter '${badlyEncoded}' is not valid percent-encoded UTF-8`, undefined, badlyEncoded));
    }
    for (const [name, value] of Object.entries(queryOf(req))) {
      if (!known.has(name)) return next(unknownQueryParameter(name, names));
      if (typeof value !== 'string') return next(repeatedParameter(name));
    }
    next();
  };
}

const PARSED_QUERY = Symbol('parsed query');

/** `req.query`, parsed once per request: Express 5 parses the query string on every read of it. */
export function queryOf(req: Request): Record<string, unknown> {
  const locals = req.res!.locals as Record<symbol, unknown>;
  return (locals[PARSED_QUERY] ??= req.query) as Record<string, unknown>;
}

export function queryParameter(req: Request, name: string): string | undefined {
  const value = queryOf(req)[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw repeatedParameter(name);
  return value;
}

function repeatedParameter(name: string): RestInvalidArgument {
  const description = `the query parameter '${name}' is given more than once`;
  return new RestInvalidArgument(description, { reason: 'REPEATED_QUERY_PARAMETER', metadata: { parameter: name }, fieldViolations: [{ field: name, description }] });
}

