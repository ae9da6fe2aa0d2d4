/**
 * OpenID Connect Front-Channel Logout 1.0: the signed-out page loads each allowed client's `frontchannel_logout_uri` in
 * an iframe, with `iss` and the client's `sid` of the ending session when it registered
 * frontchannel_logout_session_required (§2). The page's CSP allows exactly these frames' origins.
 */
import type { OAuthContext } from '../context.js';

export interface FrontchannelFrame {
  src: string;
  origin: string;
}

export async function frontchannelLogoutFrames(
  oauth: Pick<OAuthContext, 'consents' | 'issuer' | 'sessionIds'>,
  userId: number,
  browserSessionId: string,
): Promise<FrontchannelFrame[]> {
  const targets = await oauth.consents.frontchannelLogoutTargets(userId);
  return targets.map((target) => {
    // Registration checked the URI (https or loopback http, no fragment); its own query is kept (§2 allows one).
    const url = new URL(target.frontchannel_logout_uri);
    if (target.frontchannel_logout_session_required) {
      url.searchParams.append('iss', oauth.issuer);
      url.searchParams.append('sid', oauth.sessionIds.forClient(target.id, browserSessionId));
    }
    return { src: url.href, origin: url.origin };
  });
}
