/** CORS for the endpoints a browser client calls with fetch, never /authorize or the sign-in pages (top-level navigations only). */
import type { RequestHandler } from 'express';
import { bearerCors } from '../http/cors.js';

export function oauthCors(origins: readonly string[]): RequestHandler {
  return bearerCors(origins, {
    // PUT and DELETE are the client configuration endpoint's (/register/:client_id, RFC 7592 §2.2, §2.3).
    methods: ['GET', 'POST', 'PUT', 'DELETE'],
    allowedHeaders: ['Authorization', 'Content-Type', 'DPoP'],
    // Retry-After rides on 429 and 503 `temporarily_unavailable`; it is not a CORS-safelisted response header.
    exposedHeaders: ['DPoP-Nonce', 'WWW-Authenticate', 'Retry-After'],
  });
}
