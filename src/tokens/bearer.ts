/**
 * Resource-side bearer authentication (RFC 6750), shared by GraphQL and REST: read the
 * token from the Authorization header, verify it, check scopes, and build the
 * `WWW-Authenticate` challenge for a refusal.
 */
import type { AccessTokens, Principal } from './access-token.js';
import { InsufficientScope, InvalidRequest, InvalidToken, type OAuthError } from '../oauth/errors.js';

export const REALM = 'fieldgate';

/**
 * The principal of the bearer token in `authorization`; with `resource`, the token must have
 * been issued for it (RFC 8707: its `aud` names it). Both faces always pass theirs.
 */
export async function authenticateBearer(
  accessTokens: AccessTokens,
  authorization: string | undefined | null,
  resource?: string,
): Promise<Principal> {
  if (!authorization) throw new InvalidToken('an access token is required', { missing: true });
  const match = /^Bearer[ ]+([A-Za-z0-9\-._~+/]+=*)[ ]*$/i.exec(authorization);
  if (!match) {
    if (!/^Bearer\b/i.test(authorization)) throw new InvalidToken('use the Bearer authentication scheme', { missing: true });
    throw new InvalidToken('the Authorization header is not a valid bearer token');
  }
  return accessTokens.verify(match[1]!, resource);
}

export function requireScope(principal: Principal, scope: string): void {
  if (!principal.scopes.has(scope)) throw new InsufficientScope(scope);
}

function quoted(value: string): string {
  return `"${value.replace(/[\\"]/g, '\\$&').replace(/[^\x20-\x7e]/g, '')}"`;
}

/**
 * RFC 9728 §5.1: the challenge names where the resource's metadata is, so a client that knows
 * only the API URL can discover the authorization server. Added by each face to whatever
 * challenge it answers with.
 */
export function withResourceMetadata(challenge: string, metadataUrl: string): string {
  if (!/^Bearer\b/.test(challenge) || challenge.includes('resource_metadata=')) return challenge;
  const separator = challenge === 'Bearer' ? ' ' : ', ';
  return `${challenge}${separator}resource_metadata=${quoted(metadataUrl)}`;
}

/** The RFC 6750 §3 challenge for a resource-side refusal. */
export function wwwAuthenticate(error: OAuthError): string {
  const params = [`realm=${quoted(REALM)}`];
  if (error instanceof InvalidToken && error.missing) return `Bearer ${params.join(', ')}`;
  if (error instanceof InvalidToken || error instanceof InvalidRequest) {
    params.push(`error=${quoted(error.code)}`, `error_description=${quoted(error.message)}`);
  } else if (error instanceof InsufficientScope) {
    params.push(`error=${quoted(error.code)}`, `error_description=${quoted(error.message)}`, `scope=${quoted(error.requiredScope)}`);
  }
  return `Bearer ${params.join(', ')}`;
}
