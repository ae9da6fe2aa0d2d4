/**
 * The authorization server: its endpoints and pages, mounted at the root by src/app.ts. Each
 * endpoint answers its own errors in its own surface (JSON for the token-style endpoints,
 * redirect or HTML page for /authorize), so nothing reaches the app's REST-style fallback.
 */
import express from 'express';
import type { Runtime } from '../runtime.js';
import { createAuthorizeRouter } from './endpoints/authorize.js';
import { createOAuthContext } from './context.js';
import { oauthCors } from './cors.js';
import { addIntrospectionEndpoint } from './endpoints/introspect.js';
import { addJwksEndpoint } from './endpoints/jwks.js';
import { addMetadataEndpoint } from './endpoints/metadata.js';
import { addRevocationEndpoint } from './endpoints/revoke.js';
import { addTokenEndpoint } from './endpoints/token.js';
import { addDeviceAuthorizationEndpoint, DEVICE_AUTHORIZATION_PATH } from './endpoints/device-authorization.js';
import { createDeviceRouter, DEVICE_PATH } from './browser/device.js';

/** The first path segments of every endpoint and page below. */
export const OAUTH_PATHS = ['/authorize', '/token', '/revoke', '/introspect', '/.well-known', DEVICE_AUTHORIZATION_PATH, DEVICE_PATH];

export function createOAuthRouter(runtime: Runtime): express.Router {
  const oauth = createOAuthContext(runtime);
  const cors = oauthCors(runtime.config.corsOrigins);
  const router = express.Router();
  router.use(createAuthorizeRouter(oauth));
  router.use(createDeviceRouter(oauth));
  addTokenEndpoint(router, oauth, cors);
  addDeviceAuthorizationEndpoint(router, oauth, cors);
  addRevocationEndpoint(router, oauth, cors);
  addIntrospectionEndpoint(router, oauth, cors);
  addMetadataEndpoint(router, oauth, cors);
  addJwksEndpoint(router, oauth, cors);
  return router;
}
