/** Every grant module exports `{ grantType, parameters, handler }`; the token endpoint finds it by `grant_type`. */
import type { Request } from 'express';
import type { Client } from '../stores/clients.js';
import type { OAuthContext } from '../context.js';
import type { Parameters } from '../params.js';
import type { DpopProof } from '../../tokens/dpop.js';
import { issueIdToken } from '../oidc/id-token.js';
import { subjectFor } from '../oidc/subject.js';
import { parseScope } from '../scopes.js';
import { InvalidGrant } from '../errors.js';

export interface GrantRequest {
  oauth: OAuthContext;
  client: Client;
  params: Parameters;
  req: Request;
  dpop: DpopProof | undefined;
}

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer' | 'DPoP';
  expires_in: number;
  refresh_token?: string;
  scope: string;
  id_token?: string;
}

export interface IdTokenContext {
  authTime: number | null;
  /** Only on the code exchange; a refreshed ID Token carries none (OIDC Core §12.2). */
  nonce: string | null;
  /** The browser session's `sid` for this client, kept on the grant; null for grants made before it was stored. */
  sid: string | null;
}

export interface Grant {
  grantType: string;
  parameters: readonly string[];
  handler(request: GrantRequest): Promise<TokenResponse>;
}

/** Every token of a pairwise client names the user by the pairwise `sub`, the access token too (see oidc/subject.ts). */
export async function tokenResponse(
  oauth: OAuthContext,
  client: Client,
  grant: { grantId: string; userId: number | null; scope: string; audience?: readonly string[] },
  refreshToken: string | undefined,
  dpop: DpopProof | undefined,
  oidc?: IdTokenContext,
): Promise<TokenResponse> {
  const subject = grant.userId === null ? undefined : subjectFor(client, grant.userId, oauth.pairwiseSecret);
  const accessToken = await oauth.accessTokens.issue({
    ...grant,
    clientId: client.id,
    ...(subject === undefined ? {} : { subject }),
    ...(dpop && { jkt: dpop.jkt }),
  });
  const wantsIdToken = oidc !== undefined && grant.userId !== null && parseScope(grant.scope).includes('openid');
  const idToken = wantsIdToken ? await issueIdToken(oauth, { ...oidc, client, userId: grant.userId!, scope: grant.scope, accessToken: accessToken.token }) : undefined;
  // The account was deleted since the grant was redeemed, and its grant with it: tokens that no longer work, and no ID Token.
  if (wantsIdToken && idToken === undefined) throw new InvalidGrant('the account this authorization was for no longer exists');
  return {
    access_token: accessToken.token,
    token_type: dpop ? 'DPoP' : 'Bearer',
    expires_in: accessToken.expiresIn,
    ...(refreshToken === undefined ? {} : { refresh_token: refreshToken }),
    scope: grant.scope,
    ...(idToken === undefined ? {} : { id_token: idToken }),
  };
}

/**
 * A public client's refresh tokens are bound to the proof's key (RFC 9449 §5); a confidential client's are already
 * sender-constrained by its authentication, so each refresh may bind its access token to a new key.
 */
export function refreshTokenJkt(client: Client, dpop: DpopProof | undefined): string | null {
  return client.isPublic && dpop ? dpop.jkt : null;

}

export function requestedAudience(oauth: OAuthContext, params: Parameters, grantResources: readonly string[]): string[] {
  return oauth.resources.narrow(grantResources, params.getAll('resource'));
}

/**
 * RFC 8707 §2.2: a `resource` the server does not know, or one the authorization did not cover, is invalid_target —
 * refused before redeeming, so the corrected retry still has its code and is not taken for a replay. `granted` reads
 * what a code that may still be redeemed was authorized for; undefined (no such code) leaves the answer to the
 * redemption, so a replay naming a known resource is still detected. One naming an unknown resource is refused before
 * any code is looked at (it gets no token either way), as it was before this check.
 */
export async function refuseResourcesOutsideGrant(
  oauth: OAuthContext,
  params: Parameters,
  granted: () => Promise<readonly string[] | undefined>,
): Promise<void> {
  const requested = params.getAll('resource');
  if (requested.length === 0) return;
  oauth.resources.resolve(requested);
  const resources = await granted();
  if (resources !== undefined) oauth.resources.narrow(resources, requested);
}

export function issuesRefreshTokens(client: Client): boolean {
  return client.grantTypes.includes('refresh_token');
}
