/**
 * The OpenID `sid` (Front-Channel and Back-Channel Logout 1.0): one value per browser session and client, an HMAC of
 * the session cookie's random id under a key derived from the session secret. It is not guessable, does not reveal the
 * cookie's id, and differs per client, so two clients cannot correlate a user through it (pairwise clients included),
 * as node-oidc-provider's per-client `sid` does. Logout recomputes it from the cookie, so nothing is stored per client.
 */
import { hmacSha256 } from '../../crypto/secrets.js';

export class SessionIds {
  private readonly key: string;

  constructor(sessionSecret: string) {
    this.key = hmacSha256(sessionSecret, 'fieldgate oidc sid');
  }

  /** `browserSessionId` is BrowserSession.sid, replaced at every sign-in. */
  forClient(clientId: string, browserSessionId: string): string {
    return hmacSha256(this.key, `${clientId}\n${browserSessionId}`);
  }
}
