/** `POST /authorize/consent`: Allow sends the browser back to /authorize (303); Deny answers `access_denied`. */
import type { Request, Response } from 'express';
import { AuthorizationError } from '../authorization-request.js';
import { authorizationUrl, continueAuthorization, formAuthorizationRequest, type BrowserContext } from './flow.js';
import { continueAfterSignOut } from './after-sign-out.js';
import { AccessDenied } from '../errors.js';
import { requireCsrf } from './login.js';
import { bodyParameters } from '../params.js';
import { PageError } from './pages/error.js';
import { isSelfRegistered } from '../stores/clients.js';
import { codeRequest, needsSignIn } from '../endpoints/authorize.js';
import { redirectWithCode } from '../authorize-response.js';
import { signedInSession } from './session.js';

export function consentHandler(browser: BrowserContext) {
  const { oauth } = browser;
  return async function decide(req: Request, res: Response): Promise<void> {
    const params = bodyParameters(res);
    requireCsrf(browser, req, 'consent');
    const request = await formAuthorizationRequest(browser, params, req.ip);
    const session = browser.sessions.current(req);
    const check = signedInSession(session);
    const user = check && (await oauth.consents.lookup(check, request.client.id));
    if (!session || !user) {
      // Signed out meanwhile: /authorize shows the login page again.
      continueAuthorization(browser, res, request);
      return;
    }
    const clientId = request.client.id;
    const decision = params.get('decision');
    if (decision === 'allow') {
      // A consent page left open until the sign-in is older than max_age: /authorize asks for the password again
      // (OIDC Core §3.1.2.1), and this decision is neither recorded nor turned into a code before that.
      if (needsSignIn(request, session)) {
        continueAuthorization(browser, res, request);
        return;
      }
      // Not recorded when the account vanished meanwhile: /authorize then shows the login page.
      if (!(await oauth.consents.grant(user.userId, clientId, request.scopes))) {
        continueAuthorization(browser, res, request);
        return;
      }
      oauth.events(req, 'consent_granted', { clientId, userId: user.userId });
      if (isSelfRegistered(request.client)) {
        // /authorize would ask again (it never relies on a stored consent for such clients), so this very decision
        // issues the code, after reading the session again: a logout since the lookup above is refused (and /token
        // checks it once more).
        const { issued } = await oauth.codes.issueIfConsented(codeRequest(request, { ...session, userId: user.userId }, oauth.sessionIds), check);
        if (!issued) {
          continueAuthorization(browser, res, request);
          return;
        }
        oauth.events(req, 'code_issued', { clientId, userId: user.userId, grantId: issued.grantId });
        redirectWithCode(res, oauth.issuer, request.redirectUri, issued.code, request.state, 303);
        return;
      }
      continueAuthorization(browser, res, request, 'consent');
      return;
    }
    if (decision === 'deny') {
      oauth.events(req, 'consent_denied', { clientId, userId: user.userId });
      throw new AuthorizationError(new AccessDenied('the user denied the request'), request.redirectUri, request.state, clientId);
    }
    throw new PageError(400, 'Choose Allow or Deny', 'The form did not say whether you allow the application access.');
  };
}

export function switchAccountHandler(browser: BrowserContext) {
  return async function switchAccount(req: Request, res: Response): Promise<void> {
    const params = bodyParameters(res);
    requireCsrf(browser, req, 'switch_account');
    const request = await formAuthorizationRequest(browser, params, req.ip);
    // The user leaves this browser's session: ended like a logout, so a copy of its cookie is refused too, and its
    // clients are told.
    const ended = await browser.sessions.signOut(req, res);
    await continueAfterSignOut(browser, req, res, ended, authorizationUrl(browser, request, 'login'), {
      reason: 'switch_account',
      clientId: request.client.id,
      continueLabel: 'Continue',
    });
  };
}
