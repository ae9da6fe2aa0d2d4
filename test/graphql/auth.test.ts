import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import request from 'supertest';
import { getIntrospectionQuery } from 'graphql';
import { describeEachDatabase } from '../support/runtime.js';
import { issueTestToken, type TestToken } from '../support/tokens.js';
import { buildOrder, buildProduct } from '../support/factories.js';
import { executeGraphQL, postGraphQL } from '../support/graphql.js';
import { captureSql } from '../support/sql.js';
import { AccessTokens } from '../../src/tokens/access-token.js';
import { GrantOwners } from '../../src/tokens/grant-owners.js';
import { createGraphQL } from '../../src/graphql/index.js';

const CHALLENGE = 'Bearer realm="fieldgate"';
/** RFC 9449 §7.1: a request without a token is offered DPoP too. */
const DPOP_OFFER = 'DPoP realm="fieldgate", algs="ES256 EdDSA Ed25519 RS256"';
/** RFC 9728 §5.1: every challenge of the GraphQL face ends by naming its resource metadata. */
const METADATA = 'resource_metadata="http://localhost:3000/.well-known/oauth-protected-resource/graphql"';

describeEachDatabase('GraphQL authentication and authorization', (context) => {
  let everything: TestToken;

  beforeAll(async () => {
    const { runtime } = context();
    everything = await issueTestToken(runtime);
    await buildProduct(runtime, { name: 'Compass' });
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  describe('401 without a valid token', () => {
    it('answers a request without credentials with 401, both challenges and UNAUTHENTICATED', async () => {
      const res = await postGraphQL(context().app, undefined, '{ products { id } }');
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toBe(`${CHALLENGE}, ${METADATA}, ${DPOP_OFFER}`);
      expect(res.body.data).toBeUndefined();
      expect(res.body.errors).toHaveLength(1);
      expect(res.body.errors![0]!.message).toBe('an access token is required');
      expect(res.body.errors![0]!.extensions?.code).toBe('UNAUTHENTICATED');
      expect(res.body.errors![0]!.extensions?.http).toEqual({ status: 401 });
    });

    it('treats another authentication scheme as no credentials', async () => {
      const res = await request(context().app)
        .post('/graphql')
        .set('Authorization', 'Basic dXNlcjpwYXNz')
        .send({ query: '{ products { id } }' });
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toBe(`${CHALLENGE}, ${METADATA}, ${DPOP_OFFER}`);
    });

    it.each([
      ['a malformed token', 'not-a-jwt', 'the access token is malformed'],
      ['a token with a bad signature', () => `${everything.token.slice(0, -4)}AAAA`, 'the access token is invalid'],
    ])('refuses %s with 401 invalid_token', async (_label, token, description) => {
      const value = typeof token === 'function' ? token() : token;
      const res = await postGraphQL(context().app, value, '{ products { id } }');
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toBe(`${CHALLENGE}, error="invalid_token", error_description="${description}", ${METADATA}`);
      expect(res.body.errors![0]!.extensions?.code).toBe('UNAUTHENTICATED');
    });

    it('refuses a token signed with our key for another issuer or audience', async () => {
      const { runtime, config } = context();
      for (const options of [
        { issuer: 'https://elsewhere.example', audience: config.issuer },
        { issuer: config.issuer, audience: 'https://elsewhere.example' },
      ]) {
        const foreign = new AccessTokens(runtime.keys, runtime.revocations, { ...options, ttlSeconds: 600 }, new GrantOwners(runtime.db));
        const { token } = await foreign.issue({ userId: everything.userId, clientId: everything.clientId, scope: 'products:read', grantId: everything.grantId });
        const res = await postGraphQL(context().app, token, '{ products { id } }');
        expect(res.status).toBe(401);
        expect(res.headers['www-authenticate']).toMatch(/^Bearer realm="fieldgate", error="invalid_token", error_description="(the access token is not valid here \(iss\)|the access token was not issued for this resource)", resource_metadata="[^"]+"$/);
      }
    });

    it('refuses a revoked token', async () => {
      const { runtime, app } = context();
      const caller = await issueTestToken(runtime, { scope: 'products:read' });
      await runtime.revocations.revokeAccessToken(caller.principal.jti, caller.principal.expiresAt);
      const res = await postGraphQL(app, caller.token, '{ products { id } }');
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toContain('error_description="the access token has been revoked"');
    });

    it('refuses a token that expires mid-session with 401 invalid_token', async () => {
      const { runtime, app } = context();
      const caller = await issueTestToken(runtime, { scope: 'products:read' });
      const before = await postGraphQL(app, caller.token, '{ products { id } }');
      expect(before.status).toBe(200);
      vi.useFakeTimers({ toFake: ['Date'], now: caller.principal.expiresAt.getTime() + 1000 });
      const after = await postGraphQL(app, caller.token, '{ products { id } }');
      expect(after.status).toBe(401);
      expect(after.headers['www-authenticate']).toBe(`${CHALLENGE}, error="invalid_token", error_description="the access token expired", ${METADATA}`);
      expect(after.body.errors![0]!.extensions?.code).toBe('UNAUTHENTICATED');
    });

    it('allows introspection only with a valid token (any scope)', async () => {
      const { runtime, app } = context();
      const query = '{ __schema { queryType { name } } __typename }';
      const anonymous = await postGraphQL(app, undefined, query);
      expect(anonymous.status).toBe(401);
      expect(anonymous.body.data).toBeUndefined();
      const noScopes = await issueTestToken(runtime, { scope: '' });
      const res = await postGraphQL(app, noScopes.token, query);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ data: { __schema: { queryType: { name: 'Query' } }, __typename: 'Query' } });
    });
  });

  describe('403 without the needed scope', () => {
    it.each([
      ['products', 'orders:read orders:write', '{ products { id } }', 'products:read'],
      ['product', 'orders:read', '{ product(id: 1) { id } }', 'products:read'],
      ['orders', 'products:read orders:write', '{ orders { id } }', 'orders:read'],
      ['order', 'products:read', '{ order(id: 1) { id } }', 'orders:read'],
      ['createOrder', 'orders:read products:read', 'mutation { createOrder(input: { items: [{ productId: 1, quantity: 1 }] }) { id } }', 'orders:write'],
      ['updateOrder', 'orders:read products:read', 'mutation { updateOrder(id: 1, input: { memo: "x" }) { id } }', 'orders:write'],
      ['products reached through an order', 'orders:read', '{ orders { id items { product { name } } } }', 'products:read'],
      ['products reached through a created order', 'orders:write', 'mutation { createOrder(input: { items: [{ productId: 1, quantity: 1 }] }) { items { product { id } } } }', 'products:read'],
      ['two root fields, both missing', '', '{ products { id } orders { id } }', 'orders:read products:read'],
    ])('%s: HTTP 403 with an insufficient_scope challenge naming the scope', async (_label, scope, query, required) => {
      const { runtime, app } = context();
      const caller = await issueTestToken(runtime, { scope });
      let res: Awaited<ReturnType<typeof postGraphQL>> | undefined;
      const sql = await captureSql(runtime, async () => {
        res = await postGraphQL(app, caller.token, query);
      });
      expect(res!.status).toBe(403);
      expect(res!.headers['www-authenticate']).toBe(
        `${CHALLENGE}, error="insufficient_scope", error_description="this request needs the scope ${required}", scope="${required}", ${METADATA}`,
      );
      expect(res!.body.data).toBeUndefined();
      expect(res!.body.errors![0]!.extensions).toMatchObject({ code: 'FORBIDDEN', requiredScope: required, http: { status: 403 } });
      // Refused before execution: nothing but the token's revocation check (left out of the capture) touched the database.
      expect(sql).toEqual([]);
    });

    it('lets a token with orders:read read orders without their products', async () => {
      const { runtime, app } = context();
      const caller = await issueTestToken(runtime, { scope: 'orders:read' });
      await buildOrder(runtime, { userId: caller.userId });
      const res = await postGraphQL(app, caller.token, '{ orders { status items { quantity } } }');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ data: { orders: [{ status: 'PENDING', items: [{ quantity: 1 }] }] } });
    });

    it('lets a token with only orders:write create an order and see the result', async () => {
      const { runtime, app } = context();
      const caller = await issueTestToken(runtime, { scope: 'orders:write' });
      const product = await buildProduct(runtime);
      const res = await postGraphQL(app, caller.token, 'mutation ($id: Int!) { createOrder(input: { items: [{ productId: $id, quantity: 2 }] }) { status totalCents } }', {
        id: product.id,
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ data: { createOrder: { status: 'PENDING', totalCents: 2 * product.priceCents } } });
    });

    it('reports the same refusal to in-process callers, with the HTTP status and challenge in extensions.http', async () => {
      const { runtime } = context();
      const caller = await issueTestToken(runtime, { scope: 'products:read' });
      const result = await executeGraphQL(createGraphQL(runtime), caller.principal, 'mutation { updateOrder(id: 1, input: { memo: "x" }) { id } }');
      expect(result.data).toBeUndefined();
      expect(result.errors).toHaveLength(1);
      expect(result.errors![0]!.extensions).toEqual({
        code: 'FORBIDDEN',
        requiredScope: 'orders:write',
        http: {
          status: 403,
          headers: {
            'WWW-Authenticate': `${CHALLENGE}, error="insufficient_scope", error_description="this request needs the scope orders:write", scope="orders:write"`,
          },
        },
      });
    });
  });

  describe('over HTTP', () => {
    it('serves queries over GET too', async () => {
      const res = await request(context().app)
        .get('/graphql')
        .query({ query: '{ products(limit: 1) { name } }' })
        .set('Authorization', everything.authorization)
        .set('Accept', 'application/json');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ data: { products: [{ name: 'Compass' }] } });
    });

    it('answers CORS preflights so browser clients can send the Authorization header', async () => {
      const res = await request(context().app)
        .options('/graphql')
        .set('Origin', 'https://shop.example')
        .set('Access-Control-Request-Method', 'POST')
        .set('Access-Control-Request-Headers', 'authorization, content-type');
      expect(res.status).toBe(204);
      expect(res.headers['access-control-allow-origin']).toBe('https://shop.example');
      expect(res.headers['access-control-allow-headers']?.toLowerCase()).toContain('authorization');
      // Cached as long as the REST and OAuth preflights, so a page's GraphQL calls do not each cost an OPTIONS.
      expect(res.headers['access-control-max-age']).toBe('600');
    });

    it('refuses a body over 256 kB with 413', async () => {
      const res = await postGraphQL(context().app, everything.token, '{ __typename }', { padding: 'x'.repeat(300 * 1024) });
      expect(res.status).toBe(413);
    });

    it('lets a client with a valid token run the full introspection query within the limits', async () => {
      const res = await postGraphQL(context().app, everything.token, getIntrospectionQuery());
      expect(res.status).toBe(200);
      const types = (res.body.data as { __schema: { types: { name: string }[] } }).__schema.types.map((type) => type.name);
      expect(types).toEqual(expect.arrayContaining(['Product', 'Order', 'OrderStatus', 'UpdateOrderInput']));
    });

    it('refuses a mutation over GET with 405', async () => {
      const res = await request(context().app)
        .get('/graphql')
        .query({ query: 'mutation { updateOrder(id: 1, input: { memo: "x" }) { id } }' })
        .set('Authorization', everything.authorization)
        .set('Accept', 'application/json');
      expect(res.status).toBe(405);
      expect(res.headers.allow).toBe('POST');
    });
  });
});
