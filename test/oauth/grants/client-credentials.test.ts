/**
 * grant_type=client_credentials (RFC 6749 §4.4; RFC 9068 §2.2 for the token's `sub`): who may
 * use it, which scopes it gets, no refresh token, and what such a token — with no user — may
 * do at the APIs: read the catalogue, never see orders (403 in REST and GraphQL alike).
 * Revocation and client deletion end it like any other token.
 */
import { beforeAll, expect, it } from 'vitest';
import request from 'supertest';
import { decodeJwt } from 'jose';
import { eq } from 'drizzle-orm';
import { grants } from '../../../src/db/schema.js';
import { DEVICE_CODE_GRANT_TYPE } from '../../../src/oauth/stores/clients.js';
import { REVOCATION_CACHE_MS } from '../../../src/tokens/revocation.js';
import { describeEachDatabase } from '../../support/runtime.js';
import { postGraphQL } from '../../support/graphql.js';
import { basic, buildClient, tokenRequest, type TestClient } from '../../support/oauth.js';

const EXTERNAL_RESOURCE = 'https://rs.example/api';

describeEachDatabase('client_credentials grant', (context) => {
  let service: TestClient;

  beforeAll(async () => {
    service = await buildClient(context().runtime, { redirectUris: [], grantTypes: ['client_credentials'] });
  });

  const machineToken = (client: TestClient = service, scope?: string) =>
    tokenRequest(context().app, { grant_type: 'client_credentials', scope }, client);

  it('issues a bearer token with no refresh token (§4.4.3) whose sub is the client (RFC 9068 §2.2)', async () => {
    const res = await machineToken();
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toEqual({ access_token: expect.any(String), token_type: 'Bearer', expires_in: context().config.accessTokenTtl, scope: 'products:read' });
    const claims = decodeJwt(res.body.access_token);
    expect(claims).toMatchObject({ sub: service.id, client_id: service.id, scope: 'products:read' });
    const principal = await context().runtime.accessTokens.verify(res.body.access_token);
    expect(principal.userId).toBeNull();
  });

  it('defaults to the scopes that need no user, and refuses orders scopes with invalid_scope', async () => {
    expect((await machineToken(service, 'products:read')).body.scope).toBe('products:read');
    for (const scope of ['orders:read', 'products:read orders:write']) {
      const res = await machineToken(service, scope);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_scope');
      expect(res.body.error_description).toMatch(/needs a user/);
    }
    const unknown = await machineToken(service, 'admin');
    expect(unknown.body.error).toBe('invalid_scope');
  });

  it('refuses openid, profile, email and offline_access as scopes that need a user, not as unknown ones', async () => {
    for (const scope of ['openid', 'products:read offline_access', 'openid profile email']) {
      const res = await machineToken(service, scope);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_scope');
      expect(res.body.error_description).toMatch(/needs a user, and a client_credentials token acts for no user/);
    }
  });

  it('refuses a scope outside the client registration, and a client with no user-less scope', async () => {
    const ordersOnly = await buildClient(context().runtime, { redirectUris: [], grantTypes: ['client_credentials'], scope: 'orders:read' });
    const byDefault = await machineToken(ordersOnly);
    expect(byDefault.status).toBe(400);
    expect(byDefault.body.error).toBe('invalid_scope');
    const outside = await machineToken(ordersOnly, 'products:read');
    expect(outside.body).toMatchObject({ error: 'invalid_scope', error_description: 'this client may not request products:read' });
  });

  it('leaves the OpenID scopes a client registered for its users out of the scope it gets by default', async () => {
    const both = await buildClient(context().runtime, { grantTypes: ['authorization_code', 'client_credentials'], scope: 'openid profile products:read orders:read' });
    const res = await machineToken(both);
    expect(res.status, res.text).toBe(200);
    expect(res.body.scope).toBe('products:read');
  });

  it('is unauthorized_client for a client not registered for it', async () => {
    const webApp = await buildClient(context().runtime);
    const res = await machineToken(webApp);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('unauthorized_client');
  });

  it('is refused to public clients: registration refuses them, and an unauthenticated request is invalid_client', async () => {
    await expect(buildClient(context().runtime, { redirectUris: [], isPublic: true, grantTypes: ['client_credentials'] })).rejects.toThrow(/public client/);
    const device = await buildClient(context().runtime, { redirectUris: [], isPublic: true, grantTypes: [DEVICE_CODE_GRANT_TYPE] });
    expect((await machineToken(device)).body.error).toBe('unauthorized_client');
    const noSecret = await tokenRequest(context().app, { grant_type: 'client_credentials', client_id: service.id });
    expect(noSecret.status).toBe(400);
    expect(noSecret.body.error).toBe('invalid_client');
    const wrongSecret = await request(context().app).post('/token').type('form').set('Authorization', basic(service.id, 'wrong')).send({ grant_type: 'client_credentials' });
    expect(wrongSecret.status).toBe(401);
    expect(wrongSecret.body.error).toBe('invalid_client');
  });

  it('accepts client_secret_post as well as client_secret_basic', async () => {
    const res = await tokenRequest(context().app, { grant_type: 'client_credentials', client_id: service.id, client_secret: service.secret! });
    expect(res.status).toBe(200);
  });

  it('reads the catalogue over REST and GraphQL', async () => {
    const { access_token } = (await machineToken()).body;
    const rest = await request(context().app).get('/products').set('Authorization', `Bearer ${access_token}`);
    expect(rest.status).toBe(200);
    const gql = await postGraphQL(context().app, access_token, '{ products(limit: 1) { id name } }');
    expect(gql.status).toBe(200);
    expect(gql.body.errors).toBeUndefined();
  });

  it('has no orders: REST /orders is 403 PERMISSION_DENIED and GraphQL orders is FORBIDDEN, with a clear message', async () => {
    const { access_token } = (await machineToken()).body;
    for (const path of ['/orders', '/orders/1']) {
      const res = await request(context().app).get(path).set('Authorization', `Bearer ${access_token}`);
      expect(res.status).toBe(403);
      expect(res.body.error).toMatchObject({ code: 403, status: 'PERMISSION_DENIED' });
      expect(res.body.error.message).toMatch(/belong to a user.*client_credentials/);
    }
    const create = await request(context().app).post('/orders').set('Authorization', `Bearer ${access_token}`).send({ items: [{ productId: 1, quantity: 1 }] });
    expect(create.status).toBe(403);
    const patch = await request(context().app).patch('/orders/1?update_mask=memo').set('Authorization', `Bearer ${access_token}`).send({ memo: 'x' });
    expect(patch.status).toBe(403);
    for (const query of ['{ orders { id } }', '{ order(id: 1) { id } }', 'mutation { createOrder(input: { items: [{ productId: 1, quantity: 1 }] }) { id } }']) {
      const gql = await postGraphQL(context().app, access_token, query);
      expect(gql.status).toBe(403);
      expect(gql.body.errors?.[0]?.extensions).toMatchObject({ code: 'FORBIDDEN', reason: 'USER_REQUIRED' });
      expect(gql.body.errors?.[0]?.message).toMatch(/belong to a user/);
    }
  });

  it('refuses orders to a user-less token even if it somehow carries orders scopes', async () => {
    const { runtime, app } = context();
    const grantId = 'forged-machine-grant';
    await runtime.db.insert(grants).values({ id: grantId, clientId: service.id, userId: null, scope: 'orders:read orders:write' });
    const { token } = await runtime.accessTokens.issue({ userId: null, clientId: service.id, scope: 'products:read orders:read orders:write', grantId });
    expect((await request(app).get('/orders').set('Authorization', `Bearer ${token}`)).status).toBe(403);
    const gql = await postGraphQL(app, token, '{ orders { id } }');
    expect(gql.body.errors?.[0]?.extensions).toMatchObject({ code: 'FORBIDDEN', reason: 'USER_REQUIRED' });
  });

  it('gives each token a grant row with no user, so /revoke and introspection work as for any token', async () => {
    const { runtime, app } = context();
    const { access_token } = (await machineToken()).body;
    const principal = await runtime.accessTokens.verify(access_token);
    const [row] = await runtime.db.select().from(grants).where(eq(grants.id, principal.grantId));
    expect(row).toMatchObject({ clientId: service.id, userId: null, scope: 'products:read', revokedAt: null });

    const introspection = await request(app).post('/introspect').type('form').set('Authorization', basic(service.id, service.secret!)).send({ token: access_token });
    expect(introspection.body).toMatchObject({ active: true, sub: service.id, client_id: service.id, scope: 'products:read' });

    const revoked = await request(app).post('/revoke').type('form').set('Authorization', basic(service.id, service.secret!)).send({ token: access_token });
    expect(revoked.status).toBe(200);
    expect((await request(app).get('/products').set('Authorization', `Bearer ${access_token}`)).status).toBe(401);
  });

  it('ends every token of a deleted client within the revocation cache time', async () => {
    const { runtime, app } = context();
    const doomed = await buildClient(runtime, { redirectUris: [], grantTypes: ['client_credentials'] });
    const { access_token } = (await machineToken(doomed)).body;
    expect((await request(app).get('/products').set('Authorization', `Bearer ${access_token}`)).status).toBe(200);
    await runtime.clients.delete(doomed.id);
    await new Promise((resolve) => setTimeout(resolve, REVOCATION_CACHE_MS + 50));
    const res = await request(app).get('/products').set('Authorization', `Bearer ${access_token}`);
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toMatch(/error="invalid_token"/);
  });

  it('answers a client deleted while this instance still has it cached as the authentication failure it is: 401 with a challenge', async () => {
    const { runtime } = context();
    const doomed = await buildClient(runtime, { redirectUris: [], grantTypes: ['client_credentials'] });
    // The first request puts the client in this instance's client cache; the delete (another instance, the CLI) does not clear it.
    expect((await machineToken(doomed)).status).toBe(200);
    await runtime.clients.delete(doomed.id);
    const res = await machineToken(doomed);
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('invalid_client');
    expect(res.headers['www-authenticate']).toMatch(/^Basic /);
  });

  it('answers 100 concurrent requests with 100 distinct tokens, each with its own grant', async () => {
    const responses = await Promise.all(Array.from({ length: 100 }, () => machineToken()));
    expect(responses.every((res) => res.status === 200)).toBe(true);
    const grantIds = await Promise.all(responses.map(async (res) => (await context().runtime.accessTokens.verify(res.body.access_token)).grantId));
    expect(new Set(grantIds).size).toBe(100);
  });

  it('refuses a repeated scope parameter', async () => {
    const res = await request(context().app)
      .post('/token')
      .type('form')
      .set('Authorization', basic(service.id, service.secret!))
      .send('grant_type=client_credentials&scope=products:read&scope=products:read');
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
  });

  it('honours resource (RFC 8707): a known one, external included, becomes the audience; an unknown one is invalid_target', async () => {
    const { app, config } = context();
    const withResource = (resources: string[]) =>
      request(app)
        .post('/token')
        .type('form')
        .set('Authorization', basic(service.id, service.secret!))
        .send(['grant_type=client_credentials', ...resources.map((resource) => `resource=${encodeURIComponent(resource)}`)].join('&'));
    const graphqlOnly = await withResource([`${config.issuer}/graphql`]);
    expect(graphqlOnly.status, graphqlOnly.text).toBe(200);
    expect(decodeJwt(graphqlOnly.body.access_token).aud).toBe(`${config.issuer}/graphql`);
    const external = await withResource([EXTERNAL_RESOURCE, config.issuer]);
    expect(external.status, external.text).toBe(200);
    expect(decodeJwt(external.body.access_token).aud).toEqual([EXTERNAL_RESOURCE, config.issuer]);
    // Narrowed to GraphQL, it is no longer accepted by the REST API.
    const rest = await request(app).get('/products').query({ fields: 'id', limit: 1 }).set('Authorization', `Bearer ${graphqlOnly.body.access_token}`);
    expect(rest.status).toBe(401);
    for (const unknown of ['https://evil.example/api', 'not a uri', `${config.issuer}/graphql#x`]) {
      const refused = await withResource([unknown]);
      expect(refused.status).toBe(400);
      expect(refused.body.error).toBe('invalid_target');
    }
    expect(decodeJwt((await withResource([])).body.access_token).aud).toEqual([config.issuer, `${config.issuer}/graphql`]);
  });
}, { RESOURCE_INDICATORS: EXTERNAL_RESOURCE });
