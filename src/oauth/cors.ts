/**
 * CORS for the endpoints a browser client calls with fetch, never /authorize or the sign-in pages (top-level navigations
 * only). No cookies are involved, so credentials are never allowed.
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
