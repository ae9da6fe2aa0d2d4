/**
 * Revocation reaches the resource side: after a family is revoked — through
 * /revoke or by refresh-token reuse — its access tokens are refused by the GraphQL and REST
 * endpoints at once (this instance clears its revocation cache; other instances within
 * REVOCATION_CACHE_MS).
 */
import { beforeAll, expect, it } from 'vitest';
import request from 'supertest';
import { describeEachDatabase } from '../support/runtime.js';
import { basic, buildClient, buildUser, issueCode, obtainTokens, tokenRequest, type TestClient, type TestUser } from '../support/oauth.js';

describeEachDatabase('revoked families on the resource side', (context) => {
  let client: TestClient;
  let user: TestUser;

  beforeAll(async () => {
    client = await buildClient(context().runtime);
    user = await buildUser(context().runtime);
  });

  const graphql = (accessToken: string) =>
    request(context().app).post('/graphql').set('Authorization', `Bearer ${accessToken}`).send({ query: '{ __typename }' });
  const rest = (accessToken: string) => request(context().app).get('/products').set('Authorization', `Bearer ${accessToken}`);

  async function expectAccepted(accessToken: string) {
    const g = await graphql(accessToken);
    expect(g.status).toBe(200);
    expect(g.body).toEqual({ data: { __typename: 'Query' } });
    const r = await rest(accessToken);
    expect(r.status).toBe(200);
    expect(Array.isArray(r.body)).toBe(true);
    for (const res of [g, r]) expect(res.headers['www-authenticate']).toBeUndefined();
  }

  async function expectRefused(accessToken: string) {
    const g = await graphql(accessToken);
    expect(g.status).toBe(401);
    expect(g.headers['www-authenticate']).toMatch(/^Bearer .*error="invalid_token"/);
    const r = await rest(accessToken);
    expect(r.status).toBe(401);
    expect(r.headers['www-authenticate']).toMatch(/^Bearer .*error="invalid_token"/);
  }

  it('after /revoke of the refresh token', async () => {
    const tokens = await obtainTokens(context().app, context().runtime, client, user);
    await expectAccepted(tokens.access_token);
    await request(context().app).post('/revoke').set('Authorization', basic(client.id, client.secret!)).type('form').send({ token: tokens.refresh_token });
    await expectRefused(tokens.access_token);
  });

  it('after refresh-token reuse detection', async () => {
    const tokens = await obtainTokens(context().app, context().runtime, client, user);
    const rotated = await tokenRequest(context().app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, client);
    await expectAccepted(rotated.body.access_token);
    await tokenRequest(context().app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, client);
    await expectRefused(tokens.access_token);
    await expectRefused(rotated.body.access_token);
  });

  it('after code replay', async () => {
    const { runtime, app } = context();
    const { code, verifier } = await issueCode(runtime, client, user);
    const fields = { grant_type: 'authorization_code', code, redirect_uri: client.redirectUri, code_verifier: verifier };
    const first = await tokenRequest(app, fields, client);
    await expectAccepted(first.body.access_token);
    await tokenRequest(app, fields, client);
    await expectRefused(first.body.access_token);
  });
});
