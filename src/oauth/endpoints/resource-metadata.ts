/**
 * RFC 9728 protected resource metadata for the REST API (identified by the issuer URL) and, path-inserted (§3.1), the
 * GraphQL API. Every 401 and 403 points here (§5.1), so a client that knows only the API URL finds the authorization server.
 */
import type express from 'express';
import type { RequestHandler } from 'express';
import type { OAuthContext } from '../context.js';
import { ALL_SCOPES } from '../scopes.js';
import { PROTECTED_RESOURCE_METADATA_PATH, type ProtectedResource } from '../../tokens/resources.js';
import { issuerPath, pathInsertedWellKnown } from '../../http/issuer-path.js';
import { DPOP_ALGORITHMS } from '../../tokens/dpop.js';
import { onlyRead } from '../json-response.js';

export function protectedResourceMetadata(issuer: string, resource: ProtectedResource, name: string): Record<string, unknown> {
  return {
    resource: resource.identifier,
    authorization_servers: [issuer],
    scopes_supported: ALL_SCOPES,
    bearer_methods_supported: ['header'],
    // RFC 9728 §2: resource_signing_alg_values_supported is for signed responses, which these APIs do not send; the
    // algorithms that matter to a client are the DPoP proofs' (tokens are verified with the server's JWKS).
    dpop_signing_alg_values_supported: DPOP_ALGORITHMS,
    resource_name: name,
    ...(resource.documentation && { resource_documentation: resource.documentation }),
  };
}

export function addResourceMetadataEndpoints(router: express.Router, oauth: OAuthContext, cors: RequestHandler): void {
  const { rest, graphql } = oauth.resources;
  const restBody = JSON.stringify(protectedResourceMetadata(oauth.issuer, rest, 'Fieldgate REST API'));
  const graphqlBody = JSON.stringify(protectedResourceMetadata(oauth.issuer, graphql, 'Fieldgate GraphQL API'));
  const documents: [string, string][] = [
    [PROTECTED_RESOURCE_METADATA_PATH, restBody],
    [`${PROTECTED_RESOURCE_METADATA_PATH}/graphql`, graphqlBody],
  ];
  // RFC 9728 §3.1: for an issuer with a path, also where a client that derives the address looks (the host's root, the
  // resource's path appended), for a proxy that forwards it.
  if (issuerPath(oauth.issuer)) {
    for (const [resource, body] of [[rest, restBody], [graphql, graphqlBody]] as const) {
      documents.push([pathInsertedWellKnown(resource.identifier, PROTECTED_RESOURCE_METADATA_PATH), body]);
    }
  }
  for (const [path, body] of documents) {
    router.get(path, cors, function serveResourceMetadata(_req, res) {
      res.setHeader('Cache-Control', 'public, max-age=300');
      res.setHeader('Content-Type', 'application/json;charset=UTF-8');
      res.end(body);
    });
    router.options(path, cors);
    router.all(path, cors, onlyRead);
  }
}
