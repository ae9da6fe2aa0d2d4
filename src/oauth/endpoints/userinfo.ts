/**
 * The UserInfo endpoint, `GET|POST /userinfo` (OIDC Core §5.3): JSON, or a signed JWT for a client that registered
 * `userinfo_signed_response_alg` (§5.3.2). It takes Bearer tokens — in the Authorization header, or in a POST's form
 * body (RFC 6750 §2.2, which §5.3.1 allows) — and, like the APIs, DPoP-bound tokens with their proof (RFC 9449 §7).
 * Errors are RFC 6750 / RFC 9449 §7.1 challenges with the §5.2 JSON body.
 */
import type express from 'express';
import type { Request, RequestHandler, Response } from 'express';
import type { OAuthContext } from '../context.js';
import { InvalidRequest, InvalidToken } from '../errors.js';
import { methodNotAllowed, noStore, sendJson, sendJsonError, toOAuthError } from '../json-response.js';
import { readFormBody } from '../params.js';
import { userClaims } from '../oidc/claims.js';
import { USERINFO_PATH } from '../oidc/paths.js';
import { subjectFor } from '../oidc/subject.js';
import { signUserinfo, USERINFO_JWT_CONTENT_TYPE } from '../oidc/signed-userinfo.js';
import { authenticateRequest, challengeHeaders, requireScope } from '../../tokens/bearer.js';
import type { Principal } from '../../tokens/access-token.js';

const FORM_TYPE = 'application/x-www-form-urlencoded';

/**
 * The Authorization header, or a Bearer token from a POST's form body (RFC 6750 §2.2); never both (§2). A DPoP token
 * in the body is read as Bearer, and so refused: RFC 9449 §7.1 wants it in the header, beside its proof.
 */
async function credentials(req: Request, res: Response): Promise<string | undefined> {
  const header = req.headers.authorization;
  if (req.method !== 'POST' || !req.is(FORM_TYPE)) return header;
  // Read here, not as route middleware, so that the body's refusals get this endpoint's challenge too.
  const token = (await readFormBody(req, res)).get('access_token');
  if (token === undefined) return header;
  if (header) throw new InvalidRequest('send the access token in the Authorization header or in the body, not in both');
  return `Bearer ${token}`;
}

/** The caller's access token, checked as the APIs check theirs: a DPoP token's proof is for this URL and method. */
async function authenticate(oauth: OAuthContext, req: Request, res: Response): Promise<Principal> {
  return authenticateRequest(
    { accessTokens: oauth.accessTokens, dpop: oauth.dpop, config: { issuer: oauth.issuer, dpopNonce: oauth.dpopNonce } },
    { authorization: await credentials(req, res), dpop: req.headers.dpop, method: req.method, path: req.originalUrl },
  );
}

function userinfoHandler(oauth: OAuthContext): RequestHandler {
  return async function userinfo(req: Request, res: Response): Promise<void> {
    noStore(res);
    try {
      const principal = await authenticate(oauth, req, res);
      // A refusal of the token is challenged under the scheme it came with (RFC 9449 §7.1).
      const refuseToken = (message: string) => new InvalidToken(message, principal.jkt === undefined ? {} : { dpop: { error: 'invalid_token' } });
      // RFC 8707: a token issued only for an external resource server (RESOURCE_INDICATORS) is that server's, and
      // must not read the user's claims here (node-oidc-provider refuses every audience-restricted token at userinfo).
      if (!principal.audience.some((audience) => oauth.resources.defaults.includes(audience))) throw refuseToken('the access token was not issued for this server');
      requireScope(principal, 'openid');
      if (principal.userId === null) throw refuseToken('this access token speaks for no user');
      const [user, client] = await Promise.all([oauth.users.find(principal.userId), oauth.clients.find(principal.clientId)]);
      if (!user || !client) throw refuseToken('the access token no longer speaks for an account');
      const claims = { sub: subjectFor(client, user.id, oauth.pairwiseSecret), ...userClaims(user, principal.scopes) };
      if (client.userinfoSignedResponseAlg === null) return sendJson(res, 200, claims);
      const jwt = await signUserinfo(oauth, client, claims);
      res.status(200).setHeader('Content-Type', USERINFO_JWT_CONTENT_TYPE).end(jwt);
    } catch (error) {
      const oauthError = toOAuthError(error);
      if (!oauthError.expose) oauth.logger.error({ err: error, reqId: req.id }, 'userinfo failed');
      else res.set(challengeHeaders(oauthError));
      sendJsonError(res, oauthError);
    }
  };
}

export function addUserinfoEndpoint(router: express.Router, oauth: OAuthContext, cors: RequestHandler): void {
  const handler = userinfoHandler(oauth);
  router.route(USERINFO_PATH).options(cors).get(cors, handler).post(cors, handler).all(cors, methodNotAllowed('GET, POST, OPTIONS'));
}
