/** Confidential clients' 256-bit secrets are shown once and stored as HMAC-SHA-256 under a per-deployment key. */
import { eq, sql } from 'drizzle-orm';
import type { Db } from '../../db/database.js';
import { clients } from '../../db/schema.js';
import { ALL_SCOPES, isSupportedScope, parseScope, SUPPORTED_SCOPES } from '../scopes.js';
import { constantTimeEqual, hmacSha256, randomIdentifier, randomToken } from '../../crypto/secrets.js';
import { isSubjectType, sectorOf, type SubjectType } from '../oidc/subject.js';
import { frontchannelOriginProblem, hasUserinfo, publicJwkSetProblem, textProblem, uriCharactersProblem, webUriProblem, type ClientMetadata } from '../client-metadata.js';
import { isSigningAlg, SIGNING_ALGS } from '../../tokens/signing-keys.js';
import { isCanonicalLoopbackIpUri, isLoopbackHost, isLoopbackIp, LOOPBACK_IP_ORIGIN } from '../loopback.js';

export type Client = typeof clients.$inferSelect;

export const DEVICE_CODE_GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:device_code';

export const SUPPORTED_GRANT_TYPES = ['authorization_code', 'refresh_token', 'client_credentials', DEVICE_CODE_GRANT_TYPE] as const;

export const DEFAULT_GRANT_TYPES = ['authorization_code', 'refresh_token'] as const;

export class ClientRegistrationError extends Error {
  override readonly name = 'ClientRegistrationError';
}

export interface NewClient {
  name: string;
  redirectUris: string[];
  isPublic?: boolean;
  scope?: string;
  id?: string;
  /** `private_key_jwt` (RFC 7523 §2.2): no secret; the client signs assertions with a key of `jwks` or `jwksUri`. */
  tokenEndpointAuthMethod?: 'private_key_jwt';
  jwks?: unknown;
  jwksUri?: string;
  /** RFC 9449 §5.2: every token request must carry a DPoP proof. */
  dpopBoundAccessTokens?: boolean;
  oidc?: ClientOidcSettings;
  /** Defaults to DEFAULT_GRANT_TYPES. Without authorization_code the client has no redirect URIs. */
  grantTypes?: readonly string[];
}

export interface ClientOidcSettings {
  subjectType?: SubjectType;
  postLogoutRedirectUris?: string[];
  backchannelLogoutUri?: string | null;
  /** Back-Channel Logout §2.2: logout tokens carry `sid`. */
  backchannelLogoutSessionRequired?: boolean;
  /** Front-Channel Logout 1.0: loaded in an iframe when the user signs out ("" or null removes it). */
  frontchannelLogoutUri?: string | null;
  /** Front-Channel Logout §2: that URL gets `iss` and `sid`. */
  frontchannelLogoutSessionRequired?: boolean;
  /** `ES256` or `RS256`, or null / "" for plain JSON at /userinfo. */
  userinfoSignedResponseAlg?: string | null;
  /** `ES256` or `RS256` for its ID Tokens and Logout Tokens; null / "" for the default, ES256. */
  idTokenSignedResponseAlg?: string | null;
  policyUri?: string | null;
  tosUri?: string | null;
}

/** The CLI's logout URIs and policy links: the rule /register applies too (webUriProblem). */
function webUri(raw: string, what: string): string {
  const problem = webUriProblem(raw);
  if (problem) throw new ClientRegistrationError(`${what} "${raw}" ${problem}`);
  return raw;
}

function checkFrontchannelOrigin(uri: string, redirectUris: readonly string[]): void {
  const problem = frontchannelOriginProblem(uri, redirectUris);
  if (problem) throw new ClientRegistrationError(`front-channel logout URI "${uri}" ${problem}`);
}

/** A `*_signed_response_alg` setting: undefined leaves it alone, null or "" resets it to `emptyMeans`. */
function signingAlgSetting(alg: string | null | undefined, what: string, emptyMeans: string): string | null | undefined {
  if (alg === undefined) return undefined;
  if (alg !== null && alg !== '' && !isSigningAlg(alg)) throw new ClientRegistrationError(`${what} is ${SIGNING_ALGS.join(' or ')}, or "" for ${emptyMeans}`);
  return alg || null;
}

function validateOidc(settings: ClientOidcSettings, redirectUris: readonly string[]): Partial<typeof clients.$inferInsert> {
  const set: Partial<typeof clients.$inferInsert> = {};
  if (settings.subjectType !== undefined) {
    if (!isSubjectType(settings.subjectType)) throw new ClientRegistrationError('the subject type is public or pairwise');
    if (settings.subjectType === 'pairwise' && sectorOf(redirectUris) === undefined) {
      throw new ClientRegistrationError('a pairwise client needs all its redirect URIs on one host (its sector)');
    }
    set.subjectType = settings.subjectType;
  }
  if (settings.postLogoutRedirectUris !== undefined) {
    set.postLogoutRedirectUris = [...new Set(settings.postLogoutRedirectUris.map((uri) => webUri(uri, 'post-logout redirect URI')))];
  }
  const optional = (value: string | null | undefined, what: string) => (value === undefined ? undefined : value === null || value === '' ? null : webUri(value, what));
  const backchannel = optional(settings.backchannelLogoutUri, 'back-channel logout URI');
  if (backchannel !== undefined) set.backchannelLogoutUri = backchannel;
  if (settings.backchannelLogoutSessionRequired !== undefined) set.backchannelLogoutSessionRequired = settings.backchannelLogoutSessionRequired;
  const frontchannel = optional(settings.frontchannelLogoutUri, 'front-channel logout URI');
  if (frontchannel) checkFrontchannelOrigin(frontchannel, redirectUris);
  if (frontchannel !== undefined) set.frontchannelLogoutUri = frontchannel;
  if (settings.frontchannelLogoutSessionRequired !== undefined) set.frontchannelLogoutSessionRequired = settings.frontchannelLogoutSessionRequired;
  const userinfoAlg = signingAlgSetting(settings.userinfoSignedResponseAlg, 'the userinfo signing algorithm', 'plain JSON');
  if (userinfoAlg !== undefined) set.userinfoSignedResponseAlg = userinfoAlg;
  const idTokenAlg = signingAlgSetting(settings.idTokenSignedResponseAlg, 'the ID Token signing algorithm', 'the default (ES256)');
  if (idTokenAlg !== undefined) set.idTokenSignedResponseAlg = idTokenAlg;
  const policy = optional(settings.policyUri, 'policy URI');
  if (policy !== undefined) set.policyUri = policy;
  const tos = optional(settings.tosUri, 'terms of service URI');
  if (tos !== undefined) set.tosUri = tos;
  return set;
}

export interface RegisteredClient {
  client_id: string;
  client_secret?: string;
  client_name: string;
  redirect_uris: string[];
  scope: string;
  grant_types: string[];
  token_endpoint_auth_method: 'client_secret_basic' | 'none' | 'private_key_jwt';
  jwks_uri?: string;
  dpop_bound_access_tokens?: true;
  subject_type?: string;
  post_logout_redirect_uris?: string[];
  backchannel_logout_uri?: string;
  backchannel_logout_session_required?: true;
  frontchannel_logout_uri?: string;
  frontchannel_logout_session_required?: true;
  userinfo_signed_response_alg?: string;
  id_token_signed_response_alg?: string;
  policy_uri?: string;
  tos_uri?: string;
  registration_type?: RegistrationType;
}

/** RFC 9700 §2.1 / §4.1.3: full URIs, https (or http on a loopback host), no fragment. */
export function validateRedirectUri(raw: string): string {
  // The rule /register applies (client-metadata.ts): what reaches the Location header is exactly what was registered.
  const characters = uriCharactersProblem(raw);
  if (characters) throw new ClientRegistrationError(`redirect URI "${raw}" ${characters}`);
  let uri: URL;
  try {
    uri = new URL(raw);
  } catch {
    throw new ClientRegistrationError(`redirect URI "${raw}" is not an absolute URI`);
  }
  if (raw.includes('#')) throw new ClientRegistrationError(`redirect URI "${raw}" must not contain a fragment`);
  if (uri.protocol === 'http:' && !isLoopbackHost(uri.hostname)) {
    throw new ClientRegistrationError(`redirect URI "${raw}" must use https (http is allowed only on localhost, 127.0.0.0/8 and [::1])`);
  }
  if (uri.protocol !== 'https:' && uri.protocol !== 'http:') {
    throw new ClientRegistrationError(`redirect URI "${raw}" must use https (or http on a loopback host)`);
  }
  if (hasUserinfo(raw, uri)) throw new ClientRegistrationError(`redirect URI "${raw}" must not contain credentials`);
  if (uri.protocol === 'http:' && isLoopbackIp(uri.hostname) && !isCanonicalLoopbackIpUri(raw, uri.hostname)) {
    throw new ClientRegistrationError(`redirect URI "${raw}" on a loopback IP must be written http://${uri.hostname}[:port]/path (RFC 8252 §7.3)`);
  }
  if (uri.port === '0') throw new ClientRegistrationError(`redirect URI "${raw}" must not use port 0, where nothing listens`);
  return raw;
}

/**
 * RFC 9700 §4.1.3 simple string comparison, except that an http loopback IP literal's port (not port 0) is ignored, since a native
 * app listens on whatever port the OS gives it (RFC 8252 §7.3); `localhost` is not relaxed (RFC 8252 §8.3).
 */
export function redirectUriMatches(registered: string, presented: string): boolean {
  if (registered === presented) return true;
  const registeredOrigin = LOOPBACK_IP_ORIGIN.exec(registered);
  const presentedOrigin = LOOPBACK_IP_ORIGIN.exec(presented);
  if (!registeredOrigin || !presentedOrigin || registeredOrigin[1] !== presentedOrigin[1]) return false;
  if (registered.slice(registeredOrigin[0].length) !== presented.slice(presentedOrigin[0].length)) return false;
  try {
    const uri = new URL(presented); // rejects a port above 65535
    // Port 0 (also written `:00`…) is no port an app listens on.
    return isLoopbackIp(uri.hostname) && uri.port !== '0' && !presented.includes('#');
  } catch {
    return false;
  }
}

export type RegistrationType = Client['registrationType'];

export function isSelfRegistered(client: Client): boolean {
  return client.registrationType === 'dynamic' || client.registrationType === 'metadata_document';
}

function metadataColumns(metadata: ClientMetadata, fallbackName: string) {
  return {
    name: metadata.clientName ?? fallbackName,
    redirectUris: metadata.redirectUris,
    scopes: metadata.scopes,
    grantTypes: metadata.grantTypes,
    isPublic: metadata.tokenEndpointAuthMethod === 'none',
    tokenEndpointAuthMethod: metadata.keys === undefined ? null : ('private_key_jwt' as const),
    jwks: metadata.keys && 'jwks' in metadata.keys ? metadata.keys.jwks : null,
    jwksUri: metadata.keys && 'jwksUri' in metadata.keys ? metadata.keys.jwksUri : null,
    clientUri: metadata.clientUri ?? null,
    logoUri: metadata.logoUri ?? null,
    policyUri: metadata.policyUri ?? null,
    tosUri: metadata.tosUri ?? null,
    userinfoSignedResponseAlg: metadata.userinfoSignedResponseAlg ?? null,
    idTokenSignedResponseAlg: metadata.idTokenSignedResponseAlg ?? null,
    subjectType: metadata.subjectType,
    // Every column, absent ones too: RFC 7592 §2.2 PUT replaces, so leaving a field out removes it.
    postLogoutRedirectUris: metadata.postLogoutRedirectUris,
    backchannelLogoutUri: metadata.backchannelLogoutUri ?? null,
    backchannelLogoutSessionRequired: metadata.backchannelLogoutSessionRequired,
    frontchannelLogoutUri: metadata.frontchannelLogoutUri ?? null,
    frontchannelLogoutSessionRequired: metadata.frontchannelLogoutSessionRequired,
    dpopBoundAccessTokens: metadata.dpopBoundAccessTokens,
    registrationMetadata: {
      token_endpoint_auth_method: metadata.tokenEndpointAuthMethod,
      response_types: metadata.responseTypes,
      ...metadata.extra,
    },
  };
}

function unnamed(metadata: ClientMetadata): string {
  try {
    const host = new URL(metadata.redirectUris[0]!).host;
    return host ? `Unnamed application (${host})` : 'Unnamed application';
  } catch {
    return 'Unnamed application';
  }
}

export class ClientStore {
  constructor(
    private readonly db: Db,
    private readonly secretKey: string,
  ) {}

  hashSecret(secret: string): string {
    return hmacSha256(this.secretKey, secret);
  }

  /** Constant-time; the secret before the last rotation also works while its overlap lasts. */
  verifySecret(client: Client, secret: string, now = new Date()): boolean {
    if (!client.secretHash) return false;
    const presented = this.hashSecret(secret);
    const current = constantTimeEqual(presented, client.secretHash);
    const previous =
      client.previousSecretHash !== null &&
      client.previousSecretExpiresAt !== null &&
      client.previousSecretExpiresAt > now &&
      constantTimeEqual(presented, client.previousSecretHash);
    return current || previous;
  }

  async create(input: NewClient): Promise<RegisteredClient> {
    const name = validateName(input.name);
    const grantTypes = validateGrantTypes(input.grantTypes ?? DEFAULT_GRANT_TYPES, input.isPublic ?? false);
    if (grantTypes.includes('authorization_code')) {
      if (input.redirectUris.length === 0) throw new ClientRegistrationError('a client needs at least one redirect URI');
    } else if (input.redirectUris.length > 0) {
      throw new ClientRegistrationError('redirect URIs are used only by the authorization_code grant, which this client is not registered for');
    }
    const redirectUris = [...new Set(input.redirectUris.map(validateRedirectUri))];
    const scopes = validateScopes(input.scope);
    // A decimal id could be read as a user id where a token's `sub` is its client (access-token.ts).
    if (input.id !== undefined && /^\d+$/.test(input.id)) throw new ClientRegistrationError('a client id may not be a number');
    const keys = validateClientKeys(input);
    const secret = input.isPublic || keys.tokenEndpointAuthMethod ? undefined : randomToken(32);
    const [row] = await this.db
      .insert(clients)
      .values({
        id: input.id ?? randomIdentifier(16),
        name,
        secretHash: secret === undefined ? null : this.hashSecret(secret),
        redirectUris,
        scopes,
        grantTypes,
        isPublic: input.isPublic ?? false,
        ...keys,
        dpopBoundAccessTokens: input.dpopBoundAccessTokens ?? false,
        ...validateOidc(input.oidc ?? {}, redirectUris),
      })
      .returning();
    return describeClient(row!, secret);
  }

  /** RFC 7591; the secret and the RFC 7592 registration access token are shown once, stored as HMACs. */
  async registerDynamic(metadata: ClientMetadata): Promise<{ client: Client; secret: string | undefined; registrationAccessToken: string }> {
    const secret = metadata.tokenEndpointAuthMethod === 'none' || metadata.tokenEndpointAuthMethod === 'private_key_jwt' ? undefined : randomToken(32);
    const registrationAccessToken = randomToken(32);
    const [row] = await this.db
      .insert(clients)
      .values({
        id: randomIdentifier(16),
        ...metadataColumns(metadata, unnamed(metadata)),
        secretHash: secret === undefined ? null : this.hashSecret(secret),
        registrationType: 'dynamic',
        registrationAccessTokenHash: this.hashSecret(`registration:${registrationAccessToken}`),
      })
      .returning();
    return { client: row!, secret, registrationAccessToken };
  }

  async findByRegistrationToken(id: string, token: string): Promise<Client | undefined> {
    const client = await this.find(id);
    if (!client?.registrationAccessTokenHash || client.registrationType !== 'dynamic') return undefined;
    return constantTimeEqual(this.hashSecret(`registration:${token}`), client.registrationAccessTokenHash) ? client : undefined;
  }

  /** RFC 7592 §2.2: replaces a dynamic client's metadata (its secret and registration token stay). */
  async replaceMetadata(id: string, metadata: ClientMetadata): Promise<Client | undefined> {
    const [row] = await this.db
      .update(clients)
      .set(metadataColumns(metadata, unnamed(metadata)))
      .where(sql`${clients.id} = ${id} and ${clients.registrationType} = 'dynamic'`)
      .returning();
    return row;
  }

  /** Stored under its URL as id, so codes and grants can reference it; replaced by the document's each time. */
  async upsertMetadataDocument(id: string, metadata: ClientMetadata, expiresAt: Date): Promise<Client> {
    const columns = { ...metadataColumns(metadata, new URL(id).host), metadataExpiresAt: expiresAt };
    const [row] = await this.db
      .insert(clients)
      .values({ id, ...columns, secretHash: null, registrationType: 'metadata_document' })
      .onConflictDoUpdate({ target: clients.id, set: columns, setWhere: sql`${clients.registrationType} = 'metadata_document'` })
      .returning();
    if (!row) throw new ClientRegistrationError(`client id ${id} is taken by a client registered otherwise`);
    return row;
  }

  async find(id: string): Promise<Client | undefined> {
    // No stored id holds NUL, which PostgreSQL text refuses with an error (a path's `%00` would otherwise be a 500).
    if (id.includes('\0')) return undefined;
    const [row] = await this.db.select().from(clients).where(eq(clients.id, id));
    return row;
  }

  async list(): Promise<RegisteredClient[]> {
    const rows = await this.db.select().from(clients).orderBy(clients.createdAt);
    return rows.map((row) => describeClient(row));
  }

  async delete(id: string): Promise<boolean> {
    const deleted = await this.db.delete(clients).where(eq(clients.id, id)).returning({ id: clients.id });
    return deleted.length > 0;
  }

  async update(id: string, changes: ClientChanges): Promise<RegisteredClient | undefined> {
    const set: Partial<typeof clients.$inferInsert> = {};
    if (changes.name !== undefined) set.name = validateName(changes.name);
    if (changes.redirectUris !== undefined) {
      if (changes.redirectUris.length === 0) throw new ClientRegistrationError('a client needs at least one redirect URI');
      set.redirectUris = [...new Set(changes.redirectUris.map(validateRedirectUri))];
    }
    if (changes.scope !== undefined) set.scopes = validateScopes(changes.scope);
    if (changes.dpopBoundAccessTokens !== undefined) set.dpopBoundAccessTokens = changes.dpopBoundAccessTokens;
    const current =
      changes.oidc !== undefined || changes.grantTypes !== undefined || changes.keys !== undefined || changes.redirectUris !== undefined ? await this.find(id) : undefined;
    if (changes.oidc !== undefined) Object.assign(set, validateOidc(changes.oidc, set.redirectUris ?? current?.redirectUris ?? []));
    // New redirect URIs must still hold the front-channel logout page's origin.
    const frontchannel = set.frontchannelLogoutUri === undefined ? current?.frontchannelLogoutUri : set.frontchannelLogoutUri;
    if (set.redirectUris && frontchannel) checkFrontchannelOrigin(frontchannel, set.redirectUris);
    if (current && changes.grantTypes !== undefined) {
      set.grantTypes = validateGrantTypes(changes.grantTypes, current.isPublic);
      if (set.grantTypes.includes('authorization_code') && (set.redirectUris ?? current.redirectUris).length === 0) {
        throw new ClientRegistrationError('authorization_code needs at least one redirect URI: add one with the grant');
      }
    }
    if (current && changes.keys !== undefined) {
      if (current.tokenEndpointAuthMethod !== 'private_key_jwt') {
        throw new ClientRegistrationError(`client ${id} authenticates with ${current.isPublic ? 'no secret (public)' : 'a secret'}: only a private_key_jwt client has keys`);
      }
      Object.assign(set, validateClientKeys({ name: current.name, redirectUris: [], tokenEndpointAuthMethod: 'private_key_jwt', ...changes.keys }));
    }
    if (Object.keys(set).length === 0) {
      const row = await this.find(id);
      return row && describeClient(row);
    }
    const [row] = await this.db.update(clients).set(set).where(eq(clients.id, id)).returning();
    return row && describeClient(row);
  }

  /** The old secret keeps working for `overlapSeconds`, so deployed apps can switch without downtime. */
  async rotateSecret(id: string, overlapSeconds: number): Promise<{ secret: string; previousSecretExpiresAt: Date | null } | undefined> {
    const client = await this.find(id);
    if (!client) return undefined;
    if (client.isPublic) throw new ClientRegistrationError(`client ${id} is public: it has no secret to rotate`);
    const secret = randomToken(32);
    const [row] = await this.db
      .update(clients)
      .set({
        secretHash: this.hashSecret(secret),
        previousSecretHash: overlapSeconds > 0 ? sql`${clients.secretHash}` : null,
        previousSecretExpiresAt: overlapSeconds > 0 ? sql`now() + make_interval(secs => ${overlapSeconds})` : null,
      })
      .where(eq(clients.id, id))
      .returning({ previousSecretExpiresAt: clients.previousSecretExpiresAt });
    if (!row) return undefined;
    return { secret, previousSecretExpiresAt: row.previousSecretExpiresAt };
  }

  async resetSecret(id: string): Promise<string> {
    const secret = randomToken(32);
    const updated = await this.db
      .update(clients)
      .set({ secretHash: this.hashSecret(secret) })
      .where(eq(clients.id, id))
      .returning({ id: clients.id });
    if (updated.length === 0) throw new ClientRegistrationError(`no client ${id}`);
    return secret;
  }

  async setRedirectUris(id: string, redirectUris: string[]): Promise<void> {
    await this.db.update(clients).set({ redirectUris: redirectUris.map(validateRedirectUri) }).where(eq(clients.id, id));
  }
}

export interface ClientChanges {
  name?: string;
  redirectUris?: string[];
  scope?: string;
  oidc?: ClientOidcSettings;
  /** Replaces the grant types; the same rules as at creation (redirect URIs for authorization_code, none for a public client's client_credentials). */
  grantTypes?: readonly string[];
  /** Replaces a private_key_jwt client's keys (one of the two); the method itself does not change. */
  keys?: { jwks: unknown } | { jwksUri: string };
  dpopBoundAccessTokens?: boolean;
}

function validateClientKeys(input: NewClient): Pick<Client, 'tokenEndpointAuthMethod' | 'jwks' | 'jwksUri'> {
  if (input.tokenEndpointAuthMethod === undefined) {
    if (input.jwks !== undefined || input.jwksUri !== undefined) throw new ClientRegistrationError('jwks and jwks_uri are only for private_key_jwt clients');
    return { tokenEndpointAuthMethod: null, jwks: null, jwksUri: null };
  }
  if (input.isPublic) throw new ClientRegistrationError('a public client cannot use private_key_jwt');
  if ((input.jwks === undefined) === (input.jwksUri === undefined)) {
    throw new ClientRegistrationError('a private_key_jwt client needs exactly one of jwks or jwks_uri');
  }
  if (input.jwksUri !== undefined) {
    let uri: URL;
    try {
      uri = new URL(input.jwksUri);
    } catch {
      throw new ClientRegistrationError(`jwks_uri "${input.jwksUri}" is not an absolute URI`);
    }
    if ((uri.protocol !== 'https:' && uri.protocol !== 'http:') || uri.username || uri.password || input.jwksUri.includes('#')) {
      throw new ClientRegistrationError(`jwks_uri "${input.jwksUri}" must be an https URL without credentials or fragment`);
    }
    return { tokenEndpointAuthMethod: 'private_key_jwt', jwks: null, jwksUri: uri.href };
  }
  const problem = publicJwkSetProblem(input.jwks);
  if (problem) throw new ClientRegistrationError(`jwks ${problem}`);
  return { tokenEndpointAuthMethod: 'private_key_jwt', jwks: { keys: (input.jwks as { keys: unknown[] }).keys }, jwksUri: null };
}

function validateName(raw: string): string {
  const name = raw.trim();
  if (!name) throw new ClientRegistrationError('a client needs a name');
  // The consent page shows it: the rule /register applies to client_name.
  const problem = textProblem(name);
  if (problem) throw new ClientRegistrationError(`the name ${problem}`);
  return name;
}

function validateGrantTypes(requested: readonly string[], isPublic: boolean): string[] {
  const grantTypes = [...new Set(requested)];
  const unknown = grantTypes.filter((grantType) => !(SUPPORTED_GRANT_TYPES as readonly string[]).includes(grantType));
  if (unknown.length) throw new ClientRegistrationError(`unknown grant type ${unknown.join(', ')}; known: ${SUPPORTED_GRANT_TYPES.join(' ')}`);
  if (grantTypes.length === 0) throw new ClientRegistrationError('a client needs at least one grant type');
  if (isPublic && grantTypes.includes('client_credentials')) {
    throw new ClientRegistrationError('a public client cannot use client_credentials: it has no secret to prove it is itself');
  }
  if (grantTypes.includes('refresh_token') && !grantTypes.includes('authorization_code') && !grantTypes.includes(DEVICE_CODE_GRANT_TYPE)) {
    throw new ClientRegistrationError('refresh_token needs authorization_code or the device_code grant to issue the first one');
  }
  return grantTypes;
}

function validateScopes(scope: string | undefined): string[] {
  const scopes = scope === undefined ? ALL_SCOPES : parseScope(scope);
  // As /register (client-metadata.ts): the OpenID scopes may be listed among those the client will use.
  const unknown = scopes.filter((s) => !isSupportedScope(s));
  if (unknown.length) throw new ClientRegistrationError(`unknown scope ${unknown.join(', ')}; known: ${SUPPORTED_SCOPES.join(' ')}`);
  if (scopes.length === 0) throw new ClientRegistrationError('a client needs at least one scope');
  return scopes;
}

export function describeClient(row: Client, secret?: string): RegisteredClient {
  return {
    client_id: row.id,
    ...(secret === undefined ? {} : { client_secret: secret }),
    client_name: row.name,
    redirect_uris: row.redirectUris,
    scope: row.scopes.join(' '),
    grant_types: row.grantTypes,
    token_endpoint_auth_method: row.isPublic ? 'none' : row.tokenEndpointAuthMethod === 'private_key_jwt' ? 'private_key_jwt' : 'client_secret_basic',
    ...(row.jwksUri === null ? {} : { jwks_uri: row.jwksUri }),
    ...(row.dpopBoundAccessTokens ? { dpop_bound_access_tokens: true as const } : {}),
    ...(row.subjectType === 'public' ? {} : { subject_type: row.subjectType }),
    ...(row.postLogoutRedirectUris.length ? { post_logout_redirect_uris: row.postLogoutRedirectUris } : {}),
    ...(row.backchannelLogoutUri ? { backchannel_logout_uri: row.backchannelLogoutUri } : {}),
    ...(row.backchannelLogoutSessionRequired ? { backchannel_logout_session_required: true as const } : {}),
    ...(row.frontchannelLogoutUri ? { frontchannel_logout_uri: row.frontchannelLogoutUri } : {}),
    ...(row.frontchannelLogoutSessionRequired ? { frontchannel_logout_session_required: true as const } : {}),
    ...(row.userinfoSignedResponseAlg ? { userinfo_signed_response_alg: row.userinfoSignedResponseAlg } : {}),
    ...(row.idTokenSignedResponseAlg ? { id_token_signed_response_alg: row.idTokenSignedResponseAlg } : {}),
    ...(row.policyUri ? { policy_uri: row.policyUri } : {}),
    ...(row.tosUri ? { tos_uri: row.tosUri } : {}),
    ...(row.registrationType === 'static' ? {} : { registration_type: row.registrationType }),
  };
}
