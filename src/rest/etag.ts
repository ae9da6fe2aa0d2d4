/**
 * Entity tags and conditional reads for the REST layer (RFC 9110 §8.8.3, §13.1.2; AIP-154).
 *
 * Every 2xx JSON answer carries a strong `ETag` computed from the exact bytes sent, so two
 * representations differ in tag whenever they differ in content — including data of other
 * resources they embed (an order's `items.product`) and the `fields` asked for. A resource
 * with its own version (an order's `etag`) puts it in front of the digest, `"<version>.<digest>"`,
 * so `If-Match` can be checked inside the UPDATE itself (see `versionOf`).
 *
 * GET and HEAD answers are `Cache-Control: private, no-cache` and `Vary: Authorization`: they
 * depend on the bearer token, so no shared cache may keep them, and a private cache revalidates
 * with `If-None-Match` every time, getting 304 (no body, same ETag) while nothing changed.
 * If-None-Match is evaluated here rather than by Express's `req.fresh`: that one ignores the
 * condition when the request says `Cache-Control: no-cache`, which fetch() adds to every request
 * carrying If-None-Match, so a fetch client would never see a 304. An origin server evaluates
 * the condition whatever the request's cache directives (RFC 9110 §13.2.1).
 *
 * @example
 *   router.get('/orders/:id', taggedRepresentations(), …, (req, res) => {
 *     setResourceVersion(res, order.etag);
 *     res.json(body); // ETag: "<order.etag>.<digest>"; 304 when If-None-Match has it
 *   });
 */
import { hash } from 'node:crypto';
import type { RequestHandler, Response } from 'express';

const RESOURCE_VERSION = 'resourceVersion';

/** A strong entity tag for `body`: base64url SHA-256 (128 bits kept), after the resource's version when it has one. */
export function representationTag(body: string, version?: string): string {
  const digest = hash('sha256', body, 'base64url').slice(0, 22);
  const bare = version?.replace(/^"|"$/g, '');
  return bare ? `"${bare}.${digest}"` : `"${digest}"`;
}

/**
 * The resource version an entity tag stands for: `"v.digest"` → `"v"`; a tag without a digest
 * (an order's `etag` field) is returned as it is. `If-Match` and a body `etag` accept both forms.
 */
export function versionOf(tag: string): string {
  const match = /^"([^".]*)\.[^".]*"$/.exec(tag);
  return match ? `"${match[1]}"` : tag;
}

/** The version the next JSON answer's ETag starts with (e.g. an order's `etag`). */
export function setResourceVersion(res: Response, version: string | undefined): void {
  res.locals[RESOURCE_VERSION] = version;
}

/**
 * Whether an If-None-Match field value matches `tag` (RFC 9110 §13.1.2: `*`, or any listed
 * entity tag under weak comparison). A malformed value matches nothing, so it costs a full answer.
 */
export function noneMatchHolds(header: string | undefined, tag: string): boolean {
  if (header === undefined) return false;
  if (header.trim() === '*') return true;
  const opaque = tag.replace(/^W\//, '');
  for (const match of header.matchAll(/(?:W\/)?("[\x21\x23-\x7e\x80-\xff]*")/g)) {
    if (match[1] === opaque) return true;
  }
  return false;
}

function isRead(method: string): boolean {
  return method === 'GET' || method === 'HEAD';
}

/**
 * Tags every successful JSON answer of the route and makes reads private and revalidated.
 * Mounted first on each REST route, so route bodies just call `res.json`.
 */
export function taggedRepresentations(): RequestHandler {
  return function tagRepresentations(req, res, next) {
    if (isRead(req.method)) {
      res.setHeader('Cache-Control', 'private, no-cache');
      if (res.getHeader('Vary') === undefined) res.setHeader('Vary', 'Authorization');
      else res.vary('Authorization');
    }
    res.json = sendTaggedJson;
    next();
  };
}

/** `res.json` of a tagged route: one function for every response, so a request allocates no closure. */
function sendTaggedJson(this: Response, body: unknown): Response {
  const res = this;
  const req = res.req;
  const text = JSON.stringify(body) ?? 'null';
  if (res.statusCode < 200 || res.statusCode >= 300) {
    if (!res.headersSent) res.type('application/json');
    return res.send(text);
  }
  const version = res.locals[RESOURCE_VERSION] as string | undefined;
  const tag = representationTag(text, version);
  res.setHeader('ETag', tag);
  if (res.statusCode === 200 && isRead(req.method)) {
    if (noneMatchHolds(req.headers['if-none-match'], tag)) {
      res.status(304).end();
      return res;
    }
    // What res.send would do for this answer, without its content-type parsing and freshness
    // check: the condition above is the one that decides.
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.setHeader('Content-Length', Buffer.byteLength(text));
    res.end(text);
    return res;
  }
  res.type('application/json');
  return res.send(text);
}
