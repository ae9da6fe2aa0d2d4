/**
 * `POST /authorize/login`: the login form. Checks the CSRF token, counts the attempt against
 * the throttle, then checks the password (scrypt; an unknown name costs the same), and on
 * success starts a fresh session and sends the browser back to /authorize with 303. Unknown name and wrong password get the same
 * answer, and so do locked-out real and unknown accounts.
 */
import type { Request, Response } from 'express';
import { readAuthorizationRequest } from '../authorization-request.js';
import { continueAuthorization, showLogin, type BrowserContext } from './flow.js';
import { bodyParameters, Parameters } from '../params.js';
import { PageError } from './pages/error.js';

export const WRONG_CREDENTIALS = 'The username or password is incorrect.';
const MAX_USERNAME_LENGTH = 256;

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

/** What a sign-in attempt came to: the user, or the page's status and message. */
export type SignInOutcome =
  | { ok: true; userId: number }
  | { ok: false; status: 400 | 401 | 429; error: string; retryAfterSeconds?: number };

/**
 * Checks a username and password against the throttle and the user store, and logs the
 * security events; shared by every sign-in form (the authorization flow's and /device's).
 */
export async function checkCredentials(
  browser: BrowserContext,
  req: Request,
  input: { username: string; password: string; clientId?: string | undefined },
): Promise<SignInOutcome> {
  const { oauth } = browser;
  const { username, password, clientId } = input;
  if (!username || !password) return { ok: false, status: 400, error: 'Enter your username and password.' };
  // Counted before the password is checked, so concurrent guesses cannot outrun the limit.
  const throttle = await oauth.loginThrottle.recordAttempt(username, req.ip);
  if (throttle.locked) {
    oauth.events(req, 'login_throttled', { clientId, reason: 'locked' });
    return { ok: false, status: 429, error: lockedMessage(throttle.retryAfterSeconds), retryAfterSeconds: throttle.retryAfterSeconds };
  }

  const user = await oauth.runtime.users.authenticate(username, password);
  if (!user) {
    const after = await oauth.loginThrottle.check(username, req.ip);
    oauth.events(req, 'login_failed', { clientId, reason: after.locked ? 'now_locked' : 'bad_credentials' });
    if (after.locked) {
      return { ok: false, status: 429, error: lockedMessage(after.retryAfterSeconds), retryAfterSeconds: after.retryAfterSeconds };
    }
    return { ok: false, status: 401, error: WRONG_CREDENTIALS };
  }

  await oauth.loginThrottle.recordSuccess(username, req.ip);
  oauth.events(req, 'login_succeeded', { clientId, userId: user.id });
  return { ok: true, userId: user.id };
}

/** The username field of a sign-in form, cut to a sane length. */
export function usernameField(params: Parameters): string {
  return (params.get('username') ?? '').slice(0, MAX_USERNAME_LENGTH);
}

export function loginHandler(browser: BrowserContext) {
  const { oauth } = browser;
  return async function signIn(req: Request, res: Response): Promise<void> {
    const params = bodyParameters(res);
    requireCsrf(browser, req, 'login');
    const request = await readAuthorizationRequest(oauth.clients, Parameters.parse(params.get('authorization_request') ?? ''));
    const username = usernameField(params);
    const outcome = await checkCredentials(browser, req, { username, password: params.get('password') ?? '', clientId: request.client.id });
    if (!outcome.ok) {
      if (outcome.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(outcome.retryAfterSeconds));
      showLogin(browser, req, res, request, { status: outcome.status, error: outcome.error, username });
      return;
    }
    browser.sessions.signIn(req, res, outcome.userId);
    continueAuthorization(browser, res, request);
  };
}
