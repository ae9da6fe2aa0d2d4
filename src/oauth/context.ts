/**
 * What every endpoint of the authorization server shares: the runtime, the small storage
 * modules and the security-event log. Built once per app by `createOAuthRouter`.
 */
import type { Runtime } from '../runtime.js';
import { securityEvents, type SecurityEvents } from './events.js';
import { LoginThrottle } from './browser/login-throttle.js';
import { ClientCache } from './stores/client-cache.js';
import { AuthorizationCodeStore } from './stores/codes.js';
import { ConsentStore } from './stores/consents.js';
import { RefreshTokenStore } from './stores/refresh-tokens.js';
import { ClientMetadataDocuments } from './client-metadata-documents.js';

export interface OAuthContextOptions {
  /** Extra CA certificate (PEM) trusted when fetching client metadata documents. */
  clientMetadataCa?: string;
}

export interface OAuthContext {
  runtime: Runtime;
  issuer: string;
  clients: ClientCache;
  codes: AuthorizationCodeStore;
  refreshTokens: RefreshTokenStore;
  consents: ConsentStore;
  loginThrottle: LoginThrottle;
  events: SecurityEvents;
}

export function createOAuthContext(runtime: Runtime, options: OAuthContextOptions = {}): OAuthContext {
  const { config, db } = runtime;
  const documents = config.clientIdMetadataDocuments
    ? new ClientMetadataDocuments(runtime.clients, { allowPrivate: config.cimdAllowPrivate, ca: options.clientMetadataCa })
    : undefined;
  return {
    runtime,
    issuer: config.issuer,
    clients: new ClientCache(runtime.clients, documents),
    codes: new AuthorizationCodeStore(db, config.authCodeTtl),
    refreshTokens: new RefreshTokenStore(db, config.refreshTokenTtl, runtime.refreshTokenSecret),
    consents: new ConsentStore(db),
    loginThrottle: new LoginThrottle(db),
    events: securityEvents(runtime.logger),
  };
}
