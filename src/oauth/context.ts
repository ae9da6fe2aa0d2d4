/**
 * What every endpoint of the authorization server shares: the runtime, the small storage
 * modules and the security-event log. Built once per app by `createOAuthRouter`.
 */
import type { Runtime } from '../runtime.js';
import { securityEvents, type SecurityEvents } from './events.js';
import { LoginThrottle } from './browser/login-throttle.js';
import { ClientCache } from './stores/client-cache.js';
import { AuthorizationCodeStore } from './stores/codes.js';
import { ClientGrantStore } from './stores/client-grants.js';
import { ConsentStore } from './stores/consents.js';
import { DeviceCodeStore } from './stores/device-codes.js';
import { RefreshTokenStore } from './stores/refresh-tokens.js';

export interface OAuthContext {
  runtime: Runtime;
  issuer: string;
  clients: ClientCache;
  codes: AuthorizationCodeStore;
  refreshTokens: RefreshTokenStore;
  consents: ConsentStore;
  clientGrants: ClientGrantStore;
  deviceCodes: DeviceCodeStore;
  loginThrottle: LoginThrottle;
  events: SecurityEvents;
}

export function createOAuthContext(runtime: Runtime): OAuthContext {
  const { config, db } = runtime;
  return {
    runtime,
    issuer: config.issuer,
    clients: new ClientCache(runtime.clients),
    codes: new AuthorizationCodeStore(db, config.authCodeTtl),
    refreshTokens: new RefreshTokenStore(db, config.refreshTokenTtl, runtime.refreshTokenSecret),
    consents: new ConsentStore(db),
    clientGrants: new ClientGrantStore(db),
    deviceCodes: new DeviceCodeStore(db, config.deviceCodeTtl),
    loginThrottle: new LoginThrottle(db),
    events: securityEvents(runtime.logger),
  };
}
