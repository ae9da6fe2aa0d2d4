/** CORS for the endpoints a browser client calls with fetch, never /authorize or the sign-in pages (top-level navigations only). */
import type { RequestHandler } from 'express';
import { bearerCors } from '../http/cors.js';

export function oauthCors(origins: readonly string[]): RequestHandler {
  return bearerCors(origins, {
    methods: ['GET', 'POST'],
    allowedHeaders: ['Authorization', 'Content-Type', 'DPoP'],
    exposedHeaders: ['DPoP-Nonce', 'WWW-Authenticate'],
  });
}
