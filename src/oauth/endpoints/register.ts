/**
 * Dynamic client registration, `POST /register` (RFC 7591), and its management with the registration access token,
 * `GET/PUT/DELETE /register/{client_id}` (RFC 7592). Self-registered clients always see the consent page.
 */
import type { Db } from '../../db/database.js';
import express, { type ErrorRequestHandler, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { OAuthContext } from '../context.js';
import { readClientMetadata, type ClientMetadata } from '../client-metadata.js';
import { InvalidClientMetadata, InvalidHttpRequest, InvalidToken } from '../errors.js';
import { methodNotAllowed, noStore, sendJson, sendJsonError, toOAuthError } from '../json-response.js';
import type { Client } from '../stores/clients.js';
import { IpRequestThrottle } from '../ip-request-throttle.js';
import { idTokenAlg } from '../oidc/id-token.js';
import { sectorOf } from '../oidc/subject.js';
import { RegistrationTokenStore } from '../stores/registration-tokens.js';
import { refusingUnsentBodyOver } from '../../http/expect-continue.js';

export const REGISTRATION_PATH = '/register';
/** A registration is a few hundred bytes; 16 KiB leaves room for 20 long redirect URIs. */
export const REGISTRATION_BODY_LIMIT_BYTES = 16 * 1024;

const utf8 = new TextDecoder('utf-8', { fatal: true });

function seconds(date: Date): number {
  return Math.floor(date.getTime() / 1000);
}

/** A logout URI and its session flag; the flag alone is echoed only when set (it defaults to false). */
function logoutChannel(channel: 'backchannel' | 'frontchannel', uri: string | null, sessionRequired: boolean): Record<string, unknown> {
  return {
    ...(uri === null ? {} : { [`${channel}_logout_uri`]: uri }),
    ...(uri === null && !sessionRequired ? {} : { [`${channel}_logout_session_required`]: sessionRequired }),
  };
}

function clientInformation(oauth: OAuthContext, client: Client, secrets: { secret?: string; registrationAccessToken?: string } = {}): Record<string, unknown> {
  const registered = client.registrationMetadata ?? {};
  return {
    client_id: client.id,
    client_id_issued_at: seconds(client.createdAt),
    ...(secrets.secret === undefined ? {} : { client_secret: secrets.secret, client_secret_expires_at: 0 }),
    ...(secrets.registrationAccessToken === undefined ? {} : { registration_access_token: secrets.registrationAccessToken }),
    registration_client_uri: `${oauth.issuer}${REGISTRATION_PATH}/${encodeURIComponent(client.id)}`,
    client_name: client.name,
    redirect_uris: client.redirectUris,
    grant_types: client.grantTypes,
    response_types: registered.response_types ?? ['code'],
    token_endpoint_auth_method: registered.token_endpoint_auth_method ?? (client.isPublic ? 'none' : 'client_secret_basic'),
    scope: client.scopes.join(' '),
    ...(client.clientUri === null ? {} : { client_uri: client.clientUri }),
    ...(client.logoUri === null ? {} : { logo_uri: client.logoUri }),
    ...(client.jwks === null ? {} : { jwks: client.jwks }),
    ...(client.jwksUri === null ? {} : { jwks_uri: client.jwksUri }),
    ...(client.userinfoSignedResponseAlg === null ? {} : { userinfo_signed_response_alg: client.userinfoSignedResponseAlg }),
    // The algorithm in effect, ours by default: a relying party reading none would expect RS256 (OIDC Registration §2).
    id_token_signed_response_alg: idTokenAlg(client),
    subject_type: client.subjectType,
    ...(client.postLogoutRedirectUris.length === 0 ? {} : { post_logout_redirect_uris: client.postLogoutRedirectUris }),
    ...logoutChannel('backchannel', client.backchannelLogoutUri, client.backchannelLogoutSessionRequired),
    ...logoutChannel('frontchannel', client.frontchannelLogoutUri, client.frontchannelLogoutSessionRequired),
    ...(client.dpopBoundAccessTokens ? { dpop_bound_access_tokens: true } : {}),
    ...Object.fromEntries(Object.entries(registered).filter(([name]) => name !== 'response_types' && name !== 'token_endpoint_auth_method')),
  };
}

function bearerToken(req: Request): string {
  const header = req.get('authorization');
  if (!header) throw new InvalidToken('a bearer token is required', { missing: true });
  const match = /^Bearer[ ]+([A-Za-z0-9\-._~+/]+=*)[ ]*$/i.exec(header);
  if (!match) throw new InvalidToken('the Authorization header is not a valid bearer token');
  return match[1]!;
}

function preventCaching(_req: Request, res: Response, next: NextFunction): void {
  noStore(res);
  next();
}

function requireInitialAccessToken(tokens: RegistrationTokenStore): RequestHandler {
  return async function checkInitialAccessToken(req, _res, next) {
    if (!(await tokens.isValid(bearerToken(req)))) throw new InvalidToken('the initial access token is not valid');
    next();
  };
}

const readRawBody = refusingUnsentBodyOver(REGISTRATION_BODY_LIMIT_BYTES, express.raw({ type: () => true, limit: REGISTRATION_BODY_LIMIT_BYTES }));

const jsonBody: RequestHandler[] = [
  function requireJsonContentType(req, _res, next) {
    if (!req.is('application/json')) throw new InvalidClientMetadata('the request body must be application/json');
    next();
  },
  readRawBody,
  function parseJsonBody(req, res, next) {
    const raw: unknown = req.body;
    let value: unknown;
    try {
      value = JSON.parse(Buffer.isBuffer(raw) ? utf8.decode(raw) : '');
    } catch (error) {
      throw new InvalidClientMetadata('the request body is not valid UTF-8 JSON', { cause: error });
    }
    res.locals.json = value;
    next();
  },
];

function metadataOf(res: Response): ClientMetadata {
  return readClientMetadata(res.locals.json, { defaultAuthMethod: 'client_secret_basic' });
}

function register(oauth: OAuthContext): RequestHandler {
  return async function registerClient(req, res) {
    const metadata = metadataOf(res);
    const { client, secret, registrationAccessToken } = await oauth.registeredClients.registerDynamic(metadata);
    oauth.events(req, 'client_registered', { clientId: client.id });
    sendJson(res, 201, clientInformation(oauth, client, { ...(secret === undefined ? {} : { secret }), registrationAccessToken }));
  };
}

/** RFC 7592 §2: the registration access token must belong to the client named in the path. */
function authenticateRegistration(oauth: OAuthContext): RequestHandler {
  return async function checkRegistrationAccessToken(req, res, next) {
    const token = bearerToken(req);
    const client = await oauth.registeredClients.findByRegistrationToken(String(req.params.client_id), token);
    // An unknown client and a wrong token are one answer: nothing is learnt about client ids.
    if (!client) throw new InvalidToken('the registration access token is not valid for this client');
    res.locals.registeredClient = client;
    res.locals.registrationAccessToken = token;
    next();
  };
}

function registeredClient(res: Response): Client {
  return res.locals.registeredClient as Client;
}

/**
 * RFC 7592 §3: the client information response of a read or an update carries registration_access_token (REQUIRED).
 * Only its HMAC is stored, and it is not rotated, so it is the token the caller has just presented.
 */
function presentedToken(res: Response): { registrationAccessToken: string } {
  return { registrationAccessToken: res.locals.registrationAccessToken as string };
}

function readRegistration(oauth: OAuthContext): RequestHandler {
  return function readClientConfiguration(_req, res) {
    sendJson(res, 200, clientInformation(oauth, registeredClient(res), presentedToken(res)));
  };
}

/** RFC 7592 §2.2: the body replaces every metadata value; the secret and the token stay. */
function updateRegistration(oauth: OAuthContext): RequestHandler {
  return async function replaceClientConfiguration(_req, res) {
    const client = registeredClient(res);
    const body = res.locals.json as Record<string, unknown>;
    if (typeof body === 'object' && body !== null && !Array.isArray(body)) {
      if (body.client_id !== client.id) throw new InvalidClientMetadata('client_id must be the id of the client being updated');
      // A null value is an omitted one (RFC 7592 §2.2), as for every other field.
      if (body.client_secret !== undefined && body.client_secret !== null && (typeof body.client_secret !== 'string' || !oauth.registeredClients.verifySecret(client, body.client_secret))) {
        throw new InvalidClientMetadata('client_secret does not match the current secret');
      }
    }
    const metadata = metadataOf(res);
    if ((metadata.tokenEndpointAuthMethod === 'none') !== client.isPublic) {
      throw new InvalidClientMetadata('token_endpoint_auth_method cannot change between none and a secret-based method; register a new client');
    }
    if ((metadata.tokenEndpointAuthMethod === 'private_key_jwt') !== (client.tokenEndpointAuthMethod === 'private_key_jwt')) {
      throw new InvalidClientMetadata('token_endpoint_auth_method cannot change between private_key_jwt and a client secret; register a new client');
    }
    // Either change would give every user of the client another `sub`, which relying parties key their accounts on.
    if (metadata.subjectType !== client.subjectType) throw new InvalidClientMetadata('subject_type cannot change; register a new client');
    if (client.subjectType === 'pairwise' && sectorOf(metadata.redirectUris) !== sectorOf(client.redirectUris)) {
      throw new InvalidClientMetadata('the redirect URIs of a pairwise client must stay on their host (the sector its subject identifiers come from)');
    }
    const updated = await oauth.registeredClients.replaceMetadata(client.id, metadata);
    if (!updated) throw new InvalidToken('the registration access token is not valid for this client');
    oauth.clients.forget(client.id);
    sendJson(res, 200, clientInformation(oauth, updated, presentedToken(res)));
  };
}

function deleteRegistration(oauth: OAuthContext): RequestHandler {
  return async function deleteClient(req, res) {
    const client = registeredClient(res);
    await oauth.registeredClients.delete(client.id);
    oauth.clients.forget(client.id);
    oauth.events(req, 'client_deleted', { clientId: client.id });
    res.status(204).end();
  };
}

function registrationErrorHandler(oauth: OAuthContext): ErrorRequestHandler {
  return function serializeRegistrationError(error, req, res, next) {
    if (res.headersSent) {
      next(error);
      return;
    }
    let oauthError = toOAuthError(error);
    if (oauthError.status === 413) oauthError = new InvalidHttpRequest(`the request body is larger than ${REGISTRATION_BODY_LIMIT_BYTES} bytes`, { status: 413 });
    if (!oauthError.expose) oauth.logger.error({ err: error, reqId: req.id }, 'registration endpoint failed');
    if (oauthError instanceof InvalidToken) {
      res.setHeader('WWW-Authenticate', oauthError.missing ? 'Bearer realm="fieldgate"' : `Bearer realm="fieldgate", error="invalid_token"`);
    }
    sendJsonError(res, oauthError);
  };
}

export interface RegistrationSetup {
  mode: 'open' | 'token' | 'off';
  rateLimit: number;
  db: Db;
}

export function addRegistrationEndpoint(router: express.Router, oauth: OAuthContext, cors: RequestHandler, { mode, rateLimit, db }: RegistrationSetup): void {
  if (mode === 'off') return;
  const throttle = new IpRequestThrottle(db, 'register', rateLimit);
  const admission: RequestHandler[] = mode === 'token' ? [requireInitialAccessToken(new RegistrationTokenStore(db))] : [];
  router
    .route(REGISTRATION_PATH)
    .options(cors)
    .post(cors, preventCaching, throttle.limit('too many registration requests from this address; try again later'), ...admission, ...jsonBody, register(oauth))
    .all(cors, methodNotAllowed('POST'));
  const manage = [cors, preventCaching, authenticateRegistration(oauth)];
  router
    .route(`${REGISTRATION_PATH}/:client_id`)
    .options(cors)
    .get(...manage, readRegistration(oauth))
    .put(...manage, ...jsonBody, updateRegistration(oauth))
    .delete(...manage, deleteRegistration(oauth))
    .all(cors, methodNotAllowed('GET, PUT, DELETE'));
  router.use(REGISTRATION_PATH, registrationErrorHandler(oauth));
}
