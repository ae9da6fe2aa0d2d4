/**
 * Signed UserInfo responses (OIDC Core §5.3.2): a client that registered `userinfo_signed_response_alg` gets the claims
 * as a JWT signed with the ID Tokens' key, carrying `iss` and `aud` so it cannot be replayed to another client.
 */
import type { OAuthContext } from '../context.js';
import { SIGNING_ALG } from '../../tokens/signing-keys.js';

/** Only the algorithm the ID Tokens use: one key set, one algorithm to keep. */
export const USERINFO_SIGNING_ALGS = [SIGNING_ALG] as const;
export type UserinfoSigningAlg = (typeof USERINFO_SIGNING_ALGS)[number];

export const USERINFO_JWT_CONTENT_TYPE = 'application/jwt';

export function isUserinfoSigningAlg(value: unknown): value is UserinfoSigningAlg {
  return (USERINFO_SIGNING_ALGS as readonly unknown[]).includes(value);
}

export async function signUserinfo(oauth: Pick<OAuthContext, 'issuer' | 'keys'>, clientId: string, claims: Record<string, unknown>): Promise<string> {
  const key = await oauth.keys.signingKey();
  return key.sign({ ...claims, iss: oauth.issuer, aud: clientId, iat: Math.floor(Date.now() / 1000) }, 'JWT');
}
