/**
 * CORS for the REST face, so a browser app (a single-page client holding a bearer token) can call it from its own
 * origin, as it calls /graphql and /token (src/http/cors.ts). Requests without an Origin (servers, the benchmarked path)
 * pass untouched; a preflight is answered here.
 */
import type { RequestHandler } from 'express';
import { bearerCors } from '../http/cors.js';
import { IDEMPOTENCY_KEY_HEADER } from './idempotency.js';

/** Request headers a REST client may send cross-origin besides the CORS-safelisted ones. */
const ALLOWED_HEADERS = ['Authorization', 'Content-Type', 'DPoP', 'If-Match', 'If-None-Match', IDEMPOTENCY_KEY_HEADER];
/** Response headers a page may read: its validators, paging, where a new order is, whether it was a replay, and why a token was refused. */
const EXPOSED_HEADERS = ['ETag', 'Link', 'Location', 'Next-Page-Token', 'Idempotent-Replayed', 'Allow', 'Retry-After', 'WWW-Authenticate', 'DPoP-Nonce'];

/** The CORS middleware of one path, allowing the methods it serves (and OPTIONS). */
export function restCors(origins: readonly string[], methods: readonly string[]): RequestHandler {
  const allow = bearerCors(origins, { methods: [...methods, 'OPTIONS'], allowedHeaders: ALLOWED_HEADERS, exposedHeaders: EXPOSED_HEADERS });
  return function allowCrossOrigin(req, res, next) {
    if (req.headers.origin === undefined) return next();
    allow(req, res, next);
  };
}
