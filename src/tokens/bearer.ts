/**
 * Resource-side bearer authentication (RFC 6750), shared by GraphQL and REST: read the
 * token from the Authorization header, verify it, check scopes, and build the
 * `WWW-Authenticate` challenge for a refusal.
 */
import type { AccessTokens, Principal } from './access-token.js';
import { InsufficientScope, InvalidRequest, InvalidToken, type OAuthError } from '../oauth/errors.js';

export const REALM = 'fieldgate';

export async function authenticateBearer(
  accessTokens: AccessTokens,
  authorization: string | undefined | null,
): Promise<Principal> {
  if (!authorization) throw new InvalidToken('an access token is required', { missing: true });
  const match = /^Bearer[ ]+([A-Za-z0-9\-._~+/]+=*)[ ]*$/i.exec(authorization);
  if (!match) {
    if (!/^Bearer\b/i.test(authorization)) throw new InvalidToken('use the Bearer authentication scheme', { missing: true });
    throw new InvalidToken('the Authorization header is not a valid bearer token');
  }
  return accessTokens.verify(match[1]!);
}

export function requireScope(principal: Principal, scope: string): void {
  if (!principal.scopes.has(scope)) throw new InsufficientScope(scope);
}

function quoted(value: string): string {
  return `"${value.replace(/[\\"]/g, '\\$&').replace(/[^\x20-\x7e]/g, '')}"`;
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
