/**
 * What the browser-facing steps of the authorization endpoint share: the session and CSRF
 * machinery and the rendering of the login and consent pages for a validated request.
 *
 * The flow is stateless on the server: the login and consent forms carry the authorization
 * request's query back, and after each form the browser is sent (303) to /authorize again,
 * which re-validates everything and decides the next step.
 */
import type { Request, Response } from 'express';
import type { AuthorizationRequest } from '../authorization-request.js';
import { redirectTo } from '../authorize-response.js';
import type { OAuthContext } from '../context.js';
import { CsrfProtection } from './csrf.js';
import { consentPage } from './pages/consent.js';
import { sendPage } from './pages/layout.js';
import { loginPage } from './pages/login.js';
import { SCOPES, isScope } from '../scopes.js';
import { Sessions } from './session.js';
import type { SignedInUser } from '../stores/consents.js';
import { isSelfRegistered } from '../stores/clients.js';

export const LOGIN_PATH = '/authorize/login';
export const CONSENT_PATH = '/authorize/consent';

export interface BrowserContext {
  oauth: OAuthContext;
  sessions: Sessions;
  csrf: CsrfProtection;
}

export function createBrowserContext(oauth: OAuthContext): BrowserContext {
  const sessions = new Sessions(oauth.issuer, oauth.runtime.sessionSecret);
  return { oauth, sessions, csrf: new CsrfProtection(sessions, oauth.runtime.sessionSecret) };
}

/** The host a self-registered client is known by: its metadata document's, else its redirect URI's. */
function unverifiedHost(request: AuthorizationRequest): string {
  const { client } = request;
  const source = client.registrationType === 'metadata_document' ? client.id : request.redirectUri;
  try {
    return new URL(source).host || new URL(source).protocol;
  } catch {
    return source;
  }
}

function redirectOrigin(request: AuthorizationRequest): string {
  const url = new URL(request.redirectUri);
  // A native app's private-use scheme has no origin; CSP form-action names it by scheme.
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : url.protocol;
}

export interface LoginPageState {
  status?: number;
  error?: string;
  username?: string;
}

export function showLogin(browser: BrowserContext, req: Request, res: Response, request: AuthorizationRequest, state: LoginPageState = {}): void {
  browser.sessions.ensure(req, res);
  const page = loginPage({
    clientName: request.client.name,
    action: `${browser.oauth.issuer}${LOGIN_PATH}`,
    csrfToken: browser.csrf.token(req, res),
    authorizationRequest: request.query,
    username: state.username,
    error: state.error,
  });
  sendPage(res, page, { status: state.status ?? 200, formActionOrigins: [redirectOrigin(request)] });
}

export function showConsent(browser: BrowserContext, req: Request, res: Response, request: AuthorizationRequest, user: SignedInUser): void {
  const page = consentPage({
    clientName: request.client.name,
    username: user.username,
    scopes: request.scopes.map((scope) => ({ scope, description: isScope(scope) ? SCOPES[scope] : scope })),
    redirectOrigin: redirectOrigin(request),
    ...(isSelfRegistered(request.client) ? { unverifiedHost: unverifiedHost(request) } : {}),
    action: `${browser.oauth.issuer}${CONSENT_PATH}`,
    csrfToken: browser.csrf.token(req, res),
    authorizationRequest: request.query,
  });
  sendPage(res, page, { formActionOrigins: [redirectOrigin(request)] });
}

/** After a form: back to /authorize with the same request (303, so the browser GETs it). */
export function continueAuthorization(browser: BrowserContext, res: Response, request: AuthorizationRequest): void {
  redirectTo(res, `${browser.oauth.issuer}/authorize?${request.query}`, 303);
}
