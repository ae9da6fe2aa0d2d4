/**
 * The authorization endpoint, `GET /authorize` (RFC 6749 §4.1.1), and its two forms. For a
 * valid request it shows the login page (no session), then the consent page (scopes not yet
 * allowed), and finally answers 302 to the redirect URI with a code. No CORS here: these are
 * top-level browser pages only.
 */
import express, { type ErrorRequestHandler, type Request, type Response } from 'express';
import { AuthorizationError, readAuthorizationRequest, UntrustedAuthorizationRequest, type AuthorizationRequest } from '../authorization-request.js';
import { redirectWithCode, redirectWithError } from '../authorize-response.js';
import { CONSENT_PATH, createBrowserContext, LOGIN_PATH, showConsent, showLogin, type BrowserContext } from '../browser/flow.js';
import { consentHandler } from '../browser/consent.js';
import type { OAuthContext } from '../context.js';
import type { NewAuthorizationCode } from '../stores/codes.js';
import { isSelfRegistered } from '../stores/clients.js';
import { OAuthError } from '../errors.js';
import { loginHandler } from '../browser/login.js';
import { bodyReadError, formBody, queryParameters } from '../params.js';
import { errorPage, PageError } from '../browser/pages/error.js';
import { sendPage } from '../browser/pages/layout.js';

export function codeRequest(request: AuthorizationRequest, userId: number): NewAuthorizationCode {
  return {
    clientId: request.client.id,
    userId,
    scope: request.scopes.join(' '),
    resources: request.resources,
    redirectUri: request.redirectUriSent ? request.redirectUri : null,
    codeChallenge: request.codeChallenge,
    codeChallengeMethod: request.codeChallengeMethod,
  };
}

function authorizeHandler(browser: BrowserContext) {
  return async function authorize(req: Request, res: Response): Promise<void> {
    const request = await readAuthorizationRequest(browser.oauth.clients, queryParameters(req.originalUrl), browser.oauth.runtime.resources);
    const session = browser.sessions.current(req);
    if (session?.userId === undefined) {
      showLogin(browser, req, res, request);
      return;
    }
    // A self-registered client is unverified: the user decides every time, whatever they allowed before.
    if (isSelfRegistered(request.client)) {
      const signedIn = await browser.oauth.consents.lookup(session.userId, request.client.id);
      if (signedIn) showConsent(browser, req, res, request, signedIn);
      else showLogin(browser, req, res, request);
      return;
    }
    // One statement: the user, their consent and — when it covers the request — the code.
    const { user, issued } = await browser.oauth.codes.issueIfConsented(codeRequest(request, session.userId));
    if (!user) {
      showLogin(browser, req, res, request);
      return;
    }
    if (!issued) {
      showConsent(browser, req, res, request, user);
      return;
    }
    browser.oauth.events(req, 'code_issued', { clientId: request.client.id, userId: user.userId, grantId: issued.grantId });
    redirectWithCode(res, browser.oauth.issuer, request.redirectUri, issued.code, request.state);
  };
}

/**
 * The one serializer of this surface: errors about the client or redirect URI (and broken
 * forms) as our own HTML page, everything else as a redirect to the client — 302 from
 * GET /authorize, 303 in answer to a form POST.
 */
function authorizeErrorHandler(oauth: OAuthContext): ErrorRequestHandler {
  return function serializeAuthorizeError(error, req, res, next) {
    if (res.headersSent) {
      next(error);
      return;
    }
    if (error instanceof AuthorizationError) {
      redirectWithError(res, oauth.issuer, error, req.method === 'POST' ? 303 : 302);
      return;
    }
    if (error instanceof UntrustedAuthorizationRequest) {
      sendPage(res, errorPage('This sign-in link does not work', error.message), { status: 400 });
      return;
    }
    if (error instanceof PageError) {
      sendPage(res, errorPage(error.title, error.message), { status: error.status });
      return;
    }
    const requestError = error instanceof OAuthError && error.expose ? error : bodyReadError(error);
    if (requestError) {
      sendPage(res, errorPage('The form could not be read', requestError.description), { status: requestError.status });
      return;
    }
    oauth.runtime.logger.error({ err: error, reqId: req.id }, 'authorization endpoint failed');
    sendPage(res, errorPage('Something went wrong', 'The server could not complete the sign-in. Please try again later.'), { status: 500 });
  };
}

function methodNotAllowed(allowed: string) {
  return function rejectMethod(_req: Request, res: Response): void {
    res.setHeader('Allow', allowed);
    sendPage(res, errorPage('Not allowed', `This address only answers ${allowed}.`), { status: 405 });
  };
}

export function createAuthorizeRouter(oauth: OAuthContext): express.Router {
  const browser = createBrowserContext(oauth);
  const router = express.Router();
  router.route('/authorize').get(browser.sessions.cookies, authorizeHandler(browser)).all(methodNotAllowed('GET'));
  router.route(LOGIN_PATH).post(browser.sessions.cookies, ...formBody, loginHandler(browser)).all(methodNotAllowed('POST'));
  router.route(CONSENT_PATH).post(browser.sessions.cookies, ...formBody, consentHandler(browser)).all(methodNotAllowed('POST'));
  router.use(['/authorize', LOGIN_PATH, CONSENT_PATH], authorizeErrorHandler(oauth));
  return router;
}
