/** Authorization server metadata, `GET /.well-known/oauth-authorization-server` (RFC 8414). */
import type express from 'express';
import type { RequestHandler } from 'express';
import { CLIENT_AUTH_METHODS } from '../client-auth.js';
import type { OAuthContext } from '../context.js';
import { CODE_CHALLENGE_METHODS } from '../pkce.js';
import { ALL_SCOPES } from '../scopes.js';
import { GRANT_TYPES_SUPPORTED } from './token.js';
import { DEVICE_AUTHORIZATION_PATH } from './device-authorization.js';

export const METADATA_PATH = '/.well-known/oauth-authorization-server';
export const JWKS_PATH = '/.well-known/jwks.json';

export function authorizationServerMetadata(issuer: string): Record<string, unknown> {
  return {
    issuer,
    authorization_endpoint: `${issuer}/authorize`,
    token_endpoint: `${issuer}/token`,
    revocation_endpoint: `${issuer}/revoke`,
    introspection_endpoint: `${issuer}/introspect`,
    device_authorization_endpoint: `${issuer}${DEVICE_AUTHORIZATION_PATH}`,
    jwks_uri: `${issuer}${JWKS_PATH}`,
    scopes_supported: ALL_SCOPES,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: GRANT_TYPES_SUPPORTED,
    code_challenge_methods_supported: CODE_CHALLENGE_METHODS,
    token_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
    revocation_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
    // RFC 7662 §2.1: only an authenticated (confidential) client may introspect.
    introspection_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS.filter((method) => method !== 'none'),
    authorization_response_iss_parameter_supported: true,
  };
}

export function addMetadataEndpoint(router: express.Router, oauth: OAuthContext, cors: RequestHandler): void {
  const body = JSON.stringify(authorizationServerMetadata(oauth.issuer));
  router.get(METADATA_PATH, cors, function serveMetadata(_req, res) {
    res.setHeader('Cache-Control', 'public, max-age=300');
    res.setHeader('Content-Type', 'application/json;charset=UTF-8');
    res.end(body);
  });
  router.options(METADATA_PATH, cors);
}
