/**
 * The client side of one "flow", identical for every server measured: GET /authorize with an
 * established browser session and consent → 302 with a code → POST /token (PKCE S256,
 * client_secret_basic) → a JWT access token and a refresh token.
 */
import { createHash, randomBytes } from 'node:crypto';
import { basicAuth, formBody, request, type HttpResponse, type Sender } from './http.js';

/** Everything a driver needs to run flows against one server; plain data, sent over IPC. */
export interface OAuthTarget {
  label: string;
  baseUrl: string;
  authorizePath: string;
  tokenPath: string;
  introspectPath: string;
  clientId: string;
  clientSecret: string;
  redirectUri: string;
  scope: string;
  /** RFC 8707 resource indicator (oidc-provider issues JWT access tokens per resource server). */
  resource?: string;
  /** Cookie header of the signed-in browser session that already consented. */
  cookie: string;
}

/** What a bench server reports once it has set up its user and client: where it listens and the credentials for flows. */
export interface ServerInfo {
  url: string;
  username: string;
  password: string;
  clientId: string;
  clientSecret: string;
  redirectUri: string;
  scope: string;
  resource?: string;
  productId?: number;
}

/** The target of a server's flows before its browser session is signed in. */
export function oauthTarget(label: string, info: ServerInfo): Omit<OAuthTarget, 'cookie'> {
  return {
    label,
    baseUrl: info.url,
    authorizePath: '/authorize',
    tokenPath: '/token',
    introspectPath: '/introspect',
    clientId: info.clientId,
    clientSecret: info.clientSecret,
    redirectUri: info.redirectUri,
    scope: info.scope,
    ...(info.resource ? { resource: info.resource } : {}),
  };
}

export interface TokenResponse {
  access_token: string;
  token_type: string;
  expires_in?: number;
  refresh_token?: string;
  scope?: string;
}

export class FlowError extends Error {
  override readonly name = 'FlowError';
}

export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export function authorizeUrl(target: OAuthTarget, state: string, challenge: string): URL {
  const url = new URL(target.authorizePath, target.baseUrl);
  const params: Record<string, string | undefined> = {
    response_type: 'code',
    client_id: target.clientId,
    redirect_uri: target.redirectUri,
    scope: target.scope,
    state,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    resource: target.resource,
  };
  url.search = formBody(params);
  return url;
}

function describe(res: HttpResponse): string {
  const location = res.headers.location ? ` → ${res.headers.location}` : '';
  return `HTTP ${res.status}${location} ${res.body.slice(0, 300).replace(/\s+/g, ' ')}`;
}

/** Reads the code out of a redirect to the client, or throws with what came back instead. */
export function codeFromRedirect(res: HttpResponse, target: OAuthTarget, state: string, base: URL): string {
  if (res.status !== 302 && res.status !== 303) throw new FlowError(`/authorize did not redirect: ${describe(res)}`);
  const location = new URL(String(res.headers.location), base);
  if (!location.href.startsWith(target.redirectUri)) throw new FlowError(`/authorize redirected elsewhere: ${location.href}`);
  const error = location.searchParams.get('error');
  if (error) throw new FlowError(`/authorize answered ${error}: ${location.searchParams.get('error_description') ?? ''}`);
  if (location.searchParams.get('state') !== state) throw new FlowError('/authorize returned a different state');
  const code = location.searchParams.get('code');
  if (!code) throw new FlowError(`/authorize redirect carries no code: ${location.href}`);
  return code;
}

function tokenResponse(res: HttpResponse, what: string): TokenResponse {
  if (res.status !== 200) throw new FlowError(`${what}: ${describe(res)}`);
  const body = JSON.parse(res.body) as Partial<TokenResponse>;
  if (typeof body.access_token !== 'string' || body.access_token.split('.').length !== 3) {
    throw new FlowError(`${what}: no JWT access token in ${res.body.slice(0, 200)}`);
  }
  return body as TokenResponse;
}

export async function exchangeCode(
  target: OAuthTarget,
  code: string,
  verifier: string,
  send: Sender = request,
): Promise<TokenResponse> {
  const res = await send(new URL(target.tokenPath, target.baseUrl), {
    method: 'POST',
    headers: { authorization: basicAuth(target.clientId, target.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
    body: formBody({ grant_type: 'authorization_code', code, redirect_uri: target.redirectUri, code_verifier: verifier, resource: target.resource }),
  });
  const tokens = tokenResponse(res, 'authorization_code grant');
  if (typeof tokens.refresh_token !== 'string') throw new FlowError('authorization_code grant: no refresh token');
  return tokens;
}

/** One whole flow: authorize with the session cookie, then redeem the code. */
export async function runFlow(target: OAuthTarget, send: Sender = request): Promise<TokenResponse> {
  const { verifier, challenge } = pkcePair();
  const state = randomBytes(12).toString('base64url');
  const url = authorizeUrl(target, state, challenge);
  const res = await send(url, { headers: { cookie: target.cookie } });
  const code = codeFromRedirect(res, target, state, url);
  return exchangeCode(target, code, verifier, send);
}

export async function refresh(target: OAuthTarget, refreshToken: string, send: Sender = request): Promise<TokenResponse> {
  const res = await send(new URL(target.tokenPath, target.baseUrl), {
    method: 'POST',
    headers: { authorization: basicAuth(target.clientId, target.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
    body: formBody({ grant_type: 'refresh_token', refresh_token: refreshToken }),
  });
  return tokenResponse(res, 'refresh_token grant');
}

export async function introspect(target: OAuthTarget, token: string): Promise<Record<string, unknown>> {
  const res = await request(new URL(target.introspectPath, target.baseUrl), {
    method: 'POST',
    headers: { authorization: basicAuth(target.clientId, target.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
    body: formBody({ token }),
  });
  if (res.status !== 200) throw new FlowError(`introspection: ${describe(res)}`);
  return JSON.parse(res.body) as Record<string, unknown>;
}

export function decodeJwtHeader(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[0] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
}
