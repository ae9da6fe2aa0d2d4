/**
 * Client authentication (RFC 6749 §2.3): client_secret_basic, client_secret_post, none (PKCE proves possession) and
 * private_key_jwt (RFC 7523 §2.2), the only method a client registered for it may use. Two methods at once is
 * invalid_request; secrets are compared in constant time as HMACs (see clients.ts).
 */
import type { Request, RequestHandler, Response } from 'express';
import type { Client } from './stores/clients.js';
import type { OAuthContext } from './context.js';
import { InvalidClient, InvalidRequest, OAuthError } from './errors.js';
import { bodyParameters, type Parameters } from './params.js';
import type { ClientCache } from './stores/client-cache.js';
import { assertionClientId, CLIENT_ASSERTION_TYPE, type ClientAssertions } from './client-assertion.js';

export type ClientAuthMethod = 'client_secret_basic' | 'client_secret_post' | 'none' | 'private_key_jwt';

export const CLIENT_AUTH_METHODS: readonly ClientAuthMethod[] = ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'];

export const CLIENT_AUTH_PARAMETERS = ['client_id', 'client_secret', 'client_assertion', 'client_assertion_type'] as const;

export interface ClientCredentials {
  method: ClientAuthMethod;
  clientId: string;
  secret: string | undefined;
  assertion?: string;
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

/** RFC 7521 §4.2: `client_assertion` + `client_assertion_type`; the client is the assertion's `sub`. */
function readAssertion(req: Request, params: Parameters): ClientCredentials {
  const type = params.get('client_assertion_type');
  const assertion = params.get('client_assertion');
  if (req.get('authorization') !== undefined || params.get('client_secret') !== undefined) {
    throw new InvalidRequest('use one client authentication method: a client assertion, or a client secret');
  }
  if (type === undefined || assertion === undefined) throw new InvalidRequest('client_assertion and client_assertion_type go together');
  if (type !== CLIENT_ASSERTION_TYPE) throw new InvalidClient(`client_assertion_type must be ${CLIENT_ASSERTION_TYPE}`);
  const clientId = assertionClientId(assertion);
  if (clientId === undefined) throw new InvalidClient('client_assertion is not a JWT naming its client in sub');
  const bodyId = params.get('client_id');
  if (bodyId !== undefined && bodyId !== clientId) throw new InvalidClient('client_id does not match the client assertion');
  return { method: 'private_key_jwt', clientId, secret: undefined, assertion };
}

export function readClientCredentials(req: Request, params: Parameters): ClientCredentials {
  params.rejectRepeated(CLIENT_AUTH_PARAMETERS);
  if (params.has('client_assertion') || params.has('client_assertion_type')) return readAssertion(req, params);
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

const AUTHENTICATION_FAILED = 'client authentication failed';

/** Every failure reads the same, so the endpoint does not confirm which client ids exist or what kind they are. */
export async function authenticateClient(
  clients: ClientCache,
  assertions: ClientAssertions,
  credentials: ClientCredentials,
): Promise<AuthenticatedClient> {
  const viaAuthorizationHeader = credentials.method === 'client_secret_basic';
  const fail = (cause?: unknown) => new InvalidClient(AUTHENTICATION_FAILED, { viaAuthorizationHeader, cause });
  let client = await clients.find(credentials.clientId);
  if (!client) throw fail();
  // A client registered for private_key_jwt authenticates with nothing else, and only it may use it.
  if ((client.tokenEndpointAuthMethod === 'private_key_jwt') !== (credentials.method === 'private_key_jwt')) throw fail();
  if (credentials.method === 'private_key_jwt') {
    try {
      await assertions.verify(client, credentials.assertion!);
    } catch (error) {
      throw fail(error);
    }
    return { client, method: 'private_key_jwt' };
  }
  if (client.isPublic) {
    if (credentials.secret !== undefined && credentials.secret !== '') throw fail();
    return { client, method: 'none' };
  }
  if (credentials.secret === undefined) throw fail();
  if (!clients.verifySecret(client, credentials.secret)) {
    // The secret may have been rotated on another instance (`fieldgate client rotate-secret`) since this one cached the
    // client: one more read before refusing, so the new secret works at once everywhere.
    client = await clients.reread(credentials.clientId);
    if (!client || client.isPublic || !clients.verifySecret(client, credentials.secret)) throw fail();
  }
  if (!allowsSecretMethod(client, credentials.method)) throw fail();
  return { client, method: credentials.method };
}

/**
 * RFC 7591 §2: a self-registered client chose its secret method, so the other one is refused, as a stolen secret sent
 * another way would be. Clients an operator created (`fieldgate client create`) may use either.
 */
function allowsSecretMethod(client: Client, method: ClientAuthMethod): boolean {
  const registered = client.registrationType === 'dynamic' ? client.registrationMetadata?.token_endpoint_auth_method : undefined;
  return registered !== 'client_secret_basic' && registered !== 'client_secret_post' ? true : registered === method;
}

export interface ClientAuthenticationOptions {
  /** RFC 7662 §2.1: a public client's client_id proves nothing. */
  confidentialOnly?: boolean;
}

/** Failures are logged as security events with the claimed id. */
export function clientAuthentication(oauth: OAuthContext, options: ClientAuthenticationOptions = {}): RequestHandler {
  return async function authenticateRequestClient(req, res, next) {
    let credentials: ClientCredentials | undefined;
    try {
      credentials = readClientCredentials(req, bodyParameters(res));
      // Refused before the lookup, so the answer is the same whether the id exists or not.
      if (options.confidentialOnly && credentials.method === 'none') throw new InvalidClient(AUTHENTICATION_FAILED);
      const authenticated = await authenticateClient(oauth.clients, oauth.assertions, credentials);
      // A public client sending `Basic id:` (empty secret) authenticates as `none` too: it still proves nothing.
      if (options.confidentialOnly && authenticated.method === 'none') throw new InvalidClient(AUTHENTICATION_FAILED);
      res.locals.client = authenticated.client;
    } catch (error) {
      oauth.events(req, 'client_authentication_failed', {
        clientId: credentials?.clientId.slice(0, 200),
        reason: error instanceof OAuthError ? error.code : undefined,
        // Why an assertion failed (expired, replayed, wrong audience…): for the operator only.
        ...(error instanceof InvalidClient && error.cause instanceof Error ? { detail: error.cause.message.slice(0, 200) } : {}),
      });
      if (options.confidentialOnly && error instanceof InvalidClient && !error.viaAuthorizationHeader) {
        // 401 with `WWW-Authenticate: Basic`, as if the header had been tried: it must be.
        throw new InvalidClient(AUTHENTICATION_FAILED, { viaAuthorizationHeader: true, cause: error });
      }
      throw error;
    }
    next();
  };
}

export function authenticatedClient(res: Response): Client {
  const client = res.locals.client as Client | undefined;
  if (!client) throw new Error('clientAuthentication must run first');
  return client;
}
