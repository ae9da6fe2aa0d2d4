/**
 * The authorization server: its endpoints and pages, mounted at the root by src/app.ts. Each
 * endpoint answers its own errors in its own surface (JSON for the token-style endpoints,
 * redirect or HTML page for /authorize), so nothing reaches the app's REST-style fallback.
 */
import express from 'express';
import type { Runtime } from '../runtime.js';
import { createAuthorizeRouter } from './endpoints/authorize.js';
import { createOAuthContext, type OAuthContextOptions } from './context.js';
import { oauthCors } from './cors.js';
import { addIntrospectionEndpoint } from './endpoints/introspect.js';
import { addJwksEndpoint } from './endpoints/jwks.js';
import { addMetadataEndpoint } from './endpoints/metadata.js';
import { addRevocationEndpoint } from './endpoints/revoke.js';
import { addResourceMetadataEndpoints } from './endpoints/resource-metadata.js';
import { addRegistrationEndpoint } from './endpoints/register.js';
import { addTokenEndpoint } from './endpoints/token.js';
import { addUserinfoEndpoint } from './endpoints/userinfo.js';
import { createEndSessionRouter } from './endpoints/end-session.js';
import { createAccountRouter } from './browser/account.js';
import { createBrowserContext } from './browser/flow.js';
import { configureBrand } from './browser/pages/layout.js';
import { ACCOUNT_PATH, END_SESSION_PATH, USERINFO_PATH } from './oidc/paths.js';
import { addDeviceAuthorizationEndpoint, DEVICE_AUTHORIZATION_PATH } from './endpoints/device-authorization.js';
import { createDeviceRouter, DEVICE_PATH } from './browser/device.js';

/** The first path segments of every endpoint and page below. */
export const OAUTH_PATHS = ['/authorize', '/token', '/revoke', '/introspect', '/register', '/.well-known', USERINFO_PATH, END_SESSION_PATH, ACCOUNT_PATH, DEVICE_AUTHORIZATION_PATH, DEVICE_PATH];

export function createOAuthRouter(runtime: Runtime, options: OAuthContextOptions = {}): express.Router {
  const oauth = createOAuthContext(runtime, options);
  configureBrand({ name: runtime.config.brandName, logoUrl: runtime.config.brandLogoUrl, color: runtime.config.brandColor });
  const cors = oauthCors(runtime.config.corsOrigins);
  const router = express.Router();
  const browser = createBrowserContext(oauth);
  router.use(createAuthorizeRouter(oauth, browser));
  router.use(createEndSessionRouter(oauth, browser));
  router.use(createAccountRouter(oauth, browser));
  router.use(createDeviceRouter(oauth));
  addTokenEndpoint(router, oauth, cors);
  addDeviceAuthorizationEndpoint(router, oauth, cors);
  addRevocationEndpoint(router, oauth, cors);
  addIntrospectionEndpoint(router, oauth, cors);
  addMetadataEndpoint(router, oauth, cors);
  addJwksEndpoint(router, oauth, cors);
  addUserinfoEndpoint(router, oauth, cors);
  addResourceMetadataEndpoints(router, oauth, cors);
  addRegistrationEndpoint(router, oauth, cors, { mode: runtime.config.registration, rateLimit: runtime.config.registrationRateLimit, db: runtime.db });
  return router;
}
