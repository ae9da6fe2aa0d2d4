/**
 * Rotation (RFC 9700 §4.14.2): a retired token presented again means two parties hold the family, so the grant is
 * revoked, unless it is a retry within REFRESH_TOKEN_REUSE_GRACE, which gets the same successor back.
 */
import { InvalidGrant, InvalidScope, OAuthError } from '../errors.js';
import { formatScope, parseScope } from '../scopes.js';
import { refreshTokenJkt, requestedAudience, tokenResponse, type GrantRequest, type TokenResponse } from './grant.js';

export const grantType = 'refresh_token';

export const parameters = ['refresh_token', 'scope'] as const;
// `resource` may repeat (RFC 8707 §2), so it is not listed for the repetition check.

interface Wanted {
  scope: string | undefined;
  audience: string[] | undefined;
  /** Why a retired token's scope or resource was refused: given only if reuse detection does not answer first. */
  refusal?: OAuthError;
}

/** Never more than the grant (RFC 6749 §6, RFC 8707 §2.2); checked before rotating, so a refusal keeps the token. */
async function narrowed(request: GrantRequest, refreshToken: string): Promise<Wanted> {
  const { oauth, client, params } = request;
  const scopes = parseScope(params.get('scope'));
  const resources = params.getAll('resource');
  if (scopes.length === 0 && resources.length === 0) return { scope: undefined, audience: undefined };
  const current = await oauth.refreshTokens.scopeOf(refreshToken);
  if (!current || current.clientId !== client.id) throw new InvalidGrant('the refresh token is not valid');
  try {
    const audience = resources.length === 0 ? undefined : requestedAudience(oauth, params, current.resources);
    if (scopes.length === 0) return { scope: undefined, audience };
    const granted = new Set(parseScope(current.scope));
    const excess = scopes.filter((scope) => !granted.has(scope));
    if (excess.length) throw new InvalidScope('the scope asks for more than the grant allows');
    return { scope: formatScope(scopes), audience };
  } catch (error) {
    // RFC 9700 §4.14.2: a retired token goes on to reuse detection, which a wider scope or a bad resource must not skip.
    if (current.consumed && error instanceof OAuthError) return { scope: undefined, audience: undefined, refusal: error };
    throw error;
  }
}

async function refuse(
  { oauth, client, req, dpop }: GrantRequest,
  refreshToken: string,
  { scope, audience, refusal }: Wanted,
): Promise<TokenResponse> {
  const grace = oauth.refreshTokenReuseGrace;
  const record = await oauth.refreshTokens.find(refreshToken, grace);
  if (!record) throw new InvalidGrant('the refresh token is not valid');
  const fields = { clientId: client.id, userId: record.userId, grantId: record.grantId };
  if (record.clientId !== client.id) {
    oauth.events(req, 'refresh_token_rejected', { ...fields, reason: 'client_mismatch' });
    throw new InvalidGrant('the refresh token is not valid');
  }
  if (record.grantRevoked) throw new InvalidGrant('the refresh token has been revoked');
  // Checked before reuse detection: without the bound key a token is worthless, so presenting it
  // must not be able to revoke its family.
  if (record.dpopJkt !== null && record.dpopJkt !== dpop?.jkt) {
    oauth.events(req, 'refresh_token_rejected', { ...fields, reason: 'dpop_key_mismatch' });
    throw new InvalidGrant(dpop ? 'the refresh token is bound to another DPoP key' : 'the refresh token is DPoP-bound: send a DPoP proof of its key');
  }
  if (record.consumed) {
    // Within the grace window it may be the rightful client's retry, so its own refusal stands and nothing is revoked.
    if (record.withinGrace && refusal) throw refusal;
    const successor = record.withinGrace ? await oauth.refreshTokens.liveSuccessor(refreshToken) : undefined;
    if (successor !== undefined) {
      oauth.events(req, 'refresh_token_reuse_within_grace', fields);
      return tokenResponse(oauth, client, { ...record, scope: scope ?? record.scope, audience: audience ?? record.resources }, successor, dpop, { authTime: record.authTime, nonce: null, sid: record.sid });
    }
    await oauth.revocations.revokeGrant(record.grantId);
    oauth.events(req, 'refresh_token_reuse_detected', fields);
    throw new InvalidGrant('the refresh token has already been used; every token of its grant is now revoked');
  }
  if (refusal) throw refusal;
  if (record.expired) throw new InvalidGrant('the refresh token has expired');
  throw new InvalidGrant('the refresh token is not valid');
}

export async function handler(request: GrantRequest): Promise<TokenResponse> {
  const { oauth, client, params, req, dpop } = request;
  const refreshToken = params.require('refresh_token');
  const wanted = await narrowed(request, refreshToken);
  // RFC 9449 §5: a public client's refresh token issued in answer to a proof is bound to its key, even if its
  // predecessor was not.
  const bindSuccessor = refreshTokenJkt(client, dpop) !== null;
  const rotated = await oauth.refreshTokens.rotate(refreshToken, client.id, { dpopJkt: dpop?.jkt, bindSuccessor });
  if (!rotated) return refuse(request, refreshToken, wanted);
  oauth.events(req, 'refresh_token_rotated', { clientId: client.id, userId: rotated.userId, grantId: rotated.grantId });
  const audience = wanted.audience ?? rotated.resources;
  return tokenResponse(oauth, client, { ...rotated, scope: wanted.scope ?? rotated.scope, audience }, rotated.refreshToken, dpop, {
    authTime: rotated.authTime,
    nonce: null,
    sid: rotated.sid,
  });
}
