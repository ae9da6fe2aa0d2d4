/**
 * CORS for the endpoints a browser-based client calls with fetch: token, revocation,
 * introspection, metadata and JWKS — never /authorize or the sign-in pages, which are
 * top-level navigations only. Origins come from CORS_ORIGINS (`*` allows any). No cookies are
 * involved, so credentials are never allowed.
 */
import cors from 'cors';
import type { RequestHandler } from 'express';

export function oauthCors(origins: readonly string[]): RequestHandler {
  return cors({
    origin: origins.includes('*') ? '*' : [...origins],
    methods: ['GET', 'POST'],
    allowedHeaders: ['Authorization', 'Content-Type', 'DPoP'],
    exposedHeaders: ['DPoP-Nonce', 'WWW-Authenticate'],
    credentials: false,
    maxAge: 600,
  }) as RequestHandler;
}
