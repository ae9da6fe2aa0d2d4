/**
 * Client authentication at the token, revocation and introspection endpoints (RFC 6749 §2.3):
 *
 * - `client_secret_basic`: `Authorization: Basic base64(urlencode(id):urlencode(secret))`;
 * - `client_secret_post`: `client_id` and `client_secret` in the form body;
 * - `none`: a public client sends only `client_id` (and must prove possession through PKCE).
 *
 * Using two methods at once is invalid_request. A failure is invalid_client — 401 with
 * `WWW-Authenticate: Basic` when the header was tried. Secrets are compared in constant time
 * as HMACs (see clients.ts), so authentication costs microseconds.
 */
import type { Request, RequestHandler, Response } from 'express';
import type { Client } from './clients.js';
import type { OAuthContext } from './context.js';
import { InvalidClient, InvalidRequest, OAuthError } from './errors.js';
import { bodyParameters, type Parameters } from './params.js';
import type { ClientCache } from './stores/client-cache.js';

export type ClientAuthMethod = 'client_secret_basic' | 'client_secret_post' | 'none';

export const CLIENT_AUTH_METHODS: readonly ClientAuthMethod[] = ['client_secret_basic', 'client_secret_post', 'none'];

/** Body parameters client authentication reads, checked for repetition like any other. */
export const CLIENT_AUTH_PARAMETERS = ['client_id', 'client_secret'] as const;

export interface ClientCredentials {
  method: ClientAuthMethod;
  clientId: string;
  secret: string | undefined;
}

export interface AuthenticatedClient {
  client: Client;
  method: ClientAuthMethod;
}

/** RFC 6749 Appendix B: the form-urlencoding applied to both halves of the Basic credentials. */
function formDecode(value: string): string {
  return decodeURIComponent(value.replace(/\+/g, ' '));
}

function parseBasic(header: string): { clientId: string; secret: string } {
  const fail = (description: string) => new InvalidClient(description, { viaAuthorizationHeader: true });
  const match = /^Basic[ ]+([A-Za-z0-9+/]+={0,2})[ ]*$/i.exec(header);
  if (!match) throw fail('the Authorization header must carry Basic client credentials');
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw fail('the Basic credentials must be client_id:client_secret');
  try {
    return { clientId: formDecode(decoded.slice(0, colon)), secret: formDecode(decoded.slice(colon + 1)) };
  } catch (error) {
    throw new InvalidClient('the Basic credentials are not form-urlencoded', { viaAuthorizationHeader: true, cause: error });
  }
}

/** Which credentials the request presents, before any lookup. */
export function readClientCredentials(req: Request, params: Parameters): ClientCredentials {
  params.rejectRepeated(CLIENT_AUTH_PARAMETERS);
  const header = req.get('authorization');
  const bodyId = params.get('client_id');
  const bodySecret = params.get('client_secret');
  if (header !== undefined) {
    if (bodySecret !== undefined) {
      throw new InvalidRequest('send the client secret in the Authorization header or in the body, not both');
    }
    const basic = parseBasic(header);
    if (bodyId !== undefined && bodyId !== basic.clientId) {
      throw new InvalidRequest('the client_id parameter does not match the Authorization header');
    }
    if (!basic.clientId) throw new InvalidClient('the Basic credentials name no client', { viaAuthorizationHeader: true });
    return { method: 'client_secret_basic', clientId: basic.clientId, secret: basic.secret };
  }
  if (bodyId === undefined) {
    throw new InvalidClient('client authentication is required: send client_id (and client_secret for a confidential client)');
  }
  return bodySecret === undefined
    ? { method: 'none', clientId: bodyId, secret: undefined }
    : { method: 'client_secret_post', clientId: bodyId, secret: bodySecret };
}

/**
 * The client the credentials prove, or invalid_client. Unknown client and wrong secret read
 * the same, so the endpoint does not confirm which client ids exist.
 */
export async function authenticateClient(clients: ClientCache, credentials: ClientCredentials): Promise<AuthenticatedClient> {
  const viaAuthorizationHeader = credentials.method === 'client_secret_basic';
  const client = await clients.find(credentials.clientId);
  if (!client) throw new InvalidClient('client authentication failed', { viaAuthorizationHeader });
  if (client.isPublic) {
    if (credentials.secret !== undefined && credentials.secret !== '') {
      throw new InvalidClient('this is a public client: it has no secret and authenticates with client_id alone', { viaAuthorizationHeader });
    }
    return { client, method: 'none' };
  }
  if (credentials.secret === undefined) {
    throw new InvalidClient('this is a confidential client: authenticate with its client_secret', { viaAuthorizationHeader });
  }
  if (!clients.verifySecret(client, credentials.secret)) {
    throw new InvalidClient('client authentication failed', { viaAuthorizationHeader });
  }
  return { client, method: credentials.method };
}

/**
 * Pipeline step: authenticates the client of a form request (after `formBody`) and keeps it
 * for `authenticatedClient`. Failures are logged as security events with the claimed id.
 */
export function clientAuthentication(oauth: OAuthContext): RequestHandler {
  return async function authenticateRequestClient(req, res, next) {
    let credentials: ClientCredentials | undefined;
    try {
      credentials = readClientCredentials(req, bodyParameters(res));
      res.locals.client = (await authenticateClient(oauth.clients, credentials)).client;
    } catch (error) {
      oauth.events(req, 'client_authentication_failed', {
        clientId: credentials?.clientId.slice(0, 200),
        reason: error instanceof OAuthError ? error.code : undefined,
      });
      throw error;
    }
    next();
  };
}

/** The client `clientAuthentication` proved. */
export function authenticatedClient(res: Response): Client {
  const client = res.locals.client as Client | undefined;
  if (!client) throw new Error('clientAuthentication must run first');
  return client;
}
