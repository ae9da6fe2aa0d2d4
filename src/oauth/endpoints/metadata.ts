/**
 * Authorization server metadata (RFC 8414) and the OpenID Provider configuration (OIDC Discovery §3): one generator,
 * one document, served at both addresses so they can never disagree.
 */
import type express from 'express';
import type { RequestHandler } from 'express';
import { CLIENT_AUTH_METHODS } from '../client-auth.js';
import type { OAuthContext } from '../context.js';
import { CODE_CHALLENGE_METHODS } from '../pkce.js';
import { GRANT_TYPES_SUPPORTED, POLICY } from '../../policy.js';
import { DPOP_ALGORITHMS } from '../../tokens/dpop.js';
import { ASSERTION_ALGORITHMS } from '../client-assertion.js';
import { SUPPORTED_SCOPES } from '../scopes.js';
import { PROMPT_VALUES } from '../authorization-request.js';
import { PROFILE_CLAIMS } from '../oidc/claims.js';
import { SUBJECT_TYPES } from '../oidc/subject.js';
import { SIGNING_ALGS } from '../../tokens/signing-keys.js';
import { END_SESSION_PATH, USERINFO_PATH } from '../oidc/paths.js';
import { DEVICE_AUTHORIZATION_PATH } from './device-authorization.js';
import { issuerPath, pathInsertedWellKnown } from '../../http/issuer-path.js';
import { onlyRead } from '../json-response.js';

export const METADATA_PATH = '/.well-known/oauth-authorization-server';
export const JWKS_PATH = '/.well-known/jwks.json';
export const OPENID_CONFIGURATION_PATH = '/.well-known/openid-configuration';

export interface MetadataOptions {
  registration?: boolean;
  clientIdMetadataDocuments?: boolean;
}

export function authorizationServerMetadata(issuer: string, options: MetadataOptions = {}): Record<string, unknown> {
  return {
    issuer,
    authorization_endpoint: `${issuer}/authorize`,
    token_endpoint: `${issuer}/token`,
    revocation_endpoint: `${issuer}/revoke`,
    introspection_endpoint: `${issuer}/introspect`,
    device_authorization_endpoint: `${issuer}${DEVICE_AUTHORIZATION_PATH}`,
    jwks_uri: `${issuer}${JWKS_PATH}`,
    scopes_supported: SUPPORTED_SCOPES,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: GRANT_TYPES_SUPPORTED,
    code_challenge_methods_supported: CODE_CHALLENGE_METHODS,
    token_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
    token_endpoint_auth_signing_alg_values_supported: ASSERTION_ALGORITHMS,
    revocation_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
    revocation_endpoint_auth_signing_alg_values_supported: ASSERTION_ALGORITHMS,
    // RFC 7662 §2.1: only an authenticated (confidential) client may introspect.
    introspection_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS.filter((method) => method !== 'none'),
    introspection_endpoint_auth_signing_alg_values_supported: ASSERTION_ALGORITHMS,
    authorization_response_iss_parameter_supported: true,
    dpop_signing_alg_values_supported: DPOP_ALGORITHMS,
    // OpenID Connect Discovery 1.0 §3
    userinfo_endpoint: `${issuer}${USERINFO_PATH}`,
    end_session_endpoint: `${issuer}${END_SESSION_PATH}`,
    subject_types_supported: SUBJECT_TYPES,
    // ID Tokens and signed userinfo answers may use any algorithm we hold a current key for (RS256: OIDC Core §15.1).
    id_token_signing_alg_values_supported: SIGNING_ALGS,
    userinfo_signing_alg_values_supported: SIGNING_ALGS,
    claims_supported: ['iss', 'sub', 'aud', 'exp', 'iat', 'auth_time', 'nonce', 'at_hash', 'sid', ...PROFILE_CLAIMS],
    prompt_values_supported: PROMPT_VALUES,
    claims_parameter_supported: false,
    request_parameter_supported: false,
    request_uri_parameter_supported: false,
    backchannel_logout_supported: true,
    backchannel_logout_session_supported: true,
    frontchannel_logout_supported: true,
    frontchannel_logout_session_supported: true,
    ...(options.registration ? { registration_endpoint: `${issuer}/register` } : {}),
    client_id_metadata_document_supported: options.clientIdMetadataDocuments ?? false,
  };
}

export function addMetadataEndpoint(router: express.Router, oauth: OAuthContext, cors: RequestHandler): void {
  const body = JSON.stringify(
    authorizationServerMetadata(oauth.issuer, {
      registration: oauth.registration !== 'off',
      clientIdMetadataDocuments: oauth.clientIdMetadataDocuments,
    }),
  );
  // RFC 8414 §3.1: an issuer with a path has its metadata at the host's root with the path appended; served here too, for
  // a proxy that forwards it (the other addresses are reached through the issuer's path).
  const paths = [METADATA_PATH, OPENID_CONFIGURATION_PATH, ...(issuerPath(oauth.issuer) ? [pathInsertedWellKnown(oauth.issuer, METADATA_PATH)] : [])];
  router.get(paths, cors, function serveMetadata(_req, res) {
    res.setHeader('Cache-Control', `public, max-age=${POLICY.metadataMaxAgeSeconds.value}`);
    res.setHeader('Content-Type', 'application/json;charset=UTF-8');
    res.end(body);
  });
  router.options(paths, cors);
  router.all(paths, cors, onlyRead);
}
