/**
 * RFC 6749 §4.4: the token's `sub` is the client_id (RFC 9068 §2.2), so it never gets a user's scopes, and no refresh
 * token (§4.4.3). Each token gets a grant row of its own, so it is revoked like any other and goes with its client.
 */
import { InvalidClient, InvalidScope, UnauthorizedClient } from '../errors.js';
import { formatScope, isIdentityScope, isScope, isSupportedScope, needsUser, parseScope } from '../scopes.js';
import type { Client } from '../stores/clients.js';
import { tokenResponse, type GrantRequest, type TokenResponse } from './grant.js';

export const grantType = 'client_credentials';

export const parameters = ['scope'] as const;
// `resource` may repeat (RFC 8707 §2), so it is not listed for the repetition check.

export function machineScope(client: Client, requested: string | undefined): string {
  const scopes = parseScope(requested);
  if (scopes.length === 0) {
    // The client's API scopes that need no user: a client may also have registered the OpenID scopes, for its users.
    const defaults = client.scopes.filter((scope) => isScope(scope) && !needsUser(scope));
    if (defaults.length === 0) throw new InvalidScope('this client has no scope that works without a user; client_credentials tokens cannot see orders');
    return formatScope(defaults);
  }
  if (scopes.some((scope) => !isSupportedScope(scope))) {
    throw new InvalidScope('the scope names a scope this server does not know');
  }
  // openid, profile, email and offline_access speak of a user, as orders do.
  const userScopes = scopes.filter((scope) => needsUser(scope) || isIdentityScope(scope));
  if (userScopes.length) {
    throw new InvalidScope(`${userScopes.join(' ')} needs a user, and a client_credentials token acts for no user`);
  }
  const notAllowed = scopes.filter((scope) => !client.scopes.includes(scope));
  if (notAllowed.length) throw new InvalidScope(`this client may not request ${notAllowed.join(' ')}`);
  return formatScope(scopes);
}

export async function handler({ oauth, client, params, req, dpop }: GrantRequest): Promise<TokenResponse> {
  // Registration refuses client_credentials to public clients; this holds even if a row says otherwise.
  if (client.isPublic) throw new UnauthorizedClient('a public client cannot use client_credentials');
  const scope = machineScope(client, params.get('scope'));
  // RFC 8707 §2: any resource this server issues tokens for, external ones included; none gives the default audience.
  const audience = oauth.resources.resolve(params.getAll('resource'));
  const grantId = await oauth.clientGrants.create(client.id, scope);
  // The client was deleted after authenticating (the client cache is a few seconds behind).
  if (grantId === undefined) {
    // Answered as the authentication failure it is: 401 with a challenge when the client used the Authorization header.
    throw new InvalidClient('client authentication failed', { viaAuthorizationHeader: req.headers.authorization !== undefined });
  }
  oauth.events(req, 'client_credentials_issued', { clientId: client.id, grantId });
  return tokenResponse(oauth, client, { grantId, userId: null, scope, audience }, undefined, dpop);
}
