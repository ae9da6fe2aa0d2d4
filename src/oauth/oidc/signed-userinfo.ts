/**
 * Signed UserInfo responses (OIDC Core §5.3.2): a client that registered `userinfo_signed_response_alg` gets the claims
 * as a JWT signed with our current key of that algorithm, carrying `iss` and `aud` so it cannot be replayed to another
 * client.
 */
import type { OAuthContext } from '../context.js';
import { isSigningAlg } from '../../tokens/signing-keys.js';

export const USERINFO_JWT_CONTENT_TYPE = 'application/jwt';

export async function signUserinfo(
  oauth: Pick<OAuthContext, 'issuer' | 'keys'>,
  client: { id: string; userinfoSignedResponseAlg: string | null },
  claims: Record<string, unknown>,
): Promise<string> {
  // Both ways of registering check the value, so another one was written by hand: a server fault, not the client's.
  if (!isSigningAlg(client.userinfoSignedResponseAlg)) throw new Error(`client ${client.id} has an unsupported userinfo_signed_response_alg`);
  const key = await oauth.keys.signingKey(client.userinfoSignedResponseAlg);
  return key.sign({ ...claims, iss: oauth.issuer, aud: client.id, iat: Math.floor(Date.now() / 1000) }, 'JWT');
}
