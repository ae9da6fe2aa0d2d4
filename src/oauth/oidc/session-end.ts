/**
 * Telling an ended browser session's clients, whatever ended it (logout, "Switch account", another account signing in
 * over it, "Sign out everywhere"). Only the request that recorded the end sends the back-channel logout tokens, so
 * concurrent sign-outs of one session notify once; each such request gets the front-channel frames, for the page its
 * browser shows next.
 */
import type { Request } from 'express';
import type { OAuthContext } from '../context.js';
import type { SignedOutSession } from '../browser/session.js';
import { notifyBackchannelLogout } from './backchannel.js';
import { frontchannelLogoutFrames, type FrontchannelFrame } from './frontchannel.js';

/** Why the session ended, in the `logout` security event; a plain logout has none. */
export type SessionEndReason = 'switch_account' | 'other_account_signed_in' | 'sign_out_everywhere';

export async function announceSessionEnd(
  oauth: OAuthContext,
  req: Request,
  ended: SignedOutSession,
  details: { clientId?: string | undefined; reason?: SessionEndReason } = {},
): Promise<FrontchannelFrame[]> {
  if (ended.first) {
    oauth.events(req, 'logout', { clientId: details.clientId, userId: ended.userId, reason: details.reason });
    void notifyBackchannelLogout(oauth, ended.userId, { browserSessionId: ended.sid, everywhere: details.reason === 'sign_out_everywhere' });
  }
  return frontchannelLogoutFrames(oauth, ended.userId, ended.sid);
}
