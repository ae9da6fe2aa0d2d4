/** Every service and setting an endpoint can reach, member by member: no runtime handle. */
import type { Logger } from '../logger.js';
import type { Runtime } from '../runtime.js';
import type { AccessTokens } from '../tokens/access-token.js';
import type { Revocations } from '../tokens/revocation.js';
import type { KeyStore } from '../tokens/signing-keys.js';
import { securityEvents, type SecurityEvents } from './events.js';
import { LoginThrottle } from './browser/login-throttle.js';
import type { ClientStore } from './stores/clients.js';
import { ClientCache } from './stores/client-cache.js';
import { AuthorizationCodeStore } from './stores/codes.js';
import { ClientGrantStore } from './stores/client-grants.js';
import { ConsentStore } from './stores/consents.js';
import { DeviceCodeStore } from './stores/device-codes.js';
import { EndedSessionStore } from './stores/ended-sessions.js';
import { RefreshTokenStore } from './stores/refresh-tokens.js';
import type { UserStore } from './stores/users.js';
import { ClientAssertions } from './client-assertion.js';
import type { DpopVerifier } from '../tokens/dpop.js';
import type { Config } from '../config.js';
import { ClientMetadataDocuments } from './client-metadata-documents.js';
import { IpRequestThrottle } from './ip-request-throttle.js';
import type { Resources } from '../tokens/resources.js';
import { SessionIds } from './oidc/session-id.js';

export interface OAuthContextOptions {
  clientMetadataCa?: string;
}

export interface OAuthContext {
  issuer: string;
  logger: Logger;
  events: SecurityEvents;
  clients: ClientCache;
  registeredClients: ClientStore;
  users: UserStore;
  codes: AuthorizationCodeStore;
  refreshTokens: RefreshTokenStore;
  consents: ConsentStore;
  /** Signed-out browser sessions, refused by the stores above (their cookies are stateless). */
  endedSessions: EndedSessionStore;
  assertions: ClientAssertions;
  clientGrants: ClientGrantStore;
  deviceCodes: DeviceCodeStore;
  loginThrottle: LoginThrottle;
  keys: KeyStore;
  accessTokens: AccessTokens;
  revocations: Revocations;
  sessionSecret: string;
  /** The OpenID `sid` of a browser session for one client. */
  sessionIds: SessionIds;
  /** Seconds a rotated refresh token may come back (a lost response) before it counts as reuse. */
  refreshTokenReuseGrace: number;
  dpop: DpopVerifier;
  dpopNonce: Config['dpopNonce'];
  pairwiseSecret: string;
  accessTokenTtl: number;
  backchannelLogoutAllowPrivate: boolean;
  resources: Resources;
  registration: Config['registration'];
  clientIdMetadataDocuments: boolean;
}

export function createOAuthContext(runtime: Runtime, options: OAuthContextOptions = {}): OAuthContext {
  const { config, db } = runtime;
  const documents = config.clientIdMetadataDocuments
    ? new ClientMetadataDocuments(runtime.clients, {
        allowPrivate: config.cimdAllowPrivate,
        ca: options.clientMetadataCa,
        throttle: new IpRequestThrottle(db, 'client-metadata', config.cimdFetchRateLimit),
      })
    : undefined;
  const consents = new ConsentStore(db);
  return {
    issuer: config.issuer,
    logger: runtime.logger,
    events: securityEvents(runtime.logger),
    clients: new ClientCache(runtime.clients, documents),
    registeredClients: runtime.clients,
    users: runtime.users,
    codes: new AuthorizationCodeStore(db, config.authCodeTtl, runtime.authorizationCodeSecret, consents),
    refreshTokens: new RefreshTokenStore(db, config.refreshTokenTtl, runtime.refreshTokenSecret),
    consents,
    endedSessions: new EndedSessionStore(db),
    assertions: new ClientAssertions({ issuer: config.issuer, replay: runtime.usedJtis, allowPrivateJwksUri: config.clientJwksAllowPrivate }),
    clientGrants: new ClientGrantStore(db),
    deviceCodes: new DeviceCodeStore(db, config.deviceCodeTtl),
    loginThrottle: new LoginThrottle(db),
    keys: runtime.keys,
    accessTokens: runtime.accessTokens,
    revocations: runtime.revocations,
    sessionSecret: runtime.sessionSecret,
    sessionIds: new SessionIds(runtime.sessionSecret),
    refreshTokenReuseGrace: config.refreshTokenReuseGrace,
    dpop: runtime.dpop,
    dpopNonce: config.dpopNonce,
    pairwiseSecret: runtime.pairwiseSecret,
    accessTokenTtl: config.accessTokenTtl,
    backchannelLogoutAllowPrivate: config.backchannelLogoutAllowPrivate,
    resources: runtime.resources,
    registration: config.registration,
    clientIdMetadataDocuments: config.clientIdMetadataDocuments,
  };
}
