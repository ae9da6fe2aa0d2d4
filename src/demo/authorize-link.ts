/** The demo's /authorize link; the PKCE verifier is kept in memory by `state` for the callback page's curl command. */
import { createHash } from 'node:crypto';
import { randomToken } from '../crypto/secrets.js';
import { ALL_SCOPES } from '../oauth/scopes.js';
import { DEMO_CLIENT_ID, demoRedirectUri } from './seed.js';

const MAX_REMEMBERED = 100;
export const demoVerifiers = new Map<string, string>();

export function demoAuthorizeLink(issuer: string): string {
  const state = randomToken(12);
  const verifier = randomToken(32);
  if (demoVerifiers.size >= MAX_REMEMBERED) demoVerifiers.delete(demoVerifiers.keys().next().value!);
  demoVerifiers.set(state, verifier);
  const url = new URL(`${issuer}/authorize`);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: DEMO_CLIENT_ID,
    redirect_uri: demoRedirectUri(issuer),
    scope: ALL_SCOPES.join(' '),
    state,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  }).toString();
  return url.href;
}
