/**
 * Resource-side authentication for GraphQL and REST. A DPoP-bound token (`cnf.jkt`) presented as Bearer is refused,
 * so a stolen bound token is useless without the key (RFC 9449 §7).
 */
import type { AccessTokens, Principal } from './access-token.js';
import { DPOP_ALGORITHMS, type DpopVerifier } from './dpop.js';
import { InsufficientScope, InvalidDpopProof, InvalidRequest, InvalidToken, UseDpopNonce, type OAuthError } from '../oauth/errors.js';

export const REALM = 'fieldgate';

export interface ResourceAuthentication {
  accessTokens: AccessTokens;
  /** Undefined where no request is at hand to check a proof against: DPoP tokens are then refused. */
  dpop: DpopVerifier | undefined;
  config: { issuer: string; dpopNonce: 'token' | 'all' | 'off' };
}

export interface ResourceRequest {
  authorization: string | undefined | null;
  dpop: string | string[] | undefined | null;
  method: string;
  path: string;
  /** RFC 8707: the resource the token must have been issued for (its `aud` names it). */
  resource?: string;
}

const CREDENTIALS = /^(Bearer|DPoP)[ ]+([A-Za-z0-9\-._~+/]+=*)[ ]*$/i;

export async function authenticateRequest(auth: ResourceAuthentication, request: ResourceRequest): Promise<Principal> {
  const { authorization } = request;
  if (!authorization) throw new InvalidToken('an access token is required', { missing: true });
  const match = CREDENTIALS.exec(authorization);
  if (!match) {
    if (/^DPoP\b/i.test(authorization)) throw new InvalidToken('the Authorization header is not a valid DPoP token', { dpop: { error: 'invalid_token' } });
    if (!/^Bearer\b/i.test(authorization)) throw new InvalidToken('use the Bearer or DPoP authentication scheme', { missing: true });
    throw new InvalidToken('the Authorization header is not a valid bearer token');
  }
  const token = match[2]!;
  if (match[1]!.toLowerCase() === 'bearer') {
    const principal = await auth.accessTokens.verify(token, request.resource);
    if (principal.jkt !== undefined) {
      throw new InvalidToken('this access token is DPoP-bound: send it as Authorization: DPoP with a DPoP proof', { dpop: { error: 'invalid_token' } });
    }
    return principal;
  }
  return authenticateDpop(auth, request, token);
}

/** Undefined when `authenticateRequest` must run (and give any refusal). */
export function authenticateFromCache(auth: ResourceAuthentication, request: ResourceRequest): Principal | undefined {
  const match = request.authorization ? CREDENTIALS.exec(request.authorization) : null;
  if (!match || match[1]!.toLowerCase() !== 'bearer') return undefined;
  const principal = auth.accessTokens.verifyFromCache(match[2]!, request.resource);
  return principal?.jkt === undefined ? principal : undefined;
}

export async function authenticateBearer(accessTokens: AccessTokens, authorization: string | undefined | null, resource?: string): Promise<Principal> {
  return authenticateRequest(
    { accessTokens, dpop: undefined, config: { issuer: '', dpopNonce: 'off' } },
    { authorization, dpop: undefined, method: '', path: '', ...(resource === undefined ? {} : { resource }) },
  );
}

async function authenticateDpop(auth: ResourceAuthentication, request: ResourceRequest, token: string): Promise<Principal> {
  const refuse = (message: string, error: 'invalid_token' | 'invalid_dpop_proof' = 'invalid_token') =>
    new InvalidToken(message, { dpop: { error } });
  let principal: Principal;
  try {
    principal = await auth.accessTokens.verify(token, request.resource);
  } catch (error) {
    if (error instanceof InvalidToken) throw new InvalidToken(error.message, { cause: error, dpop: { error: 'invalid_token' } });
    throw error;
  }
  if (principal.jkt === undefined) throw refuse('this access token is not DPoP-bound: send it as Authorization: Bearer');
  if (request.dpop === undefined || request.dpop === null || !auth.dpop) throw refuse('a DPoP proof is required with a DPoP token', 'invalid_dpop_proof');
  let proof;
  try {
    proof = await auth.dpop.verify({
      header: request.dpop,
      method: request.method,
      url: `${auth.config.issuer}${request.path}`,
      accessToken: token,
      requireNonce: auth.config.dpopNonce === 'all',
    });
  } catch (error) {
    if (error instanceof UseDpopNonce) throw new InvalidToken(error.message, { cause: error, dpop: { error: 'use_dpop_nonce', nonce: error.nonce } });
    if (error instanceof InvalidDpopProof) throw refuse(error.message, 'invalid_dpop_proof');
    throw error;
  }
  if (proof?.jkt !== principal.jkt) throw refuse('the DPoP proof is signed by another key than the one the token is bound to', 'invalid_dpop_proof');
  return principal;
}

export function requireScope(principal: Principal, scope: string): void {
  if (!principal.scopes.has(scope)) throw new InsufficientScope(scope, { dpop: principal.jkt !== undefined });
}

function quoted(value: string): string {
  return `"${value.replace(/[\\"]/g, '\\$&').replace(/[^\x20-\x7e]/g, '')}"`;
}

/** RFC 9449 §7.1: a request with no token is told that both schemes are accepted, and which proof algorithms. */
const DPOP_OFFER = `DPoP realm=${quoted(REALM)}, algs=${quoted(DPOP_ALGORITHMS.join(' '))}`;

/**
 * RFC 9728 §5.1: the challenge names the resource's metadata, so a client knowing only the API URL finds the server.
 * It goes into the Bearer challenge, which comes first: clients such as the MCP SDK read only the first scheme.
 */
export function withResourceMetadata(challenge: string, metadataUrl: string): string {
  if (!/^Bearer\b/.test(challenge) || challenge.includes('resource_metadata=')) return challenge;
  const offer = `, ${DPOP_OFFER}`;
  const bearer = challenge.endsWith(offer) ? challenge.slice(0, -offer.length) : challenge;
  const separator = bearer === 'Bearer' ? ' ' : ', ';
  return `${bearer}${separator}resource_metadata=${quoted(metadataUrl)}${challenge.slice(bearer.length)}`;
}

export function wwwAuthenticate(error: OAuthError): string {
  const params = [`realm=${quoted(REALM)}`];
  if (error instanceof InvalidToken && error.dpop) {
    params.push(`algs=${quoted(DPOP_ALGORITHMS.join(' '))}`, `error=${quoted(error.dpop.error)}`, `error_description=${quoted(error.message)}`);
    return `DPoP ${params.join(', ')}`;
  }
  if (error instanceof InsufficientScope && error.dpop) {
    params.push(`algs=${quoted(DPOP_ALGORITHMS.join(' '))}`, `error=${quoted(error.code)}`, `error_description=${quoted(error.message)}`, `scope=${quoted(error.requiredScope)}`);
    return `DPoP ${params.join(', ')}`;
  }
  if (error instanceof InvalidToken && error.missing) return `Bearer ${params.join(', ')}`;
  if (error instanceof InvalidToken || error instanceof InvalidRequest) {
    params.push(`error=${quoted(error.code)}`, `error_description=${quoted(error.message)}`);
  } else if (error instanceof InsufficientScope) {
    params.push(`error=${quoted(error.code)}`, `error_description=${quoted(error.message)}`, `scope=${quoted(error.requiredScope)}`);
  }
  return `Bearer ${params.join(', ')}`;
}

/** The resource faces' refusal headers; they accept DPoP tokens, so a request without a token is offered both schemes. */
export function challengeHeaders(error: OAuthError): Record<string, string> {
  const nonce = error instanceof InvalidToken ? error.dpop?.nonce : undefined;
  const challenge = error instanceof InvalidToken && error.missing ? `${wwwAuthenticate(error)}, ${DPOP_OFFER}` : wwwAuthenticate(error);
  return { 'WWW-Authenticate': challenge, ...(nonce === undefined ? {} : { 'DPoP-Nonce': nonce }) };
}
