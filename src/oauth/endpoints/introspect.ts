/**
 * RFC 7662: only an authenticated confidential client may call it (§2.1), for its own tokens; anything else is
 * `{"active": false}` and nothing more. Refresh tokens have no `token_type`: they are never presented to resource servers.
 */
import type { RequestHandler } from 'express';
import type { Client } from '../stores/clients.js';
import { authenticatedClient, clientAuthentication } from '../client-auth.js';
import type { OAuthContext } from '../context.js';
import { InvalidToken } from '../errors.js';
import { sendJson } from '../json-response.js';
import { bodyParameters } from '../params.js';
import { createPostEndpoint } from './post-endpoint.js';
import { looksLikeJwt, REVOKE_PARAMETERS } from './revoke.js';
import { formatScope } from '../scopes.js';
import { subjectFor } from '../oidc/subject.js';

type Introspection = { active: false } | ({ active: true } & Record<string, unknown>);

const INACTIVE = { active: false } as const;

const seconds = (date: Date) => Math.floor(date.getTime() / 1000);

async function introspectAccessToken(oauth: OAuthContext, client: Client, token: string): Promise<Introspection> {
  try {
    const principal = await oauth.accessTokens.verifySignature(token);
    if (principal.clientId !== client.id) return INACTIVE;
    // Not the per-instance revocation cache: a token revoked at another instance a moment ago is inactive here too.
    if (await oauth.revocations.isRevokedNow(principal.grantId, principal.jti)) return INACTIVE;
    return {
      active: true,
      scope: formatScope(principal.scopes),
      client_id: principal.clientId,
      // The token's own client is the caller, so a pairwise client sees its pairwise `sub` here too.
      sub: principal.userId === null ? principal.clientId : subjectFor(client, principal.userId, oauth.pairwiseSecret),
      exp: seconds(principal.expiresAt),
      iat: seconds(principal.issuedAt),
      iss: oauth.issuer,
      aud: principal.audience.length === 1 ? principal.audience[0] : principal.audience,
      jti: principal.jti,
      // RFC 9449 §6.2: a DPoP-bound token says so, with the key it is bound to.
      token_type: principal.jkt === undefined ? 'Bearer' : 'DPoP',
      ...(principal.jkt === undefined ? {} : { cnf: { jkt: principal.jkt } }),
    };
  } catch (error) {
    if (error instanceof InvalidToken) return INACTIVE;
    throw error;
  }
}

async function introspectRefreshToken(oauth: OAuthContext, client: Client, token: string): Promise<Introspection> {
  const record = await oauth.refreshTokens.find(token);
  if (!record || record.clientId !== client.id || record.consumed || record.expired || record.grantRevoked) return INACTIVE;
  return {
    active: true,
    scope: record.scope,
    client_id: record.clientId,
    sub: subjectFor(client, record.userId, oauth.pairwiseSecret),
    exp: seconds(record.expiresAt),
    iat: seconds(record.createdAt),
    iss: oauth.issuer,
  };
}

function introspectHandler(oauth: OAuthContext): RequestHandler {
  return async function introspectToken(_req, res) {
    const params = bodyParameters(res);
    params.rejectRepeated(REVOKE_PARAMETERS);
    const token = params.require('token');
    const client = authenticatedClient(res);
    const body = looksLikeJwt(token) ? await introspectAccessToken(oauth, client, token) : await introspectRefreshToken(oauth, client, token);
    sendJson(res, 200, body);
  };
}

export function createIntrospectionEndpoint(oauth: OAuthContext, cors: RequestHandler): RequestHandler {
  return createPostEndpoint({
    path: '/introspect',
    cors,
    logger: oauth.logger,
    steps: [clientAuthentication(oauth, { confidentialOnly: true }), introspectHandler(oauth)],
  });
}
