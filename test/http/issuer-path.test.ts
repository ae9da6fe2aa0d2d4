/**
 * An ISSUER with a path: every URL the metadata hands out works, whether the request keeps the path (no proxy, or a
 * proxy that forwards it) or a proxy stripped it, and the well-known documents are also where RFC 8414 §3.1 and RFC 9728
 * §3.1 put them for such an identifier.
 */
import { expect, it } from 'vitest';
import request from 'supertest';
import { describeEachDatabase } from '../support/runtime.js';
import { buildClient } from '../support/oauth.js';
import { dpopKey, dpopProof } from '../support/dpop.js';

const ISSUER = 'http://localhost:4714/auth';
const pathOf = (url: string) => new URL(url).pathname + new URL(url).search;

describeEachDatabase(
  'an ISSUER with a path',
  (context) => {
    const app = () => request(context().app);

    async function serviceToken(tokenEndpoint: string) {
      const service = await buildClient(context().runtime, { redirectUris: [], grantTypes: ['client_credentials'], scope: 'products:read' });
      const res = await app().post(pathOf(tokenEndpoint)).auth(service.id, service.secret!).type('form').send({ grant_type: 'client_credentials' });
      expect(res.status, res.text).toBe(200);
      return res.body.access_token as string;
    }

    it('serves the metadata under the path, and at the path-inserted address of RFC 8414 §3.1', async () => {
      for (const path of ['/auth/.well-known/openid-configuration', '/auth/.well-known/oauth-authorization-server', '/.well-known/oauth-authorization-server/auth']) {
        const res = await app().get(path);
        expect(res.status, path).toBe(200);
        expect(res.body.issuer).toBe(ISSUER);
        expect(res.body.token_endpoint).toBe(`${ISSUER}/token`);
      }
    });

    it('answers every endpoint the metadata names at its own path, and at the root for a proxy that strips the path', async () => {
      const metadata = (await app().get('/auth/.well-known/openid-configuration')).body;
      for (const url of [metadata.jwks_uri, metadata.token_endpoint, metadata.authorization_endpoint, metadata.introspection_endpoint]) {
        const path = pathOf(url);
        expect(path.startsWith('/auth/'), url).toBe(true);
        const [kept, stripped] = await Promise.all([app().get(path), app().get(path.slice('/auth'.length))]);
        expect(kept.status, url).not.toBe(404);
        expect(kept.status).toBe(stripped.status);
      }
      // The sign-in link of a code flow lands on the sign-in page, whose form posts under the path too.
      const client = await buildClient(context().runtime);
      const page = await app()
        .get('/auth/authorize')
        .query({ response_type: 'code', client_id: client.id, redirect_uri: client.redirectUri, code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' });
      expect(page.status).toBe(200);
      expect(page.text).toContain(`action="${ISSUER}/`);
    });

    it('serves the APIs under the path to a token from its token endpoint, and names resource metadata that answers', async () => {
      const metadata = (await app().get('/.well-known/oauth-authorization-server/auth')).body;
      const token = await serviceToken(metadata.token_endpoint);
      const products = await app().get('/auth/products').query({ fields: 'id,name', limit: 2 }).set('Authorization', `Bearer ${token}`);
      expect(products.status, products.text).toBe(200);
      const graphql = await app().post('/auth/graphql').set('Authorization', `Bearer ${token}`).send({ query: '{ products(limit: 1) { id } }' });
      expect(graphql.status, graphql.text).toBe(200);
      expect(graphql.body.errors).toBeUndefined();

      const challenge = (await app().get('/auth/products')).headers['www-authenticate'] as string;
      const announced = /resource_metadata="([^"]+)"/.exec(challenge)![1]!;
      expect(announced.startsWith(`${ISSUER}/`)).toBe(true);
      for (const [path, resource] of [
        [pathOf(announced), ISSUER],
        ['/.well-known/oauth-protected-resource/auth', ISSUER],
        ['/.well-known/oauth-protected-resource/auth/graphql', `${ISSUER}/graphql`],
      ] as const) {
        const res = await app().get(path);
        expect(res.status, path).toBe(200);
        expect(res.body.resource).toBe(resource);
        expect(res.body.authorization_servers).toEqual([ISSUER]);
      }
    });

    it('checks a DPoP proof against the URL with the path, as the client sent it', async () => {
      const key = await dpopKey();
      const tokenUrl = `${ISSUER}/token`;
      // The token endpoint asks for its nonce first (DPOP_NONCE=token); the nonce answer already shows the proof's htu passed.
      const service = await buildClient(context().runtime, { redirectUris: [], grantTypes: ['client_credentials'], scope: 'products:read' });
      const tokenRequest = async (nonce?: string) =>
        app()
          .post('/auth/token')
          .set('DPoP', await dpopProof(key, { htm: 'POST', htu: tokenUrl, ...(nonce && { nonce }) }))
          .auth(service.id, service.secret!)
          .type('form')
          .send({ grant_type: 'client_credentials' });
      const first = await tokenRequest();
      expect(first.body.error).toBe('use_dpop_nonce');
      const issued = await tokenRequest(first.headers['dpop-nonce'] as string);
      expect(issued.status, issued.text).toBe(200);
      expect(issued.body.token_type).toBe('DPoP');
      const token = issued.body.access_token as string;
      const url = `${ISSUER}/products?fields=id`;
      const proof = (htu: string) => dpopProof(key, { htm: 'GET', htu, accessToken: token });
      const ok = await app().get(pathOf(url)).set('Authorization', `DPoP ${token}`).set('DPoP', await proof(url));
      expect(ok.status, ok.text).toBe(200);
      const wrong = await app().get(pathOf(url)).set('Authorization', `DPoP ${token}`).set('DPoP', await proof('http://localhost:4714/products?fields=id'));
      expect(wrong.status).toBe(401);
    });

    it('leaves a route that merely starts with the same letters alone', async () => {
      // `/authorize` is not `/auth` + `orize`.
      const res = await app().get('/authorize');
      expect(res.status).toBe(400);
      expect(res.text).toContain('client_id');
    });

    it('documents the REST API by its OpenAPI document and the GraphQL API by nothing when the front door is off', async () => {
      const rest = await app().get('/auth/.well-known/oauth-protected-resource');
      expect(rest.body.resource_documentation).toBe(`${ISSUER}/openapi.json`);
      expect((await app().get(pathOf(rest.body.resource_documentation))).status).toBe(200);
      const graphql = await app().get('/auth/.well-known/oauth-protected-resource/graphql');
      expect(graphql.body).not.toHaveProperty('resource_documentation');
    });
  },
  { ISSUER, FRONT_DOOR: 'false' },
);
