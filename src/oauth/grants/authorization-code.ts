/**
 * RFC 6749 §4.1.3, RFC 7636 §4.6. The redirect URI and PKCE verifier are checked after the atomic redemption, so a
 * failed attempt still uses the code up; a `resource` (RFC 8707) is checked before it, as it may be a mere mistake that
 * a retry corrects. A code presented again by its own client revokes its whole grant (§4.1.2).
 */
import { InvalidGrant } from '../errors.js';
import { verifyCodeVerifier } from '../pkce.js';
import { refreshTokenAllowed, type NewRefreshToken, type RedeemedCode } from '../stores/codes.js';
import { parseScope } from '../scopes.js';
import { redirectUriMatches, type Client } from '../stores/clients.js';
import { issuesRefreshTokens, refreshTokenJkt, refuseResourcesOutsideGrant, requestedAudience, tokenResponse, type GrantRequest, type TokenResponse } from './grant.js';
import type { DpopProof } from '../../tokens/dpop.js';

export const grantType = 'authorization_code';

export const parameters = ['code', 'redirect_uri', 'code_verifier'] as const;

async function redeem({ oauth, client, req }: GrantRequest, code: string, refreshToken?: NewRefreshToken): Promise<RedeemedCode> {
  const redeemed = await oauth.codes.redeem(code, client.id, refreshToken);
  if (redeemed) return redeemed;
  const rejection = await oauth.codes.diagnose(code, client.id);
  switch (rejection.reason) {
    case 'replayed':
      await oauth.revocations.revokeGrant(rejection.grantId);
      oauth.events(req, 'code_replayed', { clientId: client.id, userId: rejection.userId, grantId: rejection.grantId });
      throw new InvalidGrant('the authorization code has already been used; any tokens issued from it are revoked');
    case 'client_mismatch':
      oauth.events(req, 'code_rejected', { clientId: client.id, userId: rejection.userId, reason: 'client_mismatch' });
      // Worded like an unknown code: the caller learns nothing about another client's codes.
      throw new InvalidGrant('the authorization code is not valid');
    case 'expired':
      oauth.events(req, 'code_rejected', { clientId: client.id, userId: rejection.userId, reason: 'expired' });
      throw new InvalidGrant('the authorization code has expired');
    case 'grant_revoked':
      throw new InvalidGrant('the authorization behind this code has been revoked');
    case 'unknown':
      throw new InvalidGrant('the authorization code is not valid');
  }
}

function checkRedirectUri(client: Client, redeemed: RedeemedCode, redirectUri: string | undefined): void {
  if (redeemed.redirectUri !== null) {
    if (redirectUri === undefined) throw new InvalidGrant('redirect_uri is required: the authorization request sent one');
    if (redirectUri !== redeemed.redirectUri) throw new InvalidGrant('redirect_uri does not match the authorization request');
  } else if (redirectUri !== undefined && !(client.redirectUris.length === 1 && redirectUriMatches(client.redirectUris[0]!, redirectUri))) {
    throw new InvalidGrant('redirect_uri does not match the authorization request');
  }
}

function checkPkce(client: Client, redeemed: RedeemedCode, verifier: string | undefined): void {
  if (redeemed.codeChallenge === null) {
    // RFC 9700 §4.8.2: a verifier for a code issued without a challenge is a downgrade attempt.
    if (verifier !== undefined) throw new InvalidGrant('code_verifier was sent, but the authorization request had no code_challenge');
    if (client.isPublic) throw new InvalidGrant('PKCE is required for this client');
    return;
  }
  if (verifier === undefined) throw new InvalidGrant('code_verifier is required: the authorization request sent a code_challenge');
  if (!verifyCodeVerifier(verifier, redeemed.codeChallenge, redeemed.codeChallengeMethod)) {
    throw new InvalidGrant('code_verifier does not match the code_challenge');
  }
}

/** RFC 9449 §10: a code bound with `dpop_jkt` at /authorize is redeemed only with a proof of that key. */
function checkDpopBinding(redeemed: RedeemedCode, dpop: DpopProof | undefined): void {
  if (redeemed.dpopJkt === null) return;
  if (!dpop) throw new InvalidGrant('a DPoP proof is required: the authorization request sent dpop_jkt');
  if (dpop.jkt !== redeemed.dpopJkt) throw new InvalidGrant('the DPoP proof key does not match the dpop_jkt of the authorization request');
}

export async function handler(request: GrantRequest): Promise<TokenResponse> {
  const { oauth, client, params, req, dpop } = request;
  const code = params.require('code');
  await refuseResourcesOutsideGrant(oauth, params, () => oauth.codes.grantedResources(code, client.id));
  // The refresh token is stored by the redeeming statement itself; it is handed out only if the
  // checks below pass, and deleted otherwise.
  const refreshToken = issuesRefreshTokens(client) ? oauth.refreshTokens.mint(refreshTokenJkt(client, dpop)) : undefined;
  const redeemed = await redeem(request, code, refreshToken);
  let audience: string[];
  try {
    checkRedirectUri(client, redeemed, params.get('redirect_uri'));
    checkPkce(client, redeemed, params.get('code_verifier'));
    checkDpopBinding(redeemed, dpop);
    // Already checked before redeeming; the grant's resources do not change, so this only computes the audience.
    audience = requestedAudience(oauth, params, redeemed.resources);
  } catch (error) {
    if (refreshToken) await oauth.refreshTokens.discard(refreshToken.token);
    throw error;
  }

  const grant = { grantId: redeemed.grantId, userId: redeemed.userId, scope: redeemed.scope, audience };
  oauth.events(req, 'code_redeemed', { clientId: client.id, userId: redeemed.userId, grantId: redeemed.grantId });
  // The redeeming statement stored the refresh token only when §11 allows one (see refreshTokenAllowed).
  const issuedRefreshToken = refreshToken && refreshTokenAllowed(parseScope(redeemed.scope)) ? refreshToken.token : undefined;
  return tokenResponse(oauth, client, grant, issuedRefreshToken, dpop, { authTime: redeemed.authTime, nonce: redeemed.nonce, sid: redeemed.sid });
}
