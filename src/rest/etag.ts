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
 * The If-None-Match comparison itself is Express's (`req.fresh`, the `fresh` package: weak
 * comparison, `*`, and `Cache-Control: no-cache` on the request forcing a full answer).
 *
 * @example
 *   router.get('/orders/:id', taggedRepresentations(), …, (req, res) => {
 *     setResourceVersion(res, order.etag);
 *     res.json(body); // ETag: "<order.etag>.<digest>"; 304 when If-None-Match has it
 *   });
 */
import { createHash } from 'node:crypto';
import type { RequestHandler, Response } from 'express';

const RESOURCE_VERSION = 'resourceVersion';

/** A strong entity tag for `body`: base64url SHA-256 (128 bits kept), after the resource's version when it has one. */
export function representationTag(body: string, version?: string): string {
  const digest = createHash('sha256').update(body).digest('base64url').slice(0, 22);
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
      res.vary('Authorization');
    }
    const send = res.send.bind(res);
    res.json = function sendTaggedJson(body: unknown) {
      const text = JSON.stringify(body) ?? 'null';
      if (!res.headersSent) res.type('application/json');
      if (res.statusCode >= 200 && res.statusCode < 300) {
        const version = res.locals[RESOURCE_VERSION] as string | undefined;
        res.setHeader('ETag', representationTag(text, version));
      }
      // res.send answers 304 without a body when req.fresh (If-None-Match holds this ETag).
      return send(text);
    };
    next();
  };
}
