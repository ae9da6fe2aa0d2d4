/**
 * `GET|POST /authorize` (RFC 6749 §4.1.1, OIDC Core §3.1.2.1): login page, consent page, then a code. No CORS: top-level
 * pages only.
 */
import type { ErrorRequestHandler, Request, RequestHandler, Response } from 'express';
import { RouteTable } from '../../http/route-table.js';
import { AuthorizationError, readAuthorizationRequest, UntrustedAuthorizationRequest, type AuthorizationRequest } from '../authorization-request.js';
import { errorRedirectLocation, redirectWithCode, redirectWithError, repeatFormAsGet } from '../authorize-response.js';
import { CONSENT_PATH, createBrowserContext, LOGIN_PATH, showConsent, showLogin, SWITCH_ACCOUNT_PATH, type BrowserContext } from '../browser/flow.js';
import { consentHandler, switchAccountHandler } from '../browser/consent.js';
import type { OAuthContext } from '../context.js';
import type { NewAuthorizationCode } from '../stores/codes.js';
import { isSelfRegistered } from '../stores/clients.js';
import { ConsentRequired, InvalidRequest, LoginRequired, OAuthError } from '../errors.js';
import { readIdTokenHint } from '../oidc/id-token.js';
import { subjectFor } from '../oidc/subject.js';
import { signedInSession, type BrowserSession } from '../browser/session.js';
import type { SessionIds } from '../oidc/session-id.js';
import { loginHandler } from '../browser/login.js';
import { formBody, queryParameters } from '../params.js';
import { errorPage, pageMethodNotAllowed, sendErrorPage, untrustedErrorPage } from '../browser/pages/error.js';
import { sendPage } from '../browser/pages/layout.js';

export function codeRequest(request: AuthorizationRequest, session: BrowserSession & { userId: number }, sessionIds: SessionIds): NewAuthorizationCode {
  return {
    clientId: request.client.id,
    userId: session.userId,
    scope: request.scopes.join(' '),
    resources: request.resources,
    redirectUri: request.redirectUriSent ? request.redirectUri : null,
    codeChallenge: request.codeChallenge,
    codeChallengeMethod: request.codeChallengeMethod,
    dpopJkt: request.dpopJkt,
    nonce: request.nonce,
    authTime: session.authTime ?? null,
    sid: sessionIds.forClient(request.client.id, session.sid),
  };
}

function toClient(request: AuthorizationRequest, error: OAuthError): AuthorizationError {
  return new AuthorizationError(error, request.redirectUri, request.state, request.client.id, isSelfRegistered(request.client));
}

/** prompt=login or select_account, or a sign-in older than max_age (OIDC Core §3.1.2.1): the login page first. */
export function needsSignIn(request: AuthorizationRequest, session: BrowserSession): boolean {
  if (request.prompt.has('login') || request.prompt.has('select_account')) return true;
  if (request.maxAge === null) return false;
  return session.authTime === undefined || Math.floor(Date.now() / 1000) - session.authTime > request.maxAge;
}

/**
 * OIDC Core §3.1.2.1: a silent request (prompt=none) whose id_token_hint names another user than the one signed in is
 * login_required, so a silent renewal never hands the client a code for someone else. An interactive request ignores
 * the hint: the user may sign in as anyone, and insisting would send them back to the sign-in page forever.
 */
async function checkIdTokenHint(browser: BrowserContext, request: AuthorizationRequest, userId: number): Promise<void> {
  if (request.idTokenHint === null || !request.prompt.has('none')) return;
  const hint = await readIdTokenHint(browser.oauth, request.idTokenHint);
  if (!hint || hint.clientId !== request.client.id) {
    throw toClient(request, new InvalidRequest('id_token_hint is not an ID Token this server issued to this client'));
  }
  if (hint.sub !== subjectFor(request.client, userId, browser.oauth.pairwiseSecret)) {
    throw toClient(request, new LoginRequired('the signed-in user is not the one id_token_hint names'));
  }
}

function authorizeHandler(browser: BrowserContext) {
  return async function authorize(req: Request, res: Response): Promise<void> {
    const request = await readAuthorizationRequest(browser.oauth.clients, queryParameters(req.originalUrl), browser.oauth.resources, req.ip);
    const silent = request.prompt.has('none');
    const session = browser.sessions.current(req);
    const signIn = (): void => {
      if (silent) throw toClient(request, new LoginRequired('the user is not signed in'));
      showLogin(browser, req, res, request);
    };
    const check = signedInSession(session);
    if (!session || !check) return signIn();
    if (needsSignIn(request, session)) {
      if (silent) throw toClient(request, new LoginRequired('the sign-in is older than max_age'));
      return signIn();
    }
    await checkIdTokenHint(browser, request, check.userId);
    const signedIn = { ...session, userId: check.userId };
    if (request.prompt.has('consent')) {
      const user = await browser.oauth.consents.lookup(check, request.client.id);
      if (!user) return signIn();
      showConsent(browser, req, res, request, user);
      return;
    }
    // A self-registered client is unverified: the user decides every time, whatever they allowed before.
    if (isSelfRegistered(request.client)) {
      const user = await browser.oauth.consents.lookup(check, request.client.id);
      if (!user) return signIn();
      if (silent) throw toClient(request, new ConsentRequired('this application must be allowed on the consent page'));
      showConsent(browser, req, res, request, user);
      return;
    }
    // One read, the user and their consent; when it covers the request, the code is sealed (nothing is written).
    const { user, issued } = await browser.oauth.codes.issueIfConsented(codeRequest(request, signedIn, browser.oauth.sessionIds), check);
    if (!user) return signIn();
    if (!issued) {
      if (silent) throw toClient(request, new ConsentRequired('the user has not allowed this application these scopes'));
      showConsent(browser, req, res, request, user);
      return;
    }
    browser.oauth.events(req, 'code_issued', { clientId: request.client.id, userId: user.userId, grantId: issued.grantId });
    redirectWithCode(res, browser.oauth.issuer, request.redirectUri, issued.code, request.state);
  };
}

/**
 * Errors about the client or redirect URI as our own page; a self-registered client's other errors on our page too, with
 * a link to its redirect URI; everything else as a redirect (303 answering a POST).
 */
function authorizeErrorHandler(oauth: OAuthContext): ErrorRequestHandler {
  return function serializeAuthorizeError(error, req, res, next) {
    if (res.headersSent) {
      next(error);
      return;
    }
    if (error instanceof AuthorizationError) {
      if (error.confirmBeforeRedirect) {
        sendPage(res, untrustedErrorPage(error.error.description, errorRedirectLocation(oauth.issuer, error)), { status: 400, keepsOpener: true });
        return;
      }
      redirectWithError(res, oauth.issuer, error, req.method === 'POST' ? 303 : 302);
      return;
    }
    if (error instanceof UntrustedAuthorizationRequest) {
      if (error.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(error.retryAfterSeconds));
      const title = error.status === 400 ? 'This sign-in link does not work' : 'Try again in a moment';
      sendPage(res, errorPage(title, error.message), { status: error.status, keepsOpener: true });
      return;
    }
    sendErrorPage(error, req, res, oauth.logger, 'authorization endpoint failed', { keepsOpener: true });
  };
}

/** The endpoint and its pages, matched as the OAuth routers' Express default (any case, one trailing slash). */
export function createAuthorizeRouter(oauth: OAuthContext, browser: BrowserContext = createBrowserContext(oauth)): RequestHandler {
  const cookies = browser.sessions.cookies;
  const table = new RouteTable(authorizeErrorHandler(oauth), { caseSensitive: false })
    .add('GET', '/authorize', [cookies, authorizeHandler(browser)])
    // OIDC Core §3.1.2.1: the endpoint MUST take a form POST too; it is validated and answered as the GET it becomes.
    .add('POST', '/authorize', [...formBody, repeatFormAsGet(`${oauth.issuer}/authorize`)])
    .add('ALL', '/authorize', [pageMethodNotAllowed('GET, POST')]);
  const forms: [string, RequestHandler][] = [
    [LOGIN_PATH, loginHandler(browser)],
    [CONSENT_PATH, consentHandler(browser)],
    [SWITCH_ACCOUNT_PATH, switchAccountHandler(browser)],
  ];
  for (const [path, handler] of forms) table.add('POST', path, [cookies, ...formBody, handler]).add('ALL', path, [pageMethodNotAllowed('POST')]);
  return table.handler;
}
