/**
 * The OpenID `sid` (Front-Channel and Back-Channel Logout 1.0): one value per browser session and client, an HMAC of
 * the session cookie's random id under a key derived from the session secret. It is not guessable, does not reveal the
 * cookie's id, and differs per client, so two clients cannot correlate a user through it (pairwise clients included),
 * as node-oidc-provider's per-client `sid` does. Logout recomputes it from the cookie, so nothing is stored per client.
 */
import { LRUCache } from 'lru-cache';
import { hmacSha256 } from '../../crypto/secrets.js';
import { POLICY } from '../../policy.js';

export class SessionIds {
  private readonly key: string;
  /** A browser authorizing a client again (every code flow of a signed-in user) asks for the same value. */
  private readonly known = new LRUCache<string, string>({
    max: POLICY.sessionIdEntries.value,
    memoMethod: (input) => hmacSha256(this.key, input),
  });

  constructor(sessionSecret: string) {
    this.key = hmacSha256(sessionSecret, 'fieldgate oidc sid');
  }

  /** `browserSessionId` is BrowserSession.sid, replaced at every sign-in. */
  forClient(clientId: string, browserSessionId: string): string {
    return this.known.memo(`${clientId}\n${browserSessionId}`);
  }
}
