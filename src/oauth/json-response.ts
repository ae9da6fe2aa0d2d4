/**
 * The one serializer of the token, revocation and introspection endpoints: `no-store` JSON (RFC 6749 §5.1), errors as
 * the §5.2 object; anything that is not an OAuthError is logged and shown as a bare `server_error`.
 */
import type { ErrorRequestHandler, Request, Response } from 'express';
import type { Logger } from '../logger.js';
import { DatabaseUnavailable, InvalidClient, InvalidHttpRequest, OAuthError, RateLimited, ServerError, UseDpopNonce } from './errors.js';
import { DATABASE_UNAVAILABLE, isDatabaseUnavailable, isStatementTimeout } from '../db/errors.js';
import { bodyReadError } from './params.js';

export const JSON_CONTENT_TYPE = 'application/json;charset=UTF-8';

export function noStore(res: Response): void {
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Pragma', 'no-cache');
}

export function sendJson(res: Response, status: number, body: unknown): void {
  noStore(res);
  // Set directly: res.json would rewrite the media type as "application/json; charset=utf-8".
  res.setHeader('Content-Type', JSON_CONTENT_TYPE);
  res.status(status).end(JSON.stringify(body));
}

export function toOAuthError(error: unknown): OAuthError {
  if (error instanceof OAuthError) return error;
  // A statement past the database's timeout (never expected of OAuth's): busy, as far as a client can tell.
  if (isDatabaseUnavailable(error) || isStatementTimeout(error)) return new DatabaseUnavailable(DATABASE_UNAVAILABLE, { cause: error });
  return bodyReadError(error) ?? new ServerError('the server could not complete the request', { cause: error });
}

export function sendJsonError(res: Response, error: OAuthError): void {
  if (error instanceof InvalidClient && error.viaAuthorizationHeader) {
    res.setHeader('WWW-Authenticate', 'Basic realm="fieldgate", charset="UTF-8"');
  }
  if (error instanceof UseDpopNonce) res.setHeader('DPoP-Nonce', error.nonce);
  if (error instanceof RateLimited || error instanceof DatabaseUnavailable) res.setHeader('Retry-After', String(error.retryAfterSeconds));
  const body = error.expose ? error.toJSON() : { error: 'server_error', error_description: 'internal server error' };
  sendJson(res, error.status, body);
}

export function jsonErrorHandler(logger: Logger): ErrorRequestHandler {
  return function serializeJsonError(error, req, res, next) {
    if (res.headersSent) {
      next(error);
      return;
    }
    const oauthError = toOAuthError(error);
    if (!oauthError.expose) logger.error({ err: error, reqId: req.id }, 'oauth endpoint failed');
    else if (oauthError instanceof DatabaseUnavailable) logger.warn({ err: error, reqId: req.id }, 'oauth endpoint failed: the database is unavailable');
    sendJsonError(res, oauthError);
  };
}

/** `allowed` (as Allow writes it) with HEAD after GET: Express answers HEAD wherever GET is served. */
export function allowHeader(allowed: string): string {
  return /\bGET\b/.test(allowed) && !/\bHEAD\b/.test(allowed) ? allowed.replace(/\bGET\b/, 'GET, HEAD') : allowed;
}

/** 405 with Allow (RFC 9110 §15.5.6), in the endpoints' JSON error format. */
export function methodNotAllowed(allowed: string): (req: Request, res: Response) => void {
  const methods = allowHeader(allowed);
  return function answerMethodNotAllowed(_req, res) {
    res.setHeader('Allow', methods);
    sendJsonError(res, new InvalidHttpRequest(`this endpoint only accepts ${methods}`, { status: 405 }));
  };
}

export const onlyPost = methodNotAllowed('POST');

/** For the published documents (metadata, keys): read-only. */
export const onlyRead = methodNotAllowed('GET, HEAD, OPTIONS');
