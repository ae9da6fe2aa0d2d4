/**
 * The shape every grant type module exports, and the token response they share
 * (RFC 6749 §5.1). A grant module is `{ grantType, parameters, handler }`; the token endpoint
 * finds it by `grant_type`.
 */
import type { Request } from 'express';
import type { Client } from '../stores/clients.js';
import type { OAuthContext } from '../context.js';
import type { Parameters } from '../params.js';

export interface GrantRequest {
  oauth: OAuthContext;
  client: Client;
  params: Parameters;
  req: Request;
}

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token?: string;
  scope: string;
}

export interface Grant {
  grantType: string;
  /** Body parameters the grant reads (checked for repetition before the handler runs). */
  parameters: readonly string[];
  handler(request: GrantRequest): Promise<TokenResponse>;
}

/** Signs the access token of one grant and shapes the response. */
export async function tokenResponse(
  oauth: OAuthContext,
  grant: { grantId: string; userId: number | null; clientId: string; scope: string },
  refreshToken: string | undefined,
): Promise<TokenResponse> {
  const accessToken = await oauth.runtime.accessTokens.issue(grant);
  return {
    access_token: accessToken.token,
    token_type: 'Bearer',
    expires_in: accessToken.expiresIn,
    ...(refreshToken === undefined ? {} : { refresh_token: refreshToken }),
    scope: grant.scope,
  };
}

/** Whether the client is registered for refresh tokens. */
export function issuesRefreshTokens(client: Client): boolean {
  return client.grantTypes.includes('refresh_token');
}
