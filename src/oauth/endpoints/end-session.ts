/**
 * RP-Initiated Logout 1.0, `GET|POST /logout`. A signed-in user always confirms on a page (a CSRF-protected POST to
 * /logout/confirm), so a cross-site link cannot sign anyone out; a bad hint or unregistered post_logout_redirect_uri is
 * shown on our page, never redirected to (an open redirector otherwise). The apps' grants stay (revoked on /account).
 */
import express, { type Request, type Response } from 'express';
import type { OAuthContext } from '../context.js';
import { createBrowserContext, signedInAccount, type BrowserContext } from '../browser/flow.js';
import { requireCsrf } from '../browser/login.js';
import { logoutConfirmPage, signedOutPage } from '../browser/pages/logout.js';
import { PageError, pageMethodNotAllowed, sendErrorPage } from '../browser/pages/error.js';
import { sendPage } from '../browser/pages/layout.js';
import { redirectTo, authorizationResponseLocation, repeatFormAsGet } from '../authorize-response.js';
import { bodyParameters, formBody, queryParameters, type Parameters } from '../params.js';
import { readIdTokenHint } from '../oidc/id-token.js';
import { announceSessionEnd } from '../oidc/session-end.js';
import type { FrontchannelFrame } from '../oidc/frontchannel.js';
import { END_SESSION_PATH } from '../oidc/paths.js';
import type { Client } from '../stores/clients.js';
import { OAuthError } from '../errors.js';

const LOGOUT_PARAMETERS = ['id_token_hint', 'client_id', 'post_logout_redirect_uri', 'state'] as const;

interface LogoutRequest {
  client: Client | undefined;
  postLogoutRedirectUri: string | undefined;
  state: string | undefined;
}

function refuse(message: string): PageError {
  return new PageError(400, 'This sign-out link does not work', message);
}

async function readLogoutRequest(oauth: OAuthContext, params: Parameters): Promise<LogoutRequest> {
  let values: Partial<Record<(typeof LOGOUT_PARAMETERS)[number], string>>;
  try {
    params.rejectRepeated(LOGOUT_PARAMETERS);
    values = Object.fromEntries(LOGOUT_PARAMETERS.map((name) => [name, params.get(name)]));
  } catch (error) {
    throw refuse(error instanceof OAuthError ? `${error.description}.` : 'The request could not be read.');
  }
  let clientId = values.client_id;
  if (values.id_token_hint !== undefined) {
    const hint = await readIdTokenHint(oauth, values.id_token_hint);
    if (!hint) throw refuse('The id_token_hint is not an ID Token issued by this server.');
    if (clientId !== undefined && clientId !== hint.clientId) throw refuse('The client_id does not match the id_token_hint.');
    clientId = hint.clientId;
  }
  const client = clientId === undefined ? undefined : await oauth.clients.find(clientId);
  if (clientId !== undefined && !client) throw refuse('The application that sent you here is not registered with this server.');
  const uri = values.post_logout_redirect_uri;
  if (uri !== undefined) {
    if (!client) throw refuse('post_logout_redirect_uri needs id_token_hint or client_id to say which application asks.');
    if (!client.postLogoutRedirectUris.includes(uri)) throw refuse('The post_logout_redirect_uri is not one this application registered.');
  }
  return { client, postLogoutRedirectUri: uri, state: values.state };
}

/** §3: the registered URI itself, with `state` added to its query only when the request sent one. */
function postLogoutLocation(logout: LogoutRequest): string | undefined {
  const uri = logout.postLogoutRedirectUri;
  if (uri === undefined || logout.state === undefined) return uri;
  return authorizationResponseLocation(uri, { state: logout.state });
}

/** With front-channel frames, the signed-out page loads them first and then moves on by itself. */
function finish(oauth: OAuthContext, res: Response, logout: LogoutRequest, signedOut: boolean, frames: readonly FrontchannelFrame[] = []): void {
  const continueTo = postLogoutLocation(logout);
  if (continueTo !== undefined && frames.length === 0) {
    redirectTo(res, continueTo, 303);
    return;
  }
  sendPage(res, signedOutPage(signedOut, oauth.issuer, { frames, ...(continueTo === undefined ? {} : { continueTo }) }), {
    frameOrigins: frames.map((frame) => frame.origin),
    keepsOpener: true,
  });
}

function formFieldsOf(logout: LogoutRequest): Record<string, string> {
  const fields: Record<string, string> = {};
  if (logout.client) fields.client_id = logout.client.id;
  if (logout.postLogoutRedirectUri !== undefined) fields.post_logout_redirect_uri = logout.postLogoutRedirectUri;
  if (logout.state !== undefined) fields.state = logout.state;
  return fields;
}

function endSession(browser: BrowserContext) {
  const { oauth } = browser;
  return async function askToSignOut(req: Request, res: Response): Promise<void> {
    const params = queryParameters(req.originalUrl);
    const logout = await readLogoutRequest(oauth, params);
    const user = await signedInAccount(browser, req);
    if (!user) {
      finish(oauth, res, logout, true);
      return;
    }
    const page = logoutConfirmPage({ username: user.username, clientName: logout.client?.name, csrfToken: browser.csrf.token(req, res), issuer: oauth.issuer, fields: formFieldsOf(logout) });
    const origins = logout.postLogoutRedirectUri ? [new URL(logout.postLogoutRedirectUri).origin] : [];
    sendPage(res, page, { formActionOrigins: origins, keepsOpener: true });
  };
}

function confirmSignOut(browser: BrowserContext) {
  const { oauth } = browser;
  return async function confirm(req: Request, res: Response): Promise<void> {
    const params = bodyParameters(res);
    if (!browser.csrf.isValid(req) && !(await signedInAccount(browser, req))) {
      // A second Sign out (a double click, Back and again, another tab): the session, and with it the token, has ended.
      // Nobody is signed in, so this answers as /logout does then, which any link may ask for.
      finish(oauth, res, await readLogoutRequest(oauth, params), true);
      return;
    }
    requireCsrf(browser, req, 'logout');
    const logout = await readLogoutRequest(oauth, params);
    if (params.get('decision') !== 'logout') {
      sendPage(res, signedOutPage(false, oauth.issuer), { keepsOpener: true });
      return;
    }
    const ended = await browser.sessions.signOut(req, res);
    // Of concurrent confirmations (a double click, two tabs), one tells the clients; each page still loads the
    // front-channel frames, as the browser may show either answer.
    const frames = ended ? await announceSessionEnd(oauth, req, ended, { clientId: logout.client?.id }) : [];
    finish(oauth, res, logout, true, frames);
  };
}

export function createEndSessionRouter(oauth: OAuthContext, browser: BrowserContext = createBrowserContext(oauth)): express.Router {
  const router = express.Router();
  const cookies = browser.sessions.cookies;
  router
    .route(END_SESSION_PATH)
    .get(cookies, endSession(browser))
    // RP-Initiated Logout §2: the endpoint takes a form POST too; the GET it becomes asks the signed-in user to confirm.
    .post(...formBody, repeatFormAsGet(`${oauth.issuer}${END_SESSION_PATH}`))
    .all(pageMethodNotAllowed('GET, POST'));
  router
    .route(`${END_SESSION_PATH}/confirm`)
    .post(cookies, ...formBody, confirmSignOut(browser))
    .all(pageMethodNotAllowed('POST'));
  // As the sign-in pages answer: a database out of reach is a 503 page to reload, not a 500.
  router.use(END_SESSION_PATH, function serializeLogoutError(error: unknown, req: Request, res: Response, next: express.NextFunction) {
    if (res.headersSent) return next(error);
    sendErrorPage(error, req, res, oauth.logger, 'end session endpoint failed', { keepsOpener: true });
  });
  return router;
}
