/**
 * Validated in the order RFC 6749 §4.1.2.1 requires: client and redirect URI first, whose failures are shown on our
 * own page (else the endpoint is an open redirector), then the rest, whose failures go to the now trusted redirect URI.
 */
import { isSelfRegistered, redirectUriMatches, type Client } from './stores/clients.js';
import {
  InvalidClientMetadata,
  InvalidRequest,
  InvalidScope,
  OAuthError,
  RateLimited,
  RegistrationNotSupported,
  RequestNotSupported,
  RequestUriNotSupported,
  UnauthorizedClient,
  UnsupportedResponseType,
} from './errors.js';
import type { Parameters } from './params.js';
import { isValidCodeChallenge, type CodeChallengeMethod } from './pkce.js';
import { isIdentityScope, isScope, isSupportedScope, parseScope, withoutUnheldOpenIdScopes } from './scopes.js';
import type { ClientCache } from './stores/client-cache.js';
import type { Resources } from '../tokens/resources.js';

export const AUTHORIZE_PARAMETERS = [
  'response_type',
  'response_mode',
  'client_id',
  'redirect_uri',
  'scope',
  'state',
  'code_challenge',
  'code_challenge_method',
  'dpop_jkt',
  // OpenID Connect Core §3.1.2.1
  'nonce',
  'prompt',
  'max_age',
  'login_hint',
  'id_token_hint',
] as const;

export const PROMPT_VALUES = ['none', 'login', 'consent', 'select_account'] as const;
export type Prompt = (typeof PROMPT_VALUES)[number];

const MAX_NONCE_LENGTH = 512;
const MAX_LOGIN_HINT_LENGTH = 256;
/** Our ID Tokens are well under 2 KiB; the bound only keeps a hostile one from being verified. */
const MAX_ID_TOKEN_HINT_LENGTH = 8_192;
export const RESOURCE_PARAMETER = 'resource';

export class UntrustedAuthorizationRequest extends Error {
  override readonly name = 'UntrustedAuthorizationRequest';
  constructor(
    message: string,
    /** 400 for a request that is wrong; 429 or 503 with Retry-After for one that may work later. */
    readonly status = 400,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

export class AuthorizationError extends Error {
  override readonly name = 'AuthorizationError';
  constructor(
    readonly error: OAuthError,
    readonly redirectUri: string,
    readonly state: string | undefined,
    readonly clientId: string,
    /**
     * The redirect URI is not trusted enough to be sent to without the user (a self-registered client's: anyone can
     * register a phishing page and send broken requests to bounce users there, RFC 9700 §4.11.2), so the error is
     * shown on our page with a link the user may follow. False for an answer to the user's own decision (Deny).
     */
    readonly confirmBeforeRedirect = false,
  ) {
    super(error.message, { cause: error });
  }
}

export interface AuthorizationRequest {
  client: Client;
  redirectUri: string;
  /** Whether redirect_uri was sent (then the token request must repeat it). */
  redirectUriSent: boolean;
  state: string | undefined;
  scopes: string[];
  resources: string[];
  codeChallenge: string | null;
  codeChallengeMethod: CodeChallengeMethod | null;
  dpopJkt: string | null;
  openid: boolean;
  nonce: string | null;
  /** As sent, plus `login` for max_age=0. */
  prompt: ReadonlySet<Prompt>;
  maxAge: number | null;
  loginHint: string | null;
  /** Acted on only with prompt=none (see authorize.ts). */
  idTokenHint: string | null;
  query: string;
}

/** A parameter read before the redirect URI is trusted: any problem with it is shown on our page. */
function untrustedGet(params: Parameters, name: string): string | undefined {
  try {
    return params.get(name);
  } catch (error) {
    throw new UntrustedAuthorizationRequest(`The ${name} parameter is not valid: ${(error as Error).message}.`);
  }
}

async function trustedClient(clients: ClientCache, params: Parameters, requesterIp: string | undefined): Promise<{ client: Client; redirectUri: string }> {
  if (params.isRepeated('client_id')) throw new UntrustedAuthorizationRequest('The client_id parameter is repeated.');
  const clientId = untrustedGet(params, 'client_id');
  if (clientId === undefined) throw new UntrustedAuthorizationRequest('The request does not say which application is asking (client_id is missing).');
  let client: Client | undefined;
  try {
    client = await clients.resolve(clientId, requesterIp);
  } catch (error) {
    if (error instanceof InvalidClientMetadata) throw new UntrustedAuthorizationRequest(`The application's client ID metadata document cannot be used: ${error.description}.`);
    // Too many fetches from this address (429) or at once (503, ServiceBusy): a request that may work later.
    if (error instanceof RateLimited) {
      throw new UntrustedAuthorizationRequest(`The application's client ID metadata document cannot be fetched now: ${error.description}.`, error.status, error.retryAfterSeconds);
    }
    throw error;
  }
  if (!client) throw new UntrustedAuthorizationRequest('The application that sent you here is not registered with this server.');

  if (params.isRepeated('redirect_uri')) throw new UntrustedAuthorizationRequest('The redirect_uri parameter is repeated.');
  const redirectUri = untrustedGet(params, 'redirect_uri');
  if (redirectUri === undefined) {
    if (client.redirectUris.length !== 1) {
      throw new UntrustedAuthorizationRequest('The request must name its redirect_uri: this application registered more than one.');
    }
    return { client, redirectUri: client.redirectUris[0]! };
  }
  // Simple string comparison (RFC 9700 §4.1.3); only a loopback IP literal's port may differ (RFC 8252 §7.3).
  if (!client.redirectUris.some((registered) => redirectUriMatches(registered, redirectUri))) {
    throw new UntrustedAuthorizationRequest('The redirect_uri is not one this application registered.');
  }
  return { client, redirectUri };
}

function requestedScopes(client: Client, scope: string | undefined): string[] {
  const requested = withoutUnheldOpenIdScopes(parseScope(scope));
  if (requested.length === 0) {
    // RFC 6749 §3.3's default: the client's registered API scopes. OpenID Connect is asked for by name (Core §3.1.2.1),
    // so OpenID scopes a client registered never make a request without `scope` an OpenID request.
    const defaults = client.scopes.filter(isScope);
    if (defaults.length === 0) throw new InvalidScope('scope is required: this client registered no API scope to default to');
    return defaults;
  }
  const unknown = requested.filter((s) => !isSupportedScope(s));
  if (unknown.length) throw new InvalidScope('the scope names a scope this server does not know');
  // Identity scopes are open to every code-flow client; API scopes only as registered.
  const notAllowed = requested.filter((s) => !isIdentityScope(s) && !client.scopes.includes(s));
  if (notAllowed.length) throw new InvalidScope(`this client may not request ${notAllowed.join(' ')}`);
  return requested;
}

function pkce(client: Client, params: Parameters): Pick<AuthorizationRequest, 'codeChallenge' | 'codeChallengeMethod'> {
  const challenge = params.get('code_challenge');
  const method = params.get('code_challenge_method');
  if (challenge === undefined) {
    if (method !== undefined) throw new InvalidRequest('code_challenge_method was sent without code_challenge');
    if (client.isPublic) throw new InvalidRequest('PKCE is required for this client: send code_challenge and code_challenge_method=S256');
    return { codeChallenge: null, codeChallengeMethod: null };
  }
  if (method === undefined) throw new InvalidRequest('code_challenge_method is required and must be S256');
  if (method !== 'S256') throw new InvalidRequest('this code_challenge_method is not supported; use S256');
  if (!isValidCodeChallenge(challenge)) throw new InvalidRequest('code_challenge must be the 43-character base64url SHA-256 of the verifier');
  return { codeChallenge: challenge, codeChallengeMethod: 'S256' };
}

/** RFC 9449 §10: `dpop_jkt` is a base64url SHA-256 JWK thumbprint (RFC 7638), 43 characters. */
function dpopJkt(params: Parameters): string | null {
  const jkt = params.get('dpop_jkt');
  if (jkt === undefined) return null;
  if (!/^[A-Za-z0-9_-]{43}$/.test(jkt)) throw new InvalidRequest('dpop_jkt must be the base64url SHA-256 thumbprint of a JWK');
  return jkt;
}

function promptOf(params: Parameters): Set<Prompt> {
  const values = parseScope(params.get('prompt'));
  const prompt = new Set<Prompt>();
  for (const value of values) {
    if (!(PROMPT_VALUES as readonly string[]).includes(value)) throw new InvalidRequest('prompt has a value this server does not support');
    prompt.add(value as Prompt);
  }
  if (prompt.has('none') && prompt.size > 1) throw new InvalidRequest('prompt=none cannot be combined with other prompt values');
  return prompt;
}

/**
 * OIDC Core §3.1.2.1 (errata set 2): max_age=0 is prompt=login. Whole seconds cannot tell a sign-in from now, so it is
 * made one here; the sign-in then drops max_age from the query it continues with (flow.ts), as it drops
 * prompt=login, so it asks once. Beside prompt=none it makes the answer login_required.
 */
function promptInEffect(prompt: Set<Prompt>, maxAge: number | null): ReadonlySet<Prompt> {
  if (maxAge === 0) prompt.add('login');
  return prompt;
}

function maxAgeOf(params: Parameters): number | null {
  const raw = params.get('max_age');
  if (raw === undefined) return null;
  if (!/^\d{1,10}$/.test(raw)) throw new InvalidRequest('max_age must be a whole number of seconds');
  return Number(raw);
}

function boundedText(params: Parameters, name: string, max: number): string | null {
  const value = params.get(name);
  if (value === undefined) return null;
  if (value.length > max) throw new InvalidRequest(`${name} is longer than ${max} characters`);
  return value;
}

/**
 * OAuth 2.0 Multiple Response Type Encoding §2.1: the answer goes back only in the query (response_modes_supported).
 * Another mode is refused rather than ignored: a client waiting for a form_post or a fragment would not see a code
 * sent in the query, which would still land in its server logs and Referer headers.
 */
function checkResponseMode(params: Parameters): void {
  const mode = params.get('response_mode');
  if (mode !== undefined && mode !== 'query') throw new InvalidRequest('this response_mode is not supported; use query');
}

/** OIDC Core §6 and §7.2.1: request objects and `registration` are not supported; say so instead of silently ignoring them. */
function refuseRequestObjects(params: Parameters): void {
  if (params.has('request')) throw new RequestNotSupported('request objects are not supported; send the parameters in the query');
  if (params.has('request_uri')) throw new RequestUriNotSupported('request_uri is not supported; send the parameters in the query');
  if (params.has('registration')) throw new RegistrationNotSupported('the registration parameter is not supported; register the client first');
}

function canonicalQuery(params: Parameters): string {
  const query = new URLSearchParams();
  for (const name of AUTHORIZE_PARAMETERS) {
    if (params.isRepeated(name)) continue;
    const value = params.get(name);
    if (value !== undefined) query.set(name, value);
  }
  for (const resource of params.getAll(RESOURCE_PARAMETER)) query.append(RESOURCE_PARAMETER, resource);
  return query.toString();
}

function stateOf(params: Parameters): string | undefined {
  try {
    return params.get('state');
  } catch {
    return undefined;
  }
}

export async function readAuthorizationRequest(clients: ClientCache, params: Parameters, resources: Resources, requesterIp?: string): Promise<AuthorizationRequest> {
  const { client, redirectUri } = await trustedClient(clients, params, requesterIp);
  const state = params.isRepeated('state') ? undefined : stateOf(params);
  try {
    params.rejectRepeated(AUTHORIZE_PARAMETERS);
    const responseType = params.get('response_type');
    if (responseType === undefined) throw new InvalidRequest('the response_type parameter is missing');
    if (responseType !== 'code') throw new UnsupportedResponseType('this response_type is not supported; use code');
    if (!client.grantTypes.includes('authorization_code')) {
      throw new UnauthorizedClient('this client may not use the authorization code grant');
    }
    checkResponseMode(params);
    refuseRequestObjects(params);
    const scopes = requestedScopes(client, params.get('scope'));
    const openid = scopes.includes('openid');
    // OIDC Core §3.1.2.1: an OpenID request (one whose scope names openid) must send redirect_uri, even where
    // RFC 6749 §3.1.2.3 lets a client with one registered URI leave it out. A request without scope is plain OAuth.
    if (openid && params.has('scope') && !params.has('redirect_uri')) {
      throw new InvalidRequest('redirect_uri is required in an OpenID Connect request');
    }
    const requestedResources = resources.resolve(params.getAll(RESOURCE_PARAMETER));
    const prompt = promptOf(params);
    const maxAge = maxAgeOf(params);
    return {
      client,
      redirectUri,
      redirectUriSent: params.has('redirect_uri'),
      state,
      scopes,
      resources: requestedResources,
      ...pkce(client, params),
      dpopJkt: dpopJkt(params),
      openid,
      // The `claims` parameter (§5.5) is ignored, as claims_parameter_supported=false announces.
      nonce: boundedText(params, 'nonce', MAX_NONCE_LENGTH),
      prompt: promptInEffect(prompt, maxAge),
      maxAge,
      loginHint: boundedText(params, 'login_hint', MAX_LOGIN_HINT_LENGTH),
      idTokenHint: boundedText(params, 'id_token_hint', MAX_ID_TOKEN_HINT_LENGTH),
      query: canonicalQuery(params),
    };
  } catch (error) {
    if (error instanceof OAuthError && error.expose) {
      throw new AuthorizationError(error, redirectUri, state, client.id, isSelfRegistered(client));
    }
    throw error;
  }
}
