/**
 * `grant_type=refresh_token` (RFC 6749 §6) with rotation (RFC 9700 §4.14.2): every use retires
 * the presented token and returns a successor. A retired token presented again means two
 * parties hold the family, so the whole grant is revoked — unless REFRESH_TOKEN_REUSE_GRACE
 * is set and this is a retry of the token retired last, within that many seconds (a lost
 * response, two tabs): that retry gets a new access token and the same successor refresh
 * token the first use got, so the family never has more than one live refresh token.
 */
import { InvalidGrant, InvalidScope } from '../errors.js';
import { formatScope, parseScope } from '../scopes.js';
import { tokenResponse, type GrantRequest, type TokenResponse } from './grant.js';

export const grantType = 'refresh_token';

export const parameters = ['refresh_token', 'scope'] as const;

/** The scope of the new access token: as asked, but never more than the grant (§6). */
async function narrowedScope({ oauth, client }: GrantRequest, refreshToken: string, requested: string | undefined): Promise<string | undefined> {
  const scopes = parseScope(requested);
  if (scopes.length === 0) return undefined;
  // Checked before rotating, so a refused scope leaves the refresh token usable.
  const current = await oauth.refreshTokens.scopeOf(refreshToken);
  if (!current || current.clientId !== client.id) throw new InvalidGrant('the refresh token is not valid');
  const granted = new Set(parseScope(current.scope));
  const excess = scopes.filter((scope) => !granted.has(scope));
  if (excess.length) throw new InvalidScope('the scope asks for more than the grant allows');
  return formatScope(scopes);
}

/** Explains (and reacts to) a token that could not be rotated. Always throws. */
async function refuse({ oauth, client, req, dpop }: GrantRequest, refreshToken: string, scope: string | undefined): Promise<TokenResponse> {
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
    const successor = record.withinGrace ? await oauth.refreshTokens.liveSuccessor(refreshToken) : undefined;
    if (successor !== undefined) {
      oauth.events(req, 'refresh_token_reuse_within_grace', fields);
      return tokenResponse(oauth, { ...record, scope: scope ?? record.scope }, successor, dpop, { client, authTime: record.authTime, nonce: null });
    }
    await oauth.revocations.revokeGrant(record.grantId);
    oauth.events(req, 'refresh_token_reuse_detected', fields);
    throw new InvalidGrant('the refresh token has already been used; every token of its grant is now revoked');
  }
  if (record.expired) throw new InvalidGrant('the refresh token has expired');
  throw new InvalidGrant('the refresh token is not valid');
}

export async function handler(request: GrantRequest): Promise<TokenResponse> {
  const { oauth, client, params, req, dpop } = request;
  const refreshToken = params.require('refresh_token');
  const scope = await narrowedScope(request, refreshToken, params.get('scope'));
  const rotated = await oauth.refreshTokens.rotate(refreshToken, client.id, dpop?.jkt);
  if (!rotated) return refuse(request, refreshToken, scope);
  oauth.events(req, 'refresh_token_rotated', { clientId: client.id, userId: rotated.userId, grantId: rotated.grantId });
  return tokenResponse(oauth, { ...rotated, scope: scope ?? rotated.scope }, rotated.refreshToken, dpop, {
    client,
    authTime: rotated.authTime,
    nonce: null,
  });
}
