/**
 * CORS for the faces a browser app calls with fetch and a bearer token (OAuth's token-side endpoints, REST): no cookies
 * are involved, so credentials are never allowed; preflights are cached for ten minutes.
 */
import cors from 'cors';
import type { RequestHandler } from 'express';

export interface CorsRules {
  methods: readonly string[];
  /** Request headers allowed besides the CORS-safelisted ones. */
  allowedHeaders: readonly string[];
  /** Response headers a page may read besides the CORS-safelisted ones. */
  exposedHeaders: readonly string[];
}

export function bearerCors(origins: readonly string[], rules: CorsRules): RequestHandler {
  return cors({
    origin: origins.includes('*') ? '*' : [...origins],
    methods: [...rules.methods],
    allowedHeaders: [...rules.allowedHeaders],
    exposedHeaders: [...rules.exposedHeaders],
    credentials: false,
    maxAge: 600,
  }) as RequestHandler;
}
