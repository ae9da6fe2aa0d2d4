/**
 * `POST /device_authorization` (RFC 8628 §3.1, §3.2): a client registered for the device grant, authenticated as at
 * /token, gets a device code and a user code for its user to enter at `verification_uri`; `resource` (RFC 8707) is
 * honoured as at /authorize.
 */
import type express from 'express';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { authenticatedClient, clientAuthentication } from '../client-auth.js';
import type { Db } from '../../db/database.js';
import { isForeignKeyViolation } from '../../db/errors.js';
import type { OAuthContext } from '../context.js';
import { IpRequestThrottle } from '../ip-request-throttle.js';
import { InvalidClient, InvalidScope, UnauthorizedClient } from '../errors.js';
import { jsonErrorHandler, noStore, onlyPost, sendJson } from '../json-response.js';
import { bodyParameters, formBody } from '../params.js';
import { formatScope, isIdentityScope, isScope, parseScope } from '../scopes.js';
import { DEVICE_CODE_GRANT_TYPE, type Client } from '../stores/clients.js';
import { formatUserCode } from '../stores/device-codes.js';
import { DEVICE_PATH } from '../browser/device.js';

export const DEVICE_AUTHORIZATION_PATH = '/device_authorization';

const PARAMETERS = ['scope'] as const;
// `resource` may repeat (RFC 8707 §2), so it is not listed for the repetition check.

function requestedScope(client: Client, scope: string | undefined): string {
  const requested = parseScope(scope);
  // The client's API scopes: the OpenID scopes it may have registered (for its code flow) are no choice of this grant.
  if (requested.length === 0) return formatScope(client.scopes.filter(isScope));
  // Known scopes (scopes_supported), so not "unknown": this grant issues no ID Token, and refresh tokens by registration.
  const identity = requested.filter(isIdentityScope);
  if (identity.length) {
    throw new InvalidScope(
      `the device grant issues no ID Token, so ${identity.join(' ')} cannot be requested; its refresh token comes with the client's registration`,
    );
  }
  if (requested.some((s) => !isScope(s))) throw new InvalidScope('the scope names a scope this server does not know');
  const notAllowed = requested.filter((s) => !client.scopes.includes(s));
  if (notAllowed.length) throw new InvalidScope(`this client may not request ${notAllowed.join(' ')}`);
  return formatScope(requested);
}

function preventCaching(_req: Request, res: Response, next: NextFunction): void {
  noStore(res);
  next();
}

function deviceAuthorizationHandler(oauth: OAuthContext): RequestHandler {
  return async function authorizeDevice(req, res) {
    const params = bodyParameters(res);
    params.rejectRepeated(PARAMETERS);
    const client = authenticatedClient(res);
    if (!client.grantTypes.includes(DEVICE_CODE_GRANT_TYPE)) {
      throw new UnauthorizedClient('this client is not registered for the device authorization grant');
    }
    const scope = requestedScope(client, params.get('scope'));
    // RFC 8707 as at /authorize: an unknown resource is invalid_target here; the known ones go to the grant.
    const resources = oauth.resources.resolve(params.getAll('resource'));
    const issued = await oauth.deviceCodes.issue(client.id, scope, resources).catch((error: unknown) => {
      // The client was deleted after authenticating (the client cache is a few seconds behind): its authentication fails.
      if (isForeignKeyViolation(error)) throw new InvalidClient('client authentication failed', { viaAuthorizationHeader: req.headers.authorization !== undefined });
      throw error;
    });
    const userCode = formatUserCode(issued.userCode);
    const verificationUri = `${oauth.issuer}${DEVICE_PATH}`;
    oauth.events(req, 'device_code_issued', { clientId: client.id });
    sendJson(res, 200, {
      device_code: issued.deviceCode,
      user_code: userCode,
      verification_uri: verificationUri,
      verification_uri_complete: `${verificationUri}?user_code=${userCode}`,
      expires_in: issued.expiresIn,
      interval: issued.interval,
    });
  };
}

/**
 * Each request stores a device code until it expires, so requests are counted per client IP across instances
 * (DEVICE_AUTHORIZATION_RATE_LIMIT), before the client is authenticated: failed attempts count too.
 */
export function addDeviceAuthorizationEndpoint(router: express.Router, oauth: OAuthContext, cors: RequestHandler, { rateLimit, db }: { rateLimit: number; db: Db }): void {
  const throttle = new IpRequestThrottle(db, 'device', rateLimit);
  router
    .route(DEVICE_AUTHORIZATION_PATH)
    .options(cors)
    .post(cors, preventCaching, throttle.limit('too many device authorization requests from this address; try again later'), ...formBody, clientAuthentication(oauth), deviceAuthorizationHandler(oauth))
    .all(cors, onlyPost);
  router.use(DEVICE_AUTHORIZATION_PATH, jsonErrorHandler(oauth.logger));
}
