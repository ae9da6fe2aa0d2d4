/** Authorization server metadata (RFC 8414). */
import { expect, it } from 'vitest';
import request from 'supertest';
import { describeEachDatabase } from '../../support/runtime.js';
import { buildClient } from '../../support/oauth.js';

describeEachDatabase('GET /.well-known/oauth-authorization-server', (context) => {
  it('describes every endpoint and capability', async () => {
    const res = await request(context().app).get('/.well-known/oauth-authorization-server');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const issuer = context().config.issuer;
    expect(res.body).toMatchObject({
      issuer,
      authorization_endpoint: `${issuer}/authorize`,
      token_endpoint: `${issuer}/token`,
      revocation_endpoint: `${issuer}/revoke`,
      introspection_endpoint: `${issuer}/introspect`,
      device_authorization_endpoint: `${issuer}/device_authorization`,
      jwks_uri: `${issuer}/.well-known/jwks.json`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token', 'client_credentials', 'urn:ietf:params:oauth:grant-type:device_code'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'],
      introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'private_key_jwt'],
      revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'],
      // RFC 8414 §2: asymmetric algorithms only — "none" and HMAC are never accepted.
      token_endpoint_auth_signing_alg_values_supported: ['ES256', 'ES384', 'EdDSA', 'Ed25519', 'PS256', 'RS256'],
      introspection_endpoint_auth_signing_alg_values_supported: ['ES256', 'ES384', 'EdDSA', 'Ed25519', 'PS256', 'RS256'],
      revocation_endpoint_auth_signing_alg_values_supported: ['ES256', 'ES384', 'EdDSA', 'Ed25519', 'PS256', 'RS256'],
      dpop_signing_alg_values_supported: ['ES256', 'EdDSA', 'Ed25519', 'RS256'],
      scopes_supported: ['products:read', 'orders:read', 'orders:write', 'openid', 'profile', 'email', 'offline_access'],
      authorization_response_iss_parameter_supported: true,
    });
  });

  it('advertises endpoints that exist', async () => {
    const { body } = await request(context().app).get('/.well-known/oauth-authorization-server');
    const path = (url: string) => new URL(url).pathname;
    expect((await request(context().app).get(path(body.jwks_uri))).status).toBe(200);
    for (const endpoint of [body.token_endpoint, body.revocation_endpoint, body.introspection_endpoint, body.device_authorization_endpoint]) {
      const res = await request(context().app).post(path(endpoint)).type('form').send({});
      // Answered by the endpoint itself, in OAuth JSON (introspection insists on authentication: 401).
      expect(res.status).toBe(endpoint === body.introspection_endpoint ? 401 : 400);
      expect(res.body.error).toMatch(/^invalid_/);
    }
  });

  it('serves every grant type it lists: each reaches its own handler at /token (RFC 8414 §2)', async () => {
    const { body } = await request(context().app).get('/.well-known/oauth-authorization-server');
    const client = await buildClient(context().runtime, { grantTypes: body.grant_types_supported as string[] });
    for (const grantType of body.grant_types_supported as string[]) {
      const res = await request(context().app).post('/token').type('form').auth(client.id, client.secret!).send({ grant_type: grantType });
      // Never unsupported_grant_type or unauthorized_client: a missing parameter, or (client_credentials) a token.
      expect([200, 400]).toContain(res.status);
      expect(res.body.error ?? 'none').not.toMatch(/^(unsupported_grant_type|unauthorized_client)$/);
    }
  });
});

describeEachDatabase('GET /.well-known/oauth-protected-resource (RFC 9728)', (context) => {
  it('claims no response signing, which the APIs do not do, and names the DPoP proof algorithms (§2)', async () => {
    const issuer = context().config.issuer;
    for (const [path, resource] of [['/.well-known/oauth-protected-resource', issuer], ['/.well-known/oauth-protected-resource/graphql', `${issuer}/graphql`]]) {
      const res = await request(context().app).get(path!);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ resource, authorization_servers: [issuer], bearer_methods_supported: ['header'] });
      expect(res.body).not.toHaveProperty('resource_signing_alg_values_supported');
      expect(res.body.dpop_signing_alg_values_supported).toEqual(['ES256', 'EdDSA', 'Ed25519', 'RS256']);
    }
  });

  it.each(['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration', '/.well-known/jwks.json', '/.well-known/oauth-protected-resource'])(
    'answers other methods on %s with 405, Allow and an OAuth error body, not 404',
    async (path) => {
      for (const method of ['post', 'put', 'patch', 'delete'] as const) {
        const res = await request(context().app)[method](path);
        expect([method, res.status, res.headers.allow]).toEqual([method, 405, 'GET, HEAD, OPTIONS']);
        expect(res.body).toMatchObject({ error: 'invalid_request' });
      }
    },
  );
});
