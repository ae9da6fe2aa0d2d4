/** The public signing keys, `GET /.well-known/jwks.json`: the current key and retired ones whose tokens may still be live. */
import type express from 'express';
import type { RequestHandler } from 'express';
import type { OAuthContext } from '../context.js';
import { POLICY } from '../../policy.js';
import { JWKS_PATH } from './metadata.js';
import { onlyRead } from '../json-response.js';

export function addJwksEndpoint(router: express.Router, oauth: OAuthContext, cors: RequestHandler): void {
  router.get(JWKS_PATH, cors, async function serveJwks(_req, res) {
    const jwks = await oauth.keys.jwks();
    res.setHeader('Cache-Control', `public, max-age=${POLICY.jwksMaxAgeSeconds.value}`);
    res.setHeader('Content-Type', 'application/jwk-set+json;charset=UTF-8');
    res.end(JSON.stringify(jwks));
  });
  router.options(JWKS_PATH, cors);
  router.all(JWKS_PATH, cors, onlyRead);
}
