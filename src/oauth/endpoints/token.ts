/** `POST /token` (RFC 6749 §3.2) as named steps; a grant type is one module in grants/ and one line in GRANTS. */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { authenticatedClient, clientAuthentication } from '../client-auth.js';
import type { OAuthContext } from '../context.js';
import { InvalidDpopProof, InvalidRequest, UnauthorizedClient, UnsupportedGrantType } from '../errors.js';
import * as authorizationCode from '../grants/authorization-code.js';
import * as clientCredentials from '../grants/client-credentials.js';
import * as deviceCode from '../grants/device-code.js';
import type { Grant } from '../grants/grant.js';
import * as refreshToken from '../grants/refresh-token.js';
import { noStore, sendJson } from '../json-response.js';
import { bodyParameters } from '../params.js';
import { createPostEndpoint } from './post-endpoint.js';
import { GRANT_TYPES_SUPPORTED } from '../../policy.js';
import type { DpopProof } from '../../tokens/dpop.js';

/** One module per grant type; which of them are offered is policy (POLICY.grantTypes). */
const GRANTS: ReadonlyMap<string, Grant> = new Map(
  [authorizationCode, refreshToken, clientCredentials, deviceCode].filter((grant) => GRANT_TYPES_SUPPORTED.includes(grant.grantType)).map((grant) => [grant.grantType, grant]),
);

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
  if (!grant) throw new UnsupportedGrantType(`this grant_type is not supported; use ${GRANT_TYPES_SUPPORTED.join(' or ')}`);
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

/** RFC 9449 §5: verified before any grant runs, so a proof refused for its nonce leaves the code or token for the retry. */
function checkDpopProof(oauth: OAuthContext): RequestHandler {
  return async function verifyDpopProof(req, res, next) {
    const { dpop } = oauth;
    if (req.headers.dpop !== undefined && oauth.dpopNonce !== 'off') res.setHeader('DPoP-Nonce', dpop.currentNonce());
    const proof = await dpop.verify({
      header: req.headers.dpop,
      method: 'POST',
      url: `${oauth.issuer}/token`,
      requireNonce: oauth.dpopNonce !== 'off',
    });
    if (!proof && authenticatedClient(res).dpopBoundAccessTokens) {
      throw new InvalidDpopProof('this client must send a DPoP proof: its access tokens are DPoP-bound');
    }
    res.locals.dpop = proof;
    next();
  };
}

function callGrantHandler(oauth: OAuthContext): RequestHandler {
  return async function callTokenHandler(req, res) {
    const body = await grantOf(res).handler({
      oauth,
      client: authenticatedClient(res),
      params: bodyParameters(res),
      req,
      dpop: res.locals.dpop as DpopProof | undefined,
    });
    sendJson(res, 200, body);
  };
}

export function createTokenEndpoint(oauth: OAuthContext, cors: RequestHandler): RequestHandler {
  return createPostEndpoint({
    path: '/token',
    cors,
    logger: oauth.logger,
    steps: [preventCaching, findGrantType, clientAuthentication(oauth), checkClientGrantType, checkDpopProof(oauth), callGrantHandler(oauth)],
  });
}
