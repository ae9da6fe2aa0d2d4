/**
 * Client metadata (RFC 7591 §2) from POST /register or a metadata document, checked field by field; each fault is
 * invalid_client_metadata (or invalid_redirect_uri, §3.2.2) naming the field, and unknown fields are ignored as §2 asks.
 */
import { InvalidClientMetadata, InvalidRedirectUri } from './errors.js';
import { ALL_SCOPES, isSupportedScope, parseScope, SUPPORTED_SCOPES } from './scopes.js';
import { isSigningAlg, SIGNING_ALGS, type SigningAlg } from '../tokens/signing-keys.js';
import { isCanonicalLoopbackIpUri, isLoopbackHost, isLoopbackIp } from './loopback.js';
import { isSubjectType, sectorOf, type SubjectType } from './oidc/subject.js';
import { ASSERTION_ALGORITHMS } from './client-assertion.js';

export type RegisteredAuthMethod = 'none' | 'client_secret_basic' | 'client_secret_post' | 'private_key_jwt';

const AUTH_METHODS: readonly RegisteredAuthMethod[] = ['none', 'client_secret_basic', 'client_secret_post', 'private_key_jwt'];
const MAX_JWKS_KEYS = 10;
/** Private members of a JWK: none may be registered (RFC 7517 §6.2, §6.3, §6.4). */
const PRIVATE_JWK_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];
const GRANT_TYPES = ['authorization_code', 'refresh_token'] as const;
const MAX_REDIRECT_URIS = 20;
const MAX_URI_LENGTH = 2000;
const MAX_TEXT_LENGTH = 200;
const MAX_CONTACTS = 10;

/** Schemes a native app must never register (RFC 8252 §7.1 asks for a reverse-DNS name). */
const FORBIDDEN_SCHEMES = new Set(['javascript:', 'data:', 'vbscript:', 'file:', 'blob:', 'about:', 'ftp:', 'ws:', 'wss:']);

export interface ClientMetadata {
  redirectUris: string[];
  clientName: string | undefined;
  grantTypes: string[];
  responseTypes: string[];
  tokenEndpointAuthMethod: RegisteredAuthMethod;
  /** A private_key_jwt client's keys (RFC 7591 §2): exactly one of a JWK Set by value or by reference. */
  keys: { jwks: { keys: unknown[] } } | { jwksUri: string } | undefined;
  scopes: string[];
  clientUri: string | undefined;
  logoUri: string | undefined;
  /** OIDC Registration §2: /userinfo answers with a JWT signed with this algorithm; undefined: plain JSON. */
  userinfoSignedResponseAlg: SigningAlg | undefined;
  /** OIDC Registration §2: the ID Tokens' (and Logout Tokens') algorithm; undefined: ES256, our default. */
  idTokenSignedResponseAlg: SigningAlg | undefined;
  /** OIDC Registration §2 / Core §8: `sub` the user id, or pairwise per sector (the redirect URIs' one host). */
  subjectType: SubjectType;
  /** RP-Initiated Logout §3.1: where /logout may return to (exact match). */
  postLogoutRedirectUris: string[];
  /** Back-Channel Logout §2.2, and whether its logout tokens must carry `sid`. */
  backchannelLogoutUri: string | undefined;
  backchannelLogoutSessionRequired: boolean;
  /** Front-Channel Logout §2, and whether that page gets `iss` and `sid`. */
  frontchannelLogoutUri: string | undefined;
  frontchannelLogoutSessionRequired: boolean;
  /** RFC 9449 §5.2: every token request must carry a DPoP proof. */
  dpopBoundAccessTokens: boolean;
  /** Linked from the consent page (OIDC Registration §2: the OP SHOULD show them). */
  policyUri: string | undefined;
  tosUri: string | undefined;
  extra: Record<string, unknown>;
}

function fail(field: string, problem: string): never {
  throw new InvalidClientMetadata(`${field} ${problem}`);
}

/**
 * Control characters (C0, DEL, C1), line and paragraph separators, halves of surrogate pairs, and the invisible format
 * characters — the bidirectional controls (a right-to-left override makes a client_name on the consent page read as
 * something else), zero-width spaces, soft hyphens, tag characters — but the joiners emoji and several scripts need.
 */
const NOT_IN_TEXT = /[\p{Cc}\p{Zl}\p{Zp}\p{Cs}]|(?![\u200C\u200D])\p{Cf}/u;

/** What PostgreSQL cannot store in text or jsonb (the database error would be a 500): NUL, and half of a surrogate pair. */
const UNSTORABLE = /\0|\p{Cs}/u;

/** Whether any string in a JSON value, member names included, is one PostgreSQL cannot store; walked without recursion. */
function holdsUnstorableString(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const item = pending.pop();
    if (typeof item === 'string') {
      if (UNSTORABLE.test(item)) return true;
    } else if (Array.isArray(item)) {
      for (const element of item as unknown[]) pending.push(element);
    } else if (typeof item === 'object' && item !== null) {
      for (const [name, member] of Object.entries(item)) pending.push(name, member);
    }
  }
  return false;
}

/** Why a human-readable value (a client's name…) cannot be shown as it is, or undefined. */
export function textProblem(value: string): string | undefined {
  return NOT_IN_TEXT.test(value) ? 'must not contain control, invisible or bidirectional formatting characters' : undefined;
}

function optionalString(body: Record<string, unknown>, field: string, max = MAX_TEXT_LENGTH): string | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') fail(field, 'must be a string');
  if (value.length > max) fail(field, `must be at most ${max} characters`);
  const problem = textProblem(value);
  if (problem) fail(field, problem);
  return value;
}

function stringArray(body: Record<string, unknown>, field: string, maxItems: number): string[] | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) fail(field, 'must be an array of strings');
  if (value.length > maxItems) fail(field, `must have at most ${maxItems} entries`);
  for (const item of value) {
    if (typeof item !== 'string') fail(field, 'must be an array of strings');
    if (item.length > MAX_URI_LENGTH || UNSTORABLE.test(item)) fail(field, 'has an entry that is too long or contains a NUL character or half of a surrogate pair');
  }
  return [...new Set(value as string[])];
}

function httpsUri(body: Record<string, unknown>, field: string): string | undefined {
  const value = optionalString(body, field, MAX_URI_LENGTH);
  if (value === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    fail(field, 'must be an absolute https URL');
  }
  if (url.protocol !== 'https:' || hasUserinfo(value, url)) fail(field, 'must be an https URL without credentials');
  return value;
}

/**
 * Why the characters of a URI we redirect to cannot be kept as they are, or undefined. The URL parser silently drops
 * tabs and newlines, so the stored string would not be the URI compared; and a URI is ASCII (RFC 3986 §2): an IRI
 * would reach the Location header raw, which Node refuses (a 500 after consent) or sends as Latin-1 bytes.
 */
export function uriCharactersProblem(raw: string): string | undefined {
  if (/[\u0000-\u0020\u007f]/.test(raw)) return 'must not contain spaces or control characters';
  if (/[^\u0000-\u007f]/.test(raw)) return 'must be ASCII: a host in its xn-- (punycode) form, other characters percent-encoded (RFC 3986)';
  return undefined;
}

/**
 * Whether the URI carries userinfo. The parser leaves username and password empty for an empty one (`https://@host`,
 * `https://:@host`), which is userinfo all the same; http(s) takes any number of slashes, as the parser does.
 */
export function hasUserinfo(raw: string, url: URL): boolean {
  if (url.username || url.password) return true;
  const special = url.protocol === 'http:' || url.protocol === 'https:';
  const authority = (special ? /^[^:]*:[/\\]*([^/\\?#]*)/ : /^[^:]*:\/\/([^/?#]*)/).exec(raw)?.[1];
  return authority?.includes('@') ?? false;
}

/**
 * Why `raw` cannot be a client's logout URI or policy link, or undefined if it can: an absolute https URL, or http on a
 * loopback host (native apps, development), with no credentials and no fragment (Back-Channel Logout §2.2). The CLI
 * (stores/clients.ts) and /register both use it, so a client is held to one rule however it was registered.
 */
export function webUriProblem(raw: string): string | undefined {
  const characters = uriCharactersProblem(raw);
  if (characters) return characters;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'is not an absolute URI';
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHost(url.hostname))) return 'must use https (or http on a loopback host)';
  if (hasUserinfo(raw, url) || raw.includes('#')) return 'must not contain credentials or a fragment';
  return undefined;
}

/**
 * Why a front-channel logout page cannot go with these redirect URIs, or undefined if it can: it must have the
 * scheme, host and port of one of them (Front-Channel Logout 1.0 §2), so the client's own site is what gets framed.
 */
export function frontchannelOriginProblem(uri: string, redirectUris: readonly string[]): string | undefined {
  const origin = new URL(uri).origin;
  if (redirectUris.some((redirectUri) => URL.canParse(redirectUri) && new URL(redirectUri).origin === origin)) return undefined;
  return 'must have the scheme, host and port of one of the redirect URIs';
}

function webUri(body: Record<string, unknown>, field: string): string | undefined {
  const value = optionalString(body, field, MAX_URI_LENGTH);
  if (value === undefined) return undefined;
  const problem = webUriProblem(value);
  if (problem) fail(field, problem);
  return value;
}

/** Bounded like redirect_uris; post_logout_redirect_uris is not a redirect_uris value, so its faults are invalid_client_metadata. */
function webUriList(body: Record<string, unknown>, field: string): string[] {
  const uris = stringArray(body, field, MAX_REDIRECT_URIS) ?? [];
  uris.forEach((uri, index) => {
    const problem = webUriProblem(uri);
    if (problem) throw new InvalidClientMetadata(`${field}[${index}] ${problem}`);
  });
  return uris;
}

function frontchannelLogoutUri(body: Record<string, unknown>, redirectUris: readonly string[]): string | undefined {
  const uri = webUri(body, 'frontchannel_logout_uri');
  const problem = uri === undefined ? undefined : frontchannelOriginProblem(uri, redirectUris);
  if (problem) fail('frontchannel_logout_uri', problem);
  return uri;
}

/** A boolean that defaults to false when absent (Back-Channel Logout §2.2, Front-Channel Logout §2). */
function flag(body: Record<string, unknown>, field: string): boolean {
  const value = body[field];
  if (value === undefined || value === null) return false;
  if (typeof value !== 'boolean') fail(field, 'must be true or false');
  return value;
}

/** RFC 9700 §4.1.3, RFC 8252 §7: never a fragment, credentials, or a scheme that runs code or reads local files. */
export function checkRedirectUri(raw: string): string {
  const refuse = (why: string): never => {
    throw new InvalidRedirectUri(`a redirect URI ${why}`);
  };
  if (raw.includes('#')) refuse('must not contain a fragment');
  const characters = uriCharactersProblem(raw);
  if (characters) refuse(characters);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse('must be an absolute URI');
  }
  if (FORBIDDEN_SCHEMES.has(url.protocol)) refuse(`must not use the ${url.protocol} scheme`);
  if (hasUserinfo(raw, url)) refuse('must not contain credentials');
  // As the CLI refuses it (stores/clients.ts): nothing listens on port 0, however it is written.
  if (url.port === '0') refuse('must not use port 0');
  if (url.protocol === 'https:') return raw;
  if (url.protocol === 'http:') {
    if (!isLoopbackHost(url.hostname)) refuse('must use https (http only on localhost, 127.0.0.0/8 or [::1])');
    // Any port is accepted at /authorize only for the literal written so (RFC 8252 §7.3): refused now, not on first use.
    if (isLoopbackIp(url.hostname) && !isCanonicalLoopbackIpUri(raw, url.hostname)) {
      refuse(`on a loopback IP must be written http://${url.hostname}[:port]/path (RFC 8252 §7.3, as 127.0.0.1 or [::1] are written)`);
    }
    return raw;
  }
  // RFC 8252 §7.1: a private-use scheme is a reverse domain name, so it holds a dot.
  if (!/^[a-z][a-z0-9+\-]*\.[a-z0-9+\-.]*[a-z0-9]:$/.test(url.protocol)) {
    refuse('with a private-use scheme must use a reverse domain name (com.example.app:/callback)');
  }
  return raw;
}

/** Why `value` is not a set of asymmetric public keys, or undefined if it is one. */
export function publicJwkSetProblem(value: unknown): string | undefined {
  const keys = typeof value === 'object' && value !== null ? (value as { keys?: unknown }).keys : undefined;
  if (!Array.isArray(keys) || keys.length === 0) return 'must be a JWK Set: {"keys": [ … ]} with at least one key';
  if (keys.length > MAX_JWKS_KEYS) return `may hold at most ${MAX_JWKS_KEYS} keys`;
  for (const key of keys as unknown[]) {
    if (typeof key !== 'object' || key === null || !['RSA', 'EC', 'OKP'].includes(String((key as { kty?: unknown }).kty))) {
      return 'may only hold RSA, EC or OKP public keys';
    }
    if (PRIVATE_JWK_MEMBERS.some((member) => member in key)) return 'must hold public keys only';
  }
  if (holdsUnstorableString(keys)) return 'must not contain a NUL character or half of a surrogate pair';
  return undefined;
}

function readClientKeys(body: Record<string, unknown>, method: RegisteredAuthMethod): ClientMetadata['keys'] {
  // Other clients' keys serve nothing here (no request objects, no encrypted responses), so they are not kept.
  if (method !== 'private_key_jwt') return undefined;
  const jwksUri = httpsUri(body, 'jwks_uri');
  const jwks = body.jwks ?? undefined;
  if ((jwks === undefined) === (jwksUri === undefined)) fail('jwks', 'or jwks_uri (exactly one) is required for private_key_jwt');
  if (jwksUri !== undefined) {
    if (jwksUri.includes('#')) fail('jwks_uri', 'must not contain a fragment');
    return { jwksUri };
  }
  const problem = publicJwkSetProblem(jwks);
  if (problem) fail('jwks', problem);
  return { jwks: { keys: (jwks as { keys: unknown[] }).keys } };
}

export function readClientMetadata(input: unknown, options: { defaultAuthMethod: RegisteredAuthMethod }): ClientMetadata {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new InvalidClientMetadata('the client metadata must be a JSON object');
  }
  const body = input as Record<string, unknown>;

  const redirectUris = stringArray(body, 'redirect_uris', MAX_REDIRECT_URIS);
  if (!redirectUris || redirectUris.length === 0) throw new InvalidRedirectUri('redirect_uris must list at least one redirect URI');
  redirectUris.forEach(checkRedirectUri);

  const grantTypes = stringArray(body, 'grant_types', 10) ?? ['authorization_code'];
  const unknownGrant = grantTypes.find((grant) => !(GRANT_TYPES as readonly string[]).includes(grant));
  if (unknownGrant !== undefined) fail('grant_types', `may only contain ${GRANT_TYPES.join(' and ')}`);
  const responseTypes = stringArray(body, 'response_types', 10) ?? ['code'];
  if (responseTypes.some((type) => type !== 'code')) fail('response_types', 'may only contain code');
  // §2.1: the code response type and the authorization_code grant go together.
  if (!grantTypes.includes('authorization_code') || !responseTypes.includes('code')) {
    fail('grant_types', 'must include authorization_code, and response_types code (the only flow for a client with redirect URIs)');
  }

  const method = body.token_endpoint_auth_method ?? options.defaultAuthMethod;
  if (typeof method !== 'string' || !(AUTH_METHODS as readonly string[]).includes(method)) {
    fail('token_endpoint_auth_method', `must be one of ${AUTH_METHODS.join(', ')}`);
  }

  const scope = optionalString(body, 'scope', 1000);
  const scopes = scope === undefined ? [...ALL_SCOPES] : parseScope(scope);
  // The OpenID scopes are open to every code-flow client, and advertised in scopes_supported: a client may list them
  // among the scopes it will use (RFC 7591 §2). A request without `scope` still gets only the API scopes (Core §3.1.2.1).
  if (scopes.some((s) => !isSupportedScope(s))) fail('scope', `may only contain ${SUPPORTED_SCOPES.join(' ')}`);
  if (scopes.length === 0) fail('scope', 'must name at least one scope');

  refuseUnsupported(body);
  const policyUri = httpsUri(body, 'policy_uri');
  const tosUri = httpsUri(body, 'tos_uri');
  const contacts = stringArray(body, 'contacts', MAX_CONTACTS);
  const extra: Record<string, unknown> = {
    ...(contacts ? { contacts } : {}),
    ...optionalEntry('application_type', applicationType(body)),
    ...optionalEntry('token_endpoint_auth_signing_alg', assertionSigningAlg(body, method as RegisteredAuthMethod)),
    // auth_time is in every ID Token whose sign-in time is known: a client may ask for it (OIDC Registration §2).
    ...(flag(body, 'require_auth_time') ? { require_auth_time: true } : {}),
    ...optionalEntry('tos_uri', tosUri),
    ...optionalEntry('policy_uri', policyUri),
    ...optionalEntry('software_id', optionalString(body, 'software_id')),
    ...optionalEntry('software_version', optionalString(body, 'software_version')),
  };
  return {
    redirectUris,
    clientName: optionalString(body, 'client_name')?.trim() || undefined,
    grantTypes,
    responseTypes,
    tokenEndpointAuthMethod: method as RegisteredAuthMethod,
    keys: readClientKeys(body, method as RegisteredAuthMethod),
    scopes,
    clientUri: httpsUri(body, 'client_uri'),
    logoUri: httpsUri(body, 'logo_uri'),
    userinfoSignedResponseAlg: signingAlg(body, 'userinfo_signed_response_alg'),
    idTokenSignedResponseAlg: signingAlg(body, 'id_token_signed_response_alg'),
    subjectType: subjectType(body, redirectUris),
    postLogoutRedirectUris: webUriList(body, 'post_logout_redirect_uris'),
    backchannelLogoutUri: webUri(body, 'backchannel_logout_uri'),
    backchannelLogoutSessionRequired: flag(body, 'backchannel_logout_session_required'),
    frontchannelLogoutUri: frontchannelLogoutUri(body, redirectUris),
    frontchannelLogoutSessionRequired: flag(body, 'frontchannel_logout_session_required'),
    dpopBoundAccessTokens: flag(body, 'dpop_bound_access_tokens'),
    policyUri,
    tosUri,
    extra,
  };
}

/**
 * Metadata that asks for something Fieldgate does not do, and that a client would rely on if it went unanswered: refused,
 * not dropped (OIDC Registration §3.3). Fields whose absence shows by itself (request_uris: a request_uri is refused) are
 * left to RFC 7591 §2's "ignore what you do not understand".
 */
const UNSUPPORTED_METADATA: Record<string, string> = {
  sector_identifier_uri: 'a pairwise sub is derived from the one host of the redirect URIs',
  id_token_encrypted_response_alg: 'ID Tokens are signed, not encrypted',
  id_token_encrypted_response_enc: 'ID Tokens are signed, not encrypted',
  userinfo_encrypted_response_alg: 'UserInfo answers are signed or plain JSON, not encrypted',
  userinfo_encrypted_response_enc: 'UserInfo answers are signed or plain JSON, not encrypted',
  request_object_encryption_alg: 'request objects are not supported',
  request_object_encryption_enc: 'request objects are not supported',
  authorization_encrypted_response_alg: 'authorization responses are not encrypted',
  authorization_encrypted_response_enc: 'authorization responses are not encrypted',
  default_max_age: 'send max_age with each authorization request instead',
};

function refuseUnsupported(body: Record<string, unknown>): void {
  for (const [field, instead] of Object.entries(UNSUPPORTED_METADATA)) {
    if (body[field] !== undefined && body[field] !== null) fail(field, `is not supported (${instead})`);
  }
}

function applicationType(body: Record<string, unknown>): string | undefined {
  const value = body.application_type;
  if (value === undefined || value === null) return undefined;
  if (value !== 'web' && value !== 'native') fail('application_type', 'must be web or native');
  return value;
}

/** OIDC Registration §2: assertions of this client must then use this algorithm; it applies to private_key_jwt only here. */
function assertionSigningAlg(body: Record<string, unknown>, method: RegisteredAuthMethod): string | undefined {
  const value = body.token_endpoint_auth_signing_alg;
  if (value === undefined || value === null) return undefined;
  if (method !== 'private_key_jwt') fail('token_endpoint_auth_signing_alg', 'applies only to token_endpoint_auth_method private_key_jwt');
  if (typeof value !== 'string' || !(ASSERTION_ALGORITHMS as readonly string[]).includes(value)) {
    fail('token_endpoint_auth_signing_alg', `must be one of ${ASSERTION_ALGORITHMS.join(', ')}`);
  }
  return value;
}

/**
 * Discovery offers `public` and `pairwise`. A pairwise `sub` is derived from the one host of the redirect URIs (Core §8.1);
 * there is no `sector_identifier_uri`, so URIs on several hosts cannot be pairwise.
 */
function subjectType(body: Record<string, unknown>, redirectUris: readonly string[]): SubjectType {
  const value = body.subject_type;
  if (value === undefined || value === null) return 'public';
  if (typeof value !== 'string' || !isSubjectType(value)) fail('subject_type', 'must be public or pairwise');
  if (value === 'pairwise') {
    const sector = sectorOf(redirectUris);
    if (sector === undefined) fail('subject_type', 'pairwise needs every redirect URI on one host (sector_identifier_uri is not supported)');
    // A private-use scheme has no host, and every native app shares the loopback one: any app could claim the sector,
    // and with it the same pairwise sub for a user, the correlation pairwise exists to prevent.
    if (sector === '' || isLoopbackHost(sector)) {
      fail('subject_type', 'pairwise needs redirect URIs on a host of the client’s own, not a private-use scheme or a loopback host, which any app can claim');
    }
  }
  return value;
}

/** An algorithm we hold a key for (OIDC Registration §2's `*_signed_response_alg`); undefined when not sent. */
function signingAlg(body: Record<string, unknown>, name: 'userinfo_signed_response_alg' | 'id_token_signed_response_alg'): SigningAlg | undefined {
  const value = body[name];
  if (value === undefined || value === null) return undefined;
  if (!isSigningAlg(value)) fail(name, `must be ${SIGNING_ALGS.join(' or ')}`);
  return value;
}

function optionalEntry(name: string, value: string | undefined): Record<string, string> {
  return value === undefined ? {} : { [name]: value };
}
