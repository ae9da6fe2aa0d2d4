/**
 * The account pages under /account. Every POST answers 303, so a reload never repeats it. Revoke withdraws the consent
 * and every grant of the app; other instances stop its access tokens within REVOCATION_CACHE_MS (src/tokens/revocation.ts).
 */
import express, { type ErrorRequestHandler, type Request, type Response } from 'express';
import type { OAuthContext } from '../context.js';
import { bodyParameters, formBody } from '../params.js';
import { ACCOUNT_PATH } from '../oidc/paths.js';
import { MIN_PASSWORD_LENGTH, MAX_PASSWORD_LENGTH, type User } from '../stores/users.js';
import { createBrowserContext, signedInAccount, type BrowserContext } from './flow.js';
import { attemptSignIn, isStaleSignInForm, MAX_USERNAME_LENGTH, OTHER_ACCOUNT_SIGNED_OUT, requireCsrf } from './login.js';
import { continueAfterSignOut } from './after-sign-out.js';
import { notifyBackchannelLogout } from '../oidc/backchannel.js';
import { accountLoginPage, accountPage, type AccountNotice } from './pages/account.js';
import { PageError, sendErrorPage } from './pages/error.js';
import { sendPage } from './pages/layout.js';

const NOTICES: Record<string, AccountNotice> = {
  revoked: { kind: 'ok', text: 'Access revoked. The app can no longer use your account.' },
  password: { kind: 'ok', text: 'Password changed. Other sessions and every app’s access have ended.' },
  'wrong-password': { kind: 'error', text: 'The current password is incorrect.', field: 'current_password' },
  'short-password': { kind: 'error', text: `The new password must be ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters.`, field: 'new_password' },
  throttled: { kind: 'error', text: 'Too many failed attempts. Try again later.', field: 'current_password' },
};

function seeOther(browser: BrowserContext, res: Response, path: string): void {
  res.setHeader('Cache-Control', 'no-store');
  res.redirect(303, `${browser.oauth.issuer}${path}`);
}

async function requireSignedIn(browser: BrowserContext, req: Request, form: string): Promise<User> {
  requireCsrf(browser, req, form);
  const user = await signedInAccount(browser, req);
  if (!user) throw new PageError(401, 'You are signed out', 'Sign in again to manage your account.');
  return user;
}

function showAccount(browser: BrowserContext) {
  return async function account(req: Request, res: Response): Promise<void> {
    browser.sessions.ensure(req, res);
    const user = await signedInAccount(browser, req);
    const csrfToken = browser.csrf.token(req, res);
    if (!user) {
      sendPage(res, accountLoginPage({ csrfToken, issuer: browser.oauth.issuer }));
      return;
    }
    const notice = typeof req.query.notice === 'string' && Object.hasOwn(NOTICES, req.query.notice) ? NOTICES[req.query.notice] : undefined;
    const apps = await browser.oauth.consents.connectedApps(user.id);
    sendPage(res, accountPage({ username: user.username, displayName: user.displayName, apps, csrfToken, notice, minPasswordLength: MIN_PASSWORD_LENGTH, issuer: browser.oauth.issuer }));
  };
}

function accountSignIn(browser: BrowserContext) {
  return async function signIn(req: Request, res: Response): Promise<void> {
    const params = bodyParameters(res);
    if (isStaleSignInForm(browser, req)) return seeOther(browser, res, ACCOUNT_PATH);
    requireCsrf(browser, req, 'account_login');
    const username = (params.get('username') ?? '').slice(0, MAX_USERNAME_LENGTH);
    const attempt = await attemptSignIn(browser, req, username, params.get('password') ?? '');
    if (!attempt.user) {
      if (attempt.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(attempt.retryAfterSeconds));
      sendPage(res, accountLoginPage({ csrfToken: browser.csrf.token(req, res), issuer: browser.oauth.issuer, username, error: attempt.error, status: attempt.status }), { status: attempt.status });
      return;
    }
    const { ended } = await browser.sessions.signIn(req, res, attempt.user.id, attempt.user.sessionEpoch);
    browser.oauth.events(req, 'login_succeeded', { userId: attempt.user.id });
    await continueAfterSignOut(browser, req, res, ended, `${browser.oauth.issuer}${ACCOUNT_PATH}`, OTHER_ACCOUNT_SIGNED_OUT);
  };
}

function revokeApp(browser: BrowserContext) {
  const { oauth } = browser;
  return async function revoke(req: Request, res: Response): Promise<void> {
    const user = await requireSignedIn(browser, req, 'account_revoke');
    const clientId = bodyParameters(res).get('client_id');
    if (!clientId) throw new PageError(400, 'Choose an app', 'The form did not say which app to revoke.');
    const { grantIds } = await oauth.consents.revokeApp(user.id, clientId);
    // Already revoked by the statement above; this clears this instance's revocation cache.
    await Promise.all(grantIds.map((grantId) => oauth.revocations.revokeGrant(grantId)));
    oauth.events(req, 'consent_revoked', { clientId, userId: user.id });
    seeOther(browser, res, `${ACCOUNT_PATH}?notice=revoked`);
  };
}

function signOutEverywhere(browser: BrowserContext) {
  return async function signOutAll(req: Request, res: Response): Promise<void> {
    const user = await requireSignedIn(browser, req, 'account_sign_out_everywhere');
    await browser.oauth.users.endSessions(user.id);
    const ended = await browser.sessions.signOut(req, res);
    browser.oauth.events(req, 'sessions_ended', { userId: user.id });
    // Clients that do not ask for the session id get a logout token for the user (no sid), which ends every session
    // of theirs; those that do hear of this browser's session only, as the others' ids are known to no one here.
    await continueAfterSignOut(browser, req, res, ended, `${browser.oauth.issuer}${ACCOUNT_PATH}`, { reason: 'sign_out_everywhere', continueLabel: 'Continue' });
  };
}

function changePassword(browser: BrowserContext) {
  const { oauth } = browser;
  return async function password(req: Request, res: Response): Promise<void> {
    const user = await requireSignedIn(browser, req, 'account_password');
    const params = bodyParameters(res);
    const current = params.get('current_password') ?? '';
    const next = params.get('new_password') ?? '';
    if (next.length < MIN_PASSWORD_LENGTH || next.length > MAX_PASSWORD_LENGTH) return seeOther(browser, res, `${ACCOUNT_PATH}?notice=short-password`);
    const attempt = await attemptSignIn(browser, req, user.username, current);
    if (!attempt.user || attempt.user.id !== user.id) {
      return seeOther(browser, res, `${ACCOUNT_PATH}?notice=${attempt.user ? 'wrong-password' : attempt.status === 429 ? 'throttled' : 'wrong-password'}`);
    }
    await oauth.users.setPassword(user.username, next);
    const updated = await oauth.users.find(user.id);
    // This browser stays signed in under the new epoch; every other session is void.
    const signedIn = updated ? await browser.sessions.signIn(req, res, updated.id, updated.sessionEpoch) : undefined;
    oauth.events(req, 'password_changed', { userId: user.id });
    // Every app's grant is revoked and every other session ended, so every app is told, as after "Sign out everywhere".
    if (signedIn) void notifyBackchannelLogout(oauth, user.id, { browserSessionId: signedIn.session.sid, everywhere: true });
    seeOther(browser, res, `${ACCOUNT_PATH}?notice=password`);
  };
}

function accountErrorHandler(oauth: OAuthContext): ErrorRequestHandler {
  return function serializeAccountError(error, req, res, next) {
    if (res.headersSent) {
      next(error);
      return;
    }
    sendErrorPage(error, req, res, oauth.logger, 'account page failed');
  };
}

export function createAccountRouter(oauth: OAuthContext, browser: BrowserContext = createBrowserContext(oauth)): express.Router {
  const router = express.Router();
  const cookies = browser.sessions.cookies;
  router.get(ACCOUNT_PATH, cookies, showAccount(browser));
  router.post(`${ACCOUNT_PATH}/login`, cookies, ...formBody, accountSignIn(browser));
  router.post(`${ACCOUNT_PATH}/revoke`, cookies, ...formBody, revokeApp(browser));
  router.post(`${ACCOUNT_PATH}/sign-out-everywhere`, cookies, ...formBody, signOutEverywhere(browser));
  router.post(`${ACCOUNT_PATH}/password`, cookies, ...formBody, changePassword(browser));
  router.use(ACCOUNT_PATH, accountErrorHandler(oauth));
  return router;
}
