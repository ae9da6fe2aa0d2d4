/**
 * The shape every grant type module exports, and the token response they share
 * (RFC 6749 §5.1). A grant module is `{ grantType, parameters, handler }`; the token endpoint
 * finds it by `grant_type`.
 */
import type { Request } from 'express';
import type { Client } from '../stores/clients.js';
import type { OAuthContext } from '../context.js';
import type { Parameters } from '../params.js';
import type { DpopProof } from '../../tokens/dpop.js';
import { issueIdToken } from '../oidc/id-token.js';
import { parseScope } from '../scopes.js';

export interface GrantRequest {
  oauth: OAuthContext;
  client: Client;
  params: Parameters;
  req: Request;
  /** The verified DPoP proof of the request (RFC 9449 §5), if it sent one. */
  dpop: DpopProof | undefined;
}

export interface TokenResponse {
  access_token: string;
  /** `DPoP` when the access token is bound to the proof's key (RFC 9449 §5.1). */
  token_type: 'Bearer' | 'DPoP';
  expires_in: number;
  refresh_token?: string;
  scope: string;
  /** OIDC: when the scope includes `openid`. */
  id_token?: string;
}

/** What an ID Token needs beyond the grant: the full client, and the sign-in it stems from. */
export interface IdTokenContext {
  client: Client;
  authTime: number | null;
  /** Only on the code exchange; a refreshed ID Token carries none (OIDC Core §12.2). */
  nonce: string | null;
}

export interface Grant {
  grantType: string;
  /** Body parameters the grant reads (checked for repetition before the handler runs). */
  parameters: readonly string[];
  handler(request: GrantRequest): Promise<TokenResponse>;
}

/** Signs the access token of one grant — bound to the DPoP key when there is a proof — and shapes the response. */
export async function tokenResponse(
  oauth: OAuthContext,
  grant: { grantId: string; userId: number | null; clientId: string; scope: string; audience?: readonly string[] },
  refreshToken: string | undefined,
  dpop: DpopProof | undefined,
  oidc?: IdTokenContext,
): Promise<TokenResponse> {
  const accessToken = await oauth.accessTokens.issue({ ...grant, ...(dpop && { jkt: dpop.jkt }) });
  const idToken =
    oidc && grant.userId !== null && parseScope(grant.scope).includes('openid')
      ? await issueIdToken(oauth, { ...oidc, userId: grant.userId, scope: grant.scope, accessToken: accessToken.token })
      : undefined;
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
 * The key a new refresh token is bound to: a public client's refresh tokens are bound to the
 * proof's key (RFC 9449 §5); a confidential client's are already sender-constrained by its
 * authentication, and each refresh may bind its access token to a new key.
 */
export function refreshTokenJkt(client: Client, dpop: DpopProof | undefined): string | null {
  return client.isPublic && dpop ? dpop.jkt : null;

}

/** RFC 8707 §2.2: the audience of this token request, within what the grant was authorized for. */
export function requestedAudience(oauth: OAuthContext, params: Parameters, grantResources: readonly string[]): string[] {
  return oauth.resources.narrow(grantResources, params.getAll('resource'));
}

/** Whether the client is registered for refresh tokens. */
export function issuesRefreshTokens(client: Client): boolean {
  return client.grantTypes.includes('refresh_token');
}
