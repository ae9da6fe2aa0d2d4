/**
 * `POST /authorize/login`. An unknown name and a wrong password get the same answer (an unknown name costs the same
 * scrypt), and so do locked-out real and unknown accounts.
 */
import type { Request, Response } from 'express';
import { authorizationUrl, continueAuthorization, formAuthorizationRequest, showLogin, type BrowserContext } from './flow.js';
import { continueAfterSignOut, type AfterSignOut } from './after-sign-out.js';
import { bodyParameters, type Parameters } from '../params.js';
import { PageError } from './pages/error.js';
import type { User } from '../stores/users.js';
import { signedInSession } from './session.js';

export const WRONG_CREDENTIALS = 'The username or password is incorrect.';
export const MAX_USERNAME_LENGTH = 256;

function lockedMessage(retryAfterSeconds: number): string {
  const minutes = Math.ceil(retryAfterSeconds / 60);
  return `Too many failed sign-in attempts. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`;
}

/** The CSRF check shared by both forms; a failure is a 403 page, never a redirect. */
export function requireCsrf(browser: BrowserContext, req: Request, formName: string): void {
  if (browser.csrf.isValid(req)) return;
  browser.oauth.events(req, 'csrf_rejected', { reason: formName });
  throw new PageError(
    403,
    'This form has expired',
    'The form was not sent from this sign-in page, or it expired. Go back to the application and start again.',
  );
}

/**
 * A sign-in form whose CSRF check fails only because it is stale: the browser has signed in since it was shown (in
 * another tab, or before a resubmission after Back), which changed the session id the token is bound to. Rather than
 * a "form has expired" page, such a form is sent on where a link could send it, and its credentials are not used.
 */
export function isStaleSignInForm(browser: BrowserContext, req: Request): boolean {
  return !browser.csrf.isValid(req) && signedInSession(browser.sessions.current(req)) !== undefined;
}

/** How a sign-in page goes on when the user signed in over another account's session. */
export const OTHER_ACCOUNT_SIGNED_OUT: AfterSignOut = { reason: 'other_account_signed_in', heading: 'The previous account is signed out', continueLabel: 'Continue' };

export type SignInAttempt =
  | { user: User }
  | { user?: undefined; status: 400 | 401 | 429; error: string; retryAfterSeconds?: number };

export async function attemptSignIn(browser: BrowserContext, req: Request, username: string, password: string, clientId?: string): Promise<SignInAttempt> {
  const { oauth } = browser;
  if (!username || !password) return { status: 400, error: 'Enter your username and password.' };
  // Counted before the password is checked, so concurrent guesses cannot outrun the limit.
  const throttle = await oauth.loginThrottle.recordAttempt(username, req.ip);
  if (throttle.locked) {
    oauth.events(req, 'login_throttled', { clientId, reason: 'locked' });
    return { status: 429, error: lockedMessage(throttle.retryAfterSeconds), retryAfterSeconds: throttle.retryAfterSeconds };
  }
  const user = await oauth.users.authenticate(username, password);
  if (!user) {
    const after = await oauth.loginThrottle.check(username, req.ip);
    oauth.events(req, 'login_failed', { clientId, reason: after.locked ? 'now_locked' : 'bad_credentials' });
    if (after.locked) return { status: 429, error: lockedMessage(after.retryAfterSeconds), retryAfterSeconds: after.retryAfterSeconds };
    return { status: 401, error: WRONG_CREDENTIALS };
  }
  await oauth.loginThrottle.recordSuccess(username, req.ip);
  return { user };
}

export function usernameField(params: Parameters): string {
  return (params.get('username') ?? '').slice(0, MAX_USERNAME_LENGTH);
}

export function loginHandler(browser: BrowserContext) {
  const { oauth } = browser;
  return async function signIn(req: Request, res: Response): Promise<void> {
    const params = bodyParameters(res);
    if (isStaleSignInForm(browser, req)) {
      continueAuthorization(browser, res, await formAuthorizationRequest(browser, params, req.ip));
      return;
    }
    requireCsrf(browser, req, 'login');
    const request = await formAuthorizationRequest(browser, params, req.ip);
    const username = usernameField(params);
    const password = params.get('password') ?? '';
    const clientId = request.client.id;

    const attempt = await attemptSignIn(browser, req, username, password, clientId);
    if (!attempt.user) {
      if (attempt.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(attempt.retryAfterSeconds));
      showLogin(browser, req, res, request, { status: attempt.status, error: attempt.error, username });
      return;
    }
    const { user } = attempt;
    const { ended } = await browser.sessions.signIn(req, res, user.id, user.sessionEpoch);
    oauth.events(req, 'login_succeeded', { clientId, userId: user.id });
    await continueAfterSignOut(browser, req, res, ended, authorizationUrl(browser, request, 'login'), OTHER_ACCOUNT_SIGNED_OUT);
  };
}
