/**
 * The token endpoint, `POST /token` (RFC 6749 §3.2), as a pipeline of named steps:
 * read the form body → find the grant type → authenticate the client → check the client may
 * use that grant → run the grant's handler. Adding a grant type is one module in grants/ and
 * one line in GRANTS.
 */
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { authenticatedClient, clientAuthentication } from '../client-auth.js';
import type { OAuthContext } from '../context.js';
import { InvalidDpopProof, InvalidRequest, UnauthorizedClient, UnsupportedGrantType } from '../errors.js';
import * as authorizationCode from '../grants/authorization-code.js';
import type { Grant } from '../grants/grant.js';
import * as refreshToken from '../grants/refresh-token.js';
import { jsonErrorHandler, noStore, onlyPost, sendJson } from '../json-response.js';
import { bodyParameters, formBody } from '../params.js';
import type { DpopProof } from '../../tokens/dpop.js';

const GRANTS: ReadonlyMap<string, Grant> = new Map([authorizationCode, refreshToken].map((grant) => [grant.grantType, grant]));
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

/**
 * RFC 9449 §5: a `DPoP` header is verified before any grant runs, so a proof refused for its
 * nonce leaves the code or refresh token unused for the retry. Every answer to a request with a
 * proof carries a fresh `DPoP-Nonce`.
 */
function checkDpopProof(oauth: OAuthContext): RequestHandler {
  return async function verifyDpopProof(req, res, next) {
    const { dpop, config } = oauth.runtime;
    if (req.headers.dpop !== undefined && config.dpopNonce !== 'off') res.setHeader('DPoP-Nonce', dpop.currentNonce());
    const proof = await dpop.verify({
      header: req.headers.dpop,
      method: 'POST',
      url: `${oauth.issuer}/token`,
      requireNonce: config.dpopNonce !== 'off',
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

export function addTokenEndpoint(router: express.Router, oauth: OAuthContext, cors: RequestHandler): void {
  router
    .route('/token')
    .options(cors)
    .post(cors, preventCaching, ...formBody, findGrantType, clientAuthentication(oauth), checkClientGrantType, checkDpopProof(oauth), callGrantHandler(oauth))
    .all(cors, onlyPost);
  router.use('/token', jsonErrorHandler(oauth.runtime.logger));
}
