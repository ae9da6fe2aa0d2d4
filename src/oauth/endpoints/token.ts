/**
 * The token endpoint, `POST /token` (RFC 6749 §3.2), as a pipeline of named steps:
 * read the form body → find the grant type → authenticate the client → check the client may
 * use that grant → run the grant's handler. Adding a grant type is one module in grants/ and
 * one line in GRANTS.
 */
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { authenticatedClient, clientAuthentication } from '../client-auth.js';
import type { OAuthContext } from '../context.js';
import { InvalidRequest, UnauthorizedClient, UnsupportedGrantType } from '../errors.js';
import * as authorizationCode from '../grants/authorization-code.js';
import * as clientCredentials from '../grants/client-credentials.js';
import * as deviceCode from '../grants/device-code.js';
import type { Grant } from '../grants/grant.js';
import * as refreshToken from '../grants/refresh-token.js';
import { jsonErrorHandler, noStore, onlyPost, sendJson } from '../json-response.js';
import { bodyParameters, formBody } from '../params.js';

const GRANTS: ReadonlyMap<string, Grant> = new Map([authorizationCode, refreshToken, clientCredentials, deviceCode].map((grant) => [grant.grantType, grant]));
const GRANT_TYPES = [...GRANTS.keys()];

/** The grant types this server supports, for the metadata document. */
export const GRANT_TYPES_SUPPORTED: readonly string[] = [...GRANTS.keys()];

function grantOf(res: Response): Grant {
  return res.locals.grant as Grant;
}

function preventCaching(_req: Request, res: Response, next: NextFunction): void {
  noStore(res);
  next();
}

function findGrantType(_req: Request, res: Response, next: NextFunction): void {
  const params = bodyParameters(res);
  const grantType = params.get('grant_type');
  if (grantType === undefined) throw new InvalidRequest('the grant_type parameter is missing');
  const grant = GRANTS.get(grantType);
  if (!grant) throw new UnsupportedGrantType(`this grant_type is not supported; use ${GRANT_TYPES.join(' or ')}`);
  params.rejectRepeated(grant.parameters);
  res.locals.grant = grant;
  next();
}

function checkClientGrantType(_req: Request, res: Response, next: NextFunction): void {
  const grant = grantOf(res);
  if (!authenticatedClient(res).grantTypes.includes(grant.grantType)) {
    throw new UnauthorizedClient(`this client may not use grant_type ${grant.grantType}`);
  }
  next();
}

function callGrantHandler(oauth: OAuthContext): RequestHandler {
  return async function callTokenHandler(req, res) {
    const body = await grantOf(res).handler({ oauth, client: authenticatedClient(res), params: bodyParameters(res), req });
    sendJson(res, 200, body);
  };
}

export function addTokenEndpoint(router: express.Router, oauth: OAuthContext, cors: RequestHandler): void {
  router
    .route('/token')
    .options(cors)
    .post(cors, preventCaching, ...formBody, findGrantType, clientAuthentication(oauth), checkClientGrantType, callGrantHandler(oauth))
    .all(cors, onlyPost);
  router.use('/token', jsonErrorHandler(oauth.runtime.logger));
}
