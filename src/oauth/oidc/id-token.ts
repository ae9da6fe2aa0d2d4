/**
 * ID Tokens (OIDC Core §2, §3.1.3.6), signed with the key of the client's `id_token_signed_response_alg` (ES256 unless
 * it registered RS256; see src/tokens/signing-keys.ts). They carry the scope's profile and email
 * claims too, so an app that only reads the ID Token needs no userinfo call (§5.4 allows either).
 */
import { createHash } from 'node:crypto';
import { compactVerify, decodeProtectedHeader } from 'jose';
import type { OAuthContext } from '../context.js';
import { isSigningAlg, SIGNING_ALG, type SigningAlg } from '../../tokens/signing-keys.js';
import type { Client } from '../stores/clients.js';
import { parseScope } from '../scopes.js';
import { userClaims } from './claims.js';
import { subjectFor } from './subject.js';

export const ID_TOKEN_TYP = 'JWT';

/**
 * The algorithm of a client's ID Tokens (and Logout Tokens). OIDC Registration §2 defaults to RS256; ours is ES256,
 * what every client got before it could choose.
 */
export function idTokenAlg(client: { idTokenSignedResponseAlg?: string | null }): SigningAlg {
  const alg = client.idTokenSignedResponseAlg;
  return isSigningAlg(alg) ? alg : SIGNING_ALG;
}

/** §3.1.3.6: base64url of the left half of SHA-256 of the access token's ASCII. */
export function atHash(accessToken: string): string {
  return createHash('sha256').update(accessToken, 'ascii').digest().subarray(0, 16).toString('base64url');
}

export interface IdTokenRequest {
  client: Client;
  userId: number;
  scope: string;
  /**
   * Seconds since the epoch; null for grants made before auth_time was stored. The claim is then left out (it is
   * optional unless max_age was sent, and max_age makes such a session sign in again): now would claim a sign-in that
   * did not happen, and change at every refresh (§12.2).
   */
  authTime: number | null;
  nonce: string | null;
  /** Front-/Back-Channel Logout `sid` (see session-id.ts). */
  sid: string | null;
  accessToken: string;
}

/** The signed ID Token, or undefined when the account no longer exists. */
export async function issueIdToken(oauth: OAuthContext, request: IdTokenRequest): Promise<string | undefined> {
  const user = await oauth.users.find(request.userId);
  if (!user) return undefined;
  const key = await oauth.keys.signingKey(idTokenAlg(request.client));
  const now = Math.floor(Date.now() / 1000);
  const claims: Record<string, unknown> = {
    iss: oauth.issuer,
    sub: subjectFor(request.client, request.userId, oauth.pairwiseSecret),
    aud: request.client.id,
    exp: now + oauth.accessTokenTtl,
    iat: now,
    ...(request.authTime === null ? {} : { auth_time: request.authTime }),
    ...(request.nonce === null ? {} : { nonce: request.nonce }),
    ...(request.sid === null ? {} : { sid: request.sid }),
    at_hash: atHash(request.accessToken),
    ...userClaims(user, new Set(parseScope(request.scope))),
  };
  return key.sign(claims, ID_TOKEN_TYP);
}

/**
 * Reads an `id_token_hint` (RP-Initiated Logout §2): signature and issuer are checked, but an expired token is accepted,
 * since the hint is often old by the time a user signs out. Undefined when it is not an ID Token this server signed; a
 * failure to read our keys is thrown, so that an outage is not blamed on the hint.
 */
export async function readIdTokenHint(oauth: OAuthContext, token: string): Promise<{ clientId: string; sub: string } | undefined> {
  let header: ReturnType<typeof decodeProtectedHeader>;
  try {
    header = decodeProtectedHeader(token);
  } catch {
    return undefined;
  }
  if ((header.typ !== undefined && header.typ !== ID_TOKEN_TYP) || typeof header.kid !== 'string') return undefined;
  const key = await oauth.keys.verificationKey(header.kid);
  if (!key) return undefined;
  let claims: Record<string, unknown>;
  try {
    // Either of our keys signed it (a client's algorithm may have changed since); each verifies only its own algorithm.
    const { payload } = await compactVerify(token, key.publicKey, { algorithms: [key.alg] });
    claims = JSON.parse(new TextDecoder().decode(payload)) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (typeof claims !== 'object' || claims === null) return undefined;
  const aud = Array.isArray(claims.aud) && claims.aud.length === 1 ? claims.aud[0] : claims.aud;
  if (claims.iss !== oauth.issuer || typeof aud !== 'string' || typeof claims.sub !== 'string') return undefined;
  // Core §2 requires exp and iat of an ID Token; a signed UserInfo answer (same key, typ and iss/aud/sub) has no exp.
  if (typeof claims.exp !== 'number' || typeof claims.iat !== 'number') return undefined;
  return { clientId: aud, sub: claims.sub };
}
