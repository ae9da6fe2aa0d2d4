/**
 * Entity tags and conditional reads (RFC 9110 §8.8.3, §13.1.1, §13.1.2; AIP-154). Reads depend on the bearer token, so they
 * are `private, no-cache` with `Vary: Authorization`. If-None-Match is evaluated here, not by Express's `req.fresh`,
 * which ignores it under `Cache-Control: no-cache`, as fetch() sends with every If-None-Match (RFC 9110 §13.2.1).
 */
import { hash } from 'node:crypto';
import type { RequestHandler, Response } from 'express';
import { RestFailedPrecondition, RestInvalidArgument } from './errors.js';

const RESOURCE_VERSION = 'resourceVersion';

export function representationTag(body: string, version?: string): string {
  const digest = hash('sha256', body, 'base64url').slice(0, 22);
  const bare = version?.replace(/^"|"$/g, '');
  return bare ? `"${bare}.${digest}"` : `"${digest}"`;
}

/** `"v.digest"` → `"v"`; If-Match and a body `etag` accept both forms. */
export function versionOf(tag: string): string {
  const match = /^"([^".]*)\.[^".]*"$/.exec(tag);
  return match ? `"${match[1]}"` : tag;
}

export function setResourceVersion(res: Response, version: string | undefined): void {
  res.locals[RESOURCE_VERSION] = version;
}

/** RFC 9110 §13.1.2 weak comparison; a malformed value matches nothing. */
export function noneMatchHolds(header: string | undefined, tag: string): boolean {
  if (header === undefined) return false;
  if (header.trim() === '*') return true;
  const opaque = tag.replace(/^W\//, '');
  for (const match of header.matchAll(/(?:W\/)?("[\x21\x23-\x7e\x80-\xff]*")/g)) {
    if (match[1] === opaque) return true;
  }
  return false;
}

export interface ListedTag {
  /** The quoted tag, `"…"`. */
  opaque: string;
  weak: boolean;
}

export type ConditionHeader = 'If-Match' | 'If-None-Match';

/**
 * An If-Match or If-None-Match value (RFC 9110 §13.1.1, §13.1.2): `*`, or its entity tags; undefined when absent. Anything
 * else is a 400 naming the header: guessing what a malformed precondition meant could let through what it was to stop.
 */
export function parseTagList(name: ConditionHeader, header: string | undefined): '*' | ListedTag[] | undefined {
  if (header === undefined) return undefined;
  if (header.trim() === '*') return '*';
  const tags: ListedTag[] = [];
  // Empty list elements (`"a", , "b"`) are skipped, as RFC 9110 §5.6.1.2 asks of a recipient.
  const item = /[ \t,]*(W\/)?("[\x21\x23-\x7e\x80-\xff]*")[ \t]*(?:,|$)/y;
  while (item.lastIndex < header.length) {
    const start = item.lastIndex;
    const match = item.exec(header);
    if (!match) {
      if (/^[ \t,]*$/.test(header.slice(start))) break;
      const description = `${name} must be * or a list of entity tags such as "abc"`;
      throw new RestInvalidArgument(description, { reason: 'INVALID_PRECONDITION', fieldViolations: [{ field: name, description }] });
    }
    tags.push({ opaque: match[2]!, weak: match[1] !== undefined });
    if (item.lastIndex === start) break;
  }
  return tags;
}

/**
 * If-Match on a read (RFC 9110 §13.1.1), evaluated before If-None-Match (§13.2.2): the representation about to be
 * sent must strongly match a listed tag; `*` matches any. A resource with a version (an order) matches any strong tag
 * of that version — its `etag` field, or the ETag of another `fields` view — as a PATCH's If-Match does. Throws the
 * 412, which the route's error handler sends.
 */
function requireIfMatch(header: string | undefined, tag: string, version: string | undefined): void {
  const listed = parseTagList('If-Match', header);
  if (listed === undefined || listed === '*') return;
  const current = version === undefined ? tag : versionOf(tag);
  if (listed.some((candidate) => !candidate.weak && (version === undefined ? candidate.opaque : versionOf(candidate.opaque)) === current)) return;
  throw new RestFailedPrecondition('the representation has changed since the ETag in If-Match was issued', {
    httpStatus: 412,
    reason: 'ETAG_MISMATCH',
    metadata: { etag: tag },
  });
}

function isRead(method: string): boolean {
  return method === 'GET' || method === 'HEAD';
}

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
  const conditionalRead = res.statusCode === 200 && isRead(req.method);
  if (conditionalRead) requireIfMatch(req.headers['if-match'], tag, version);
  res.setHeader('ETag', tag);
  if (conditionalRead) {
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
