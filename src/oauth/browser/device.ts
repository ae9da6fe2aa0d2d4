/**
 * The device grant's verification pages (RFC 8628 §3.3): `GET /device` and its sign-in, code and consent forms. User codes
 * are short, so each code tried counts against the user and the IP before it is looked up; a real code is given back.
 */
import express, { type ErrorRequestHandler, type Request, type Response } from 'express';
import type { OAuthContext } from '../context.js';
import { bodyParameters, formBody, queryParameters } from '../params.js';
import { SCOPES, isScope, parseScope } from '../scopes.js';
import { formatUserCode, normalizeUserCode } from '../stores/device-codes.js';
import { createBrowserContext, signedInAccount, type BrowserContext } from './flow.js';
import type { ThrottleRule, ThrottleState } from './login-throttle.js';
import { attemptSignIn, isStaleSignInForm, OTHER_ACCOUNT_SIGNED_OUT, requireCsrf, usernameField } from './login.js';
import { redirectTo } from '../authorize-response.js';
import { continueAfterSignOut } from './after-sign-out.js';
import { deviceCodePage, deviceConsentPage, deviceDonePage, deviceSignInPage } from './pages/device.js';
import { pageMethodNotAllowed, PageError, sendErrorPage } from './pages/error.js';
import { sendPage } from './pages/layout.js';

export const DEVICE_PATH = '/device';
const DEVICE_LOGIN_PATH = '/device/login';
const DEVICE_CONSENT_PATH = '/device/consent';

export interface DeviceCodeThrottlePolicy {
  user: ThrottleRule;
  ip: ThrottleRule;
}

/** A person mistypes a code now and then; 10 misses per quarter hour leaves 1 in 10^9 odds per lock. */
export const DEFAULT_DEVICE_CODE_THROTTLE_POLICY: DeviceCodeThrottlePolicy = {
  user: { maxFailures: 10, windowSeconds: 15 * 60, lockSeconds: 15 * 60 },
  ip: { maxFailures: 50, windowSeconds: 15 * 60, lockSeconds: 15 * 60 },
};

const INVALID_CODE = 'That code is not valid, or it has expired. Check the code on your device and try again.';

class DeviceCodeThrottle {
  constructor(
    private readonly oauth: OAuthContext,
    private readonly policy: DeviceCodeThrottlePolicy = DEFAULT_DEVICE_CODE_THROTTLE_POLICY,
  ) {}

  private keys(userId: number, ip: string | undefined): [string, ThrottleRule][] {
    return [
      [`device-user:${userId}`, this.policy.user],
      [`device-ip:${ip ?? 'unknown'}`, this.policy.ip],
    ];
  }

  async recordAttempt(userId: number, ip: string | undefined): Promise<ThrottleState> {
    const counts = await Promise.all(this.keys(userId, ip).map(([key, rule]) => this.oauth.loginThrottle.count(key, rule)));
    const refused = counts.filter((count) => !count.allowed);
    if (refused.length === 0) return { locked: false };
    return { locked: true, retryAfterSeconds: Math.max(1, ...refused.map((count) => count.retryAfter)) };
  }

  async recordSuccess(userId: number, ip: string | undefined): Promise<void> {
    await Promise.all(this.keys(userId, ip).map(([key, rule]) => this.oauth.loginThrottle.giveBack(key, rule)));
  }
}

interface SignedInUser {
  userId: number;
  username: string;
}

interface DeviceContext extends BrowserContext {
  throttle: DeviceCodeThrottle;
}

function lockedMessage(retryAfterSeconds: number): string {
  const minutes = Math.ceil(retryAfterSeconds / 60);
  return `Too many codes were tried. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`;
}

/** The code as the form shows it again: normalized when it is well-formed, else as typed (escaped by the page). */
function shownCode(raw: string): string {
  const code = normalizeUserCode(raw);
  return code === undefined ? raw.slice(0, 32) : formatUserCode(code);
}

async function signedInUser(device: DeviceContext, req: Request): Promise<SignedInUser | undefined> {
  const user = await signedInAccount(device, req);
  return user && { userId: user.id, username: user.username };
}

function showSignIn(device: DeviceContext, req: Request, res: Response, userCode: string, state: { status?: number; error?: string; username?: string } = {}): void {
  device.sessions.ensure(req, res);
  const page = deviceSignInPage({
    action: `${device.oauth.issuer}${DEVICE_LOGIN_PATH}`,
    csrfToken: device.csrf.token(req, res),
    userCode,
    username: state.username,
    error: state.error,
    status: state.status,
  });
  sendPage(res, page, { status: state.status ?? 200 });
}

function showCodeForm(device: DeviceContext, req: Request, res: Response, user: SignedInUser, userCode: string, state: { status?: number; error?: string } = {}): void {
  const page = deviceCodePage({
    action: `${device.oauth.issuer}${DEVICE_PATH}`,
    csrfToken: device.csrf.token(req, res),
    username: user.username,
    userCode,
    error: state.error,
    status: state.status,
  });
  sendPage(res, page, { status: state.status ?? 200 });
}

function userCodeParameter(value: string | undefined): string {
  return (value ?? '').slice(0, 64);
}

function showDevicePage(device: DeviceContext) {
  return async function deviceStart(req: Request, res: Response): Promise<void> {
    let userCode = '';
    try {
      userCode = shownCode(userCodeParameter(queryParameters(req.originalUrl).get('user_code')));
    } catch {
      // Repeated or NUL: shown as an empty form.
    }
    const user = await signedInUser(device, req);
    if (!user) {
      showSignIn(device, req, res, userCode);
      return;
    }
    showCodeForm(device, req, res, user, userCode);
  };
}

/** /device, with the code typed so far (verification_uri_complete's form). */
function deviceUrl(device: DeviceContext, userCode: string): string {
  const query = userCode ? `?${new URLSearchParams({ user_code: userCode }).toString()}` : '';
  return `${device.oauth.issuer}${DEVICE_PATH}${query}`;
}

function deviceSignIn(device: DeviceContext) {
  return async function deviceLogin(req: Request, res: Response): Promise<void> {
    const params = bodyParameters(res);
    if (isStaleSignInForm(device, req)) {
      redirectTo(res, deviceUrl(device, shownCode(userCodeParameter(params.get('user_code')))), 303);
      return;
    }
    requireCsrf(device, req, 'device-login');
    const userCode = shownCode(userCodeParameter(params.get('user_code')));
    const username = usernameField(params);
    const attempt = await attemptSignIn(device, req, username, params.get('password') ?? '');
    if (!attempt.user) {
      if (attempt.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(attempt.retryAfterSeconds));
      showSignIn(device, req, res, userCode, { status: attempt.status, error: attempt.error, username });
      return;
    }
    const { ended } = await device.sessions.signIn(req, res, attempt.user.id, attempt.user.sessionEpoch);
    device.oauth.events(req, 'login_succeeded', { userId: attempt.user.id });
    await continueAfterSignOut(device, req, res, ended, deviceUrl(device, userCode), OTHER_ACCOUNT_SIGNED_OUT);
  };
}

/** Counts the attempt, then looks the code up: the pending request, or undefined after showing the form with the reason. */
async function lookUpCode(device: DeviceContext, req: Request, res: Response, user: SignedInUser, raw: string) {
  const { oauth } = device;
  const throttle = await device.throttle.recordAttempt(user.userId, req.ip);
  if (throttle.locked) {
    oauth.events(req, 'device_code_throttled', { userId: user.userId, reason: 'locked' });
    res.setHeader('Retry-After', String(throttle.retryAfterSeconds));
    showCodeForm(device, req, res, user, shownCode(raw), { status: 429, error: lockedMessage(throttle.retryAfterSeconds) });
    return undefined;
  }
  const userCode = normalizeUserCode(raw);
  const pending = userCode === undefined ? undefined : await oauth.deviceCodes.findPending(userCode);
  const client = pending && (await oauth.clients.find(pending.clientId));
  if (!userCode || !pending || !client) {
    oauth.events(req, 'device_code_rejected', { userId: user.userId, reason: 'unknown_user_code' });
    showCodeForm(device, req, res, user, shownCode(raw), { status: 400, error: INVALID_CODE });
    return undefined;
  }
  await device.throttle.recordSuccess(user.userId, req.ip);
  return { userCode, client, scopes: parseScope(pending.scope) };
}

function enterCode(device: DeviceContext) {
  return async function deviceCode(req: Request, res: Response): Promise<void> {
    const params = bodyParameters(res);
    requireCsrf(device, req, 'device');
    const raw = userCodeParameter(params.get('user_code'));
    const user = await signedInUser(device, req);
    if (!user) {
      showSignIn(device, req, res, shownCode(raw));
      return;
    }
    const found = await lookUpCode(device, req, res, user, raw);
    if (!found) return;
    const page = deviceConsentPage({
      action: `${device.oauth.issuer}${DEVICE_CONSENT_PATH}`,
      csrfToken: device.csrf.token(req, res),
      username: user.username,
      clientId: found.client.id,
      clientName: found.client.name,
      userCode: formatUserCode(found.userCode),
      scopes: found.scopes.map((scope) => ({ scope, description: isScope(scope) ? SCOPES[scope] : scope })),
    });
    sendPage(res, page);
  };
}

function decide(device: DeviceContext) {
  const { oauth } = device;
  return async function deviceDecision(req: Request, res: Response): Promise<void> {
    const params = bodyParameters(res);
    requireCsrf(device, req, 'device-consent');
    const raw = userCodeParameter(params.get('user_code'));
    const decision = params.get('decision');
    if (decision !== 'allow' && decision !== 'deny') {
      throw new PageError(400, 'Choose Allow or Deny', 'The form did not say whether you allow the device access.');
    }
    const user = await signedInUser(device, req);
    if (!user) {
      showSignIn(device, req, res, shownCode(raw));
      return;
    }
    const found = await lookUpCode(device, req, res, user, raw);
    if (!found) return;
    // The client the user was shown: a code re-issued to another client meanwhile is not decided.
    if (params.get('client_id') !== found.client.id) {
      showCodeForm(device, req, res, user, formatUserCode(found.userCode), { status: 400, error: INVALID_CODE });
      return;
    }
    const outcome = decision === 'allow' ? 'approved' : 'denied';
    const decided = await oauth.deviceCodes.decide(found.userCode, found.client.id, user.userId, outcome);
    if (!decided) {
      showCodeForm(device, req, res, user, '', { status: 400, error: INVALID_CODE });
      return;
    }
    if (outcome === 'approved') {
      // Recorded like the authorization flow's, so the user sees (and can revoke) it with the others.
      await oauth.consents.grant(user.userId, found.client.id, found.scopes);
      oauth.events(req, 'device_code_approved', { clientId: found.client.id, userId: user.userId });
    } else {
      oauth.events(req, 'device_code_denied', { clientId: found.client.id, userId: user.userId });
    }
    sendPage(res, deviceDonePage(outcome, found.client.name));
  };
}

function deviceErrorHandler(oauth: OAuthContext): ErrorRequestHandler {
  return function serializeDeviceError(error, req, res, next) {
    if (res.headersSent) {
      next(error);
      return;
    }
    sendErrorPage(error, req, res, oauth.logger, 'device verification page failed');
  };
}

export function createDeviceRouter(oauth: OAuthContext): express.Router {
  const device: DeviceContext = { ...createBrowserContext(oauth), throttle: new DeviceCodeThrottle(oauth) };
  const router = express.Router();
  const cookies = device.sessions.cookies;
  router.route(DEVICE_PATH).get(cookies, showDevicePage(device)).post(cookies, ...formBody, enterCode(device)).all(pageMethodNotAllowed('GET, POST'));
  router.route(DEVICE_LOGIN_PATH).post(cookies, ...formBody, deviceSignIn(device)).all(pageMethodNotAllowed('POST'));
  router.route(DEVICE_CONSENT_PATH).post(cookies, ...formBody, decide(device)).all(pageMethodNotAllowed('POST'));
  router.use([DEVICE_PATH, DEVICE_LOGIN_PATH, DEVICE_CONSENT_PATH], deviceErrorHandler(oauth));
  return router;
}
