/**
 * RFC 7009: a refresh token is revoked with its whole grant (§2.1), an access token alone. Unknown tokens get 200
 * (§2.2); another client's is refused with invalid_request and left alone.
 */
import type express from 'express';
import type { RequestHandler } from 'express';
import type { Client } from '../stores/clients.js';
import { authenticatedClient, clientAuthentication } from '../client-auth.js';
import type { OAuthContext } from '../context.js';
import { InvalidRequest, InvalidToken } from '../errors.js';
import { noStore } from '../json-response.js';
import { bodyParameters } from '../params.js';
import { createPostEndpoint } from './post-endpoint.js';

export const REVOKE_PARAMETERS = ['token', 'token_type_hint'] as const;

/** Access tokens are JWTs (three dot-separated parts); refresh tokens are opaque base64url. */
export function looksLikeJwt(token: string): boolean {
  return token.split('.').length === 3;
}

function notYours(): InvalidRequest {
  return new InvalidRequest('the token was not issued to this client');
}

async function revokeAccessToken(oauth: OAuthContext, req: express.Request, client: Client, token: string): Promise<void> {
  let principal;
  try {
    principal = await oauth.accessTokens.verifySignature(token);
  } catch (error) {
    if (error instanceof InvalidToken) return; // expired, malformed or not ours: nothing to revoke
    throw error;
  }
  if (principal.clientId !== client.id) throw notYours();
  await oauth.revocations.revokeAccessToken(principal.jti, principal.expiresAt);
  oauth.events(req, 'token_revoked', { clientId: client.id, userId: principal.userId ?? undefined, grantId: principal.grantId, tokenType: 'access_token' });
}

async function revokeRefreshToken(oauth: OAuthContext, req: express.Request, client: Client, token: string): Promise<void> {
  const record = await oauth.refreshTokens.find(token);
  if (!record) return;
  if (record.clientId !== client.id) throw notYours();
  await oauth.revocations.revokeGrant(record.grantId);
  oauth.events(req, 'token_revoked', { clientId: client.id, userId: record.userId, grantId: record.grantId, tokenType: 'refresh_token' });
}

function revokeHandler(oauth: OAuthContext): RequestHandler {
  return async function revokeToken(req, res) {
    const params = bodyParameters(res);
    params.rejectRepeated(REVOKE_PARAMETERS);
    const token = params.require('token');
    const client = authenticatedClient(res);
    // token_type_hint only orders the search (§2.1); the token's shape already tells us which it is.
    if (looksLikeJwt(token)) await revokeAccessToken(oauth, req, client, token);
    else await revokeRefreshToken(oauth, req, client, token);
    noStore(res);
    res.status(200).end();
  };
}

export function createRevocationEndpoint(oauth: OAuthContext, cors: RequestHandler): RequestHandler {
  return createPostEndpoint({ path: '/revoke', cors, logger: oauth.logger, steps: [clientAuthentication(oauth), revokeHandler(oauth)] });
}
