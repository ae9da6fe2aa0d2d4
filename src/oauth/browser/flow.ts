/**
 * The flow is stateless on the server: the forms carry the request's query back, and after each form the browser is
 * sent (303) to /authorize, which re-validates everything and decides the next step.
 */
import type { Request, Response } from 'express';
import { readAuthorizationRequest, type AuthorizationRequest } from '../authorization-request.js';
import { Parameters } from '../params.js';
import { redirectTo } from '../authorize-response.js';
import type { OAuthContext } from '../context.js';
import { CsrfProtection } from './csrf.js';
import { consentPage } from './pages/consent.js';
import { sendPage } from './pages/layout.js';
import { loginPage } from './pages/login.js';
import { describeScope } from '../scopes.js';
import { Sessions, signedInSession } from './session.js';
import type { User } from '../stores/users.js';
import { ACCOUNT_PATH } from '../oidc/paths.js';
import type { SignedInUser } from '../stores/consents.js';
import { isSelfRegistered } from '../stores/clients.js';

export const LOGIN_PATH = '/authorize/login';
export const CONSENT_PATH = '/authorize/consent';
export const SWITCH_ACCOUNT_PATH = '/authorize/switch-account';

export interface BrowserContext {
  oauth: OAuthContext;
  sessions: Sessions;
  csrf: CsrfProtection;
}

/** The account signed in to this browser, unless its session was signed out (here, everywhere or on its own) or it was deleted. */
export async function signedInAccount(browser: BrowserContext, req: Request): Promise<User | undefined> {
  const check = signedInSession(browser.sessions.current(req));
  return check && browser.oauth.users.findSignedIn(check);
}

export function createBrowserContext(oauth: OAuthContext): BrowserContext {
  const sessions = new Sessions(oauth.issuer, oauth.sessionSecret, oauth.endedSessions);
  return { oauth, sessions, csrf: new CsrfProtection(sessions, oauth.sessionSecret) };
}

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

/** The authorization request a sign-in, consent or switch-account form carries (`authorization_request`), validated again. */
export function formAuthorizationRequest(browser: BrowserContext, form: Parameters, requesterIp: string | undefined): Promise<AuthorizationRequest> {
  return readAuthorizationRequest(browser.oauth.clients, Parameters.parse(form.get('authorization_request') ?? ''), browser.oauth.resources, requesterIp);
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
    username: state.username ?? request.loginHint ?? undefined,
    error: state.error,
    status: state.status,
  });
  sendPage(res, page, { status: state.status ?? 200, formActionOrigins: [redirectOrigin(request)], keepsOpener: true });
}

export function showConsent(browser: BrowserContext, req: Request, res: Response, request: AuthorizationRequest, user: SignedInUser): void {
  const page = consentPage({
    clientName: request.client.name,
    username: user.username,
    scopes: request.scopes.map((scope) => ({ scope, description: describeScope(scope) })),
    redirectOrigin: redirectOrigin(request),
    ...(isSelfRegistered(request.client) ? { unverifiedHost: unverifiedHost(request) } : {}),
    action: `${browser.oauth.issuer}${CONSENT_PATH}`,
    csrfToken: browser.csrf.token(req, res),
    authorizationRequest: request.query,
    switchAccountAction: `${browser.oauth.issuer}${SWITCH_ACCOUNT_PATH}`,
    accountUrl: `${browser.oauth.issuer}${ACCOUNT_PATH}`,
    policyUri: request.client.policyUri,
    tosUri: request.client.tosUri,
  });
  sendPage(res, page, { formActionOrigins: [redirectOrigin(request)], keepsOpener: true });
}

/** A sign-in satisfies `prompt=login`/`select_account` and `max_age`; a consent `prompt=consent`. */
export type Satisfied = 'login' | 'consent';

function remainingQuery(query: string, satisfied: Satisfied | undefined): string {
  if (!satisfied) return query;
  const params = new URLSearchParams(query);
  const dropped: readonly string[] = satisfied === 'login' ? ['login', 'select_account'] : ['consent'];
  const prompt = (params.get('prompt') ?? '').split(' ').filter((value) => value && !dropped.includes(value));
  if (prompt.length) params.set('prompt', prompt.join(' '));
  else params.delete('prompt');
  if (satisfied === 'login') params.delete('max_age');
  return params.toString();
}

/** /authorize with the request's query, less the prompts a form just satisfied. */
export function authorizationUrl(browser: BrowserContext, request: AuthorizationRequest, satisfied?: Satisfied): string {
  return `${browser.oauth.issuer}/authorize?${remainingQuery(request.query, satisfied)}`;
}

export function continueAuthorization(browser: BrowserContext, res: Response, request: AuthorizationRequest, satisfied?: Satisfied): void {
  redirectTo(res, authorizationUrl(browser, request, satisfied), 303);
}
