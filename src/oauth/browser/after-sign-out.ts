/**
 * Where the browser goes after a form ended its session (as "Switch account", another account signing in over it, or
 * "Sign out everywhere" do): its clients are told, and when some of them want to hear it in this browser (front-channel
 * logout), the signed-out page loads their frames before moving on.
 */
import type { Request, Response } from 'express';
import type { BrowserContext } from './flow.js';
import type { SignedOutSession } from './session.js';
import { announceSessionEnd, type SessionEndReason } from '../oidc/session-end.js';
import { redirectTo } from '../authorize-response.js';
import { sendPage } from './pages/layout.js';
import { signedOutPage } from './pages/logout.js';

export interface AfterSignOut {
  reason: SessionEndReason;
  clientId?: string | undefined;
  /** The page's heading and link label, for a sign-in that signed another account out. */
  heading?: string;
  continueLabel?: string;
}

/** A 303 to `next` when no session ended or no client wants frames; else the signed-out page that goes on to `next`. */
export async function continueAfterSignOut(
  browser: BrowserContext,
  req: Request,
  res: Response,
  ended: SignedOutSession | undefined,
  next: string,
  options: AfterSignOut,
): Promise<void> {
  const frames = ended ? await announceSessionEnd(browser.oauth, req, ended, { clientId: options.clientId, reason: options.reason }) : [];
  if (frames.length === 0) {
    redirectTo(res, next, 303);
    return;
  }
  const page = signedOutPage(true, browser.oauth.issuer, { frames, continueTo: next, heading: options.heading, continueLabel: options.continueLabel });
  sendPage(res, page, { frameOrigins: frames.map((frame) => frame.origin) });
}
