/** Each endpoint answers its own errors in its own surface, so nothing reaches the app's REST-style fallback. */
import express, { type RequestHandler } from 'express';
import { SegmentDispatcher } from '../http/dispatch.js';
import type { Runtime } from '../runtime.js';
import { createAuthorizeRouter } from './endpoints/authorize.js';
import { createOAuthContext, type OAuthContextOptions } from './context.js';
import { oauthCors } from './cors.js';
import { createIntrospectionEndpoint } from './endpoints/introspect.js';
import { addJwksEndpoint } from './endpoints/jwks.js';
import { addMetadataEndpoint } from './endpoints/metadata.js';
import { createRevocationEndpoint } from './endpoints/revoke.js';
import { addResourceMetadataEndpoints } from './endpoints/resource-metadata.js';
import { addRegistrationEndpoint } from './endpoints/register.js';
import { createTokenEndpoint } from './endpoints/token.js';
import { addUserinfoEndpoint } from './endpoints/userinfo.js';
import { createEndSessionRouter } from './endpoints/end-session.js';
import { createAccountRouter } from './browser/account.js';
import { createBrowserContext } from './browser/flow.js';
import { configureBrand } from './browser/pages/layout.js';
import { ACCOUNT_PATH, END_SESSION_PATH, USERINFO_PATH } from './oidc/paths.js';
import { addDeviceAuthorizationEndpoint, DEVICE_AUTHORIZATION_PATH } from './endpoints/device-authorization.js';
import { createDeviceRouter, DEVICE_PATH } from './browser/device.js';

export const OAUTH_PATHS = ['/authorize', '/token', '/revoke', '/introspect', '/register', '/.well-known', USERINFO_PATH, END_SESSION_PATH, ACCOUNT_PATH, DEVICE_AUTHORIZATION_PATH, DEVICE_PATH] as const;

function routerWith(add: (router: express.Router) => void): express.Router {
  const router = express.Router();
  add(router);
  return router;
}

/** Each first path segment gets its own router, so a request walks only its endpoint's layers. */
export function createOAuthRouter(runtime: Runtime, options: OAuthContextOptions = {}): RequestHandler {
  const oauth = createOAuthContext(runtime, options);
  configureBrand({ name: runtime.config.brandName, logoUrl: runtime.config.brandLogoUrl, color: runtime.config.brandColor });
  const cors = oauthCors(runtime.config.corsOrigins);
  const browser = createBrowserContext(oauth);
  const registration = { mode: runtime.config.registration, rateLimit: runtime.config.registrationRateLimit, db: runtime.db };
  const routers: Record<(typeof OAUTH_PATHS)[number], RequestHandler> = {
    '/authorize': createAuthorizeRouter(oauth, browser),
    [END_SESSION_PATH]: createEndSessionRouter(oauth, browser),
    [ACCOUNT_PATH]: createAccountRouter(oauth, browser),
    [DEVICE_PATH]: createDeviceRouter(oauth),
    '/token': createTokenEndpoint(oauth, cors),
    [DEVICE_AUTHORIZATION_PATH]: routerWith((router) => addDeviceAuthorizationEndpoint(router, oauth, cors, { rateLimit: runtime.config.deviceAuthorizationRateLimit, db: runtime.db })),
    '/revoke': createRevocationEndpoint(oauth, cors),
    '/introspect': createIntrospectionEndpoint(oauth, cors),
    '/.well-known': routerWith((router) => {
      addMetadataEndpoint(router, oauth, cors);
      addJwksEndpoint(router, oauth, cors);
      addResourceMetadataEndpoints(router, oauth, cors);
    }),
    [USERINFO_PATH]: routerWith((router) => addUserinfoEndpoint(router, oauth, cors)),
    '/register': routerWith((router) => addRegistrationEndpoint(router, oauth, cors, registration)),
  };
  const dispatcher = new SegmentDispatcher();
  for (const path of OAUTH_PATHS) dispatcher.mount([path], routers[path]);
  return dispatcher.handler;
}
