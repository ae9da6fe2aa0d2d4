/**
 * Introspection (RFC 7662): client-authenticated; `{"active": false}` and nothing
 * else for expired, revoked, malformed or foreign tokens; the claims for active ones.
 */
import { beforeAll, expect, it } from 'vitest';
import request from 'supertest';
import { eq } from 'drizzle-orm';
import { SignJWT, generateKeyPair } from 'jose';
import { refreshTokens } from '../../../src/db/schema.js';
import { sha256 } from '../../../src/crypto/secrets.js';
import { describeEachDatabase } from '../../support/runtime.js';
import { basic, buildClient, buildUser, obtainTokens, tokenRequest, type TestClient, type TestUser } from '../../support/oauth.js';

describeEachDatabase('POST /introspect', (context) => {
  let client: TestClient;
  let other: TestClient;
  let user: TestUser;

  beforeAll(async () => {
    const { runtime } = context();
    client = await buildClient(runtime);
    other = await buildClient(runtime);
    user = await buildUser(runtime);
  });

  const introspect = (token: string, as: TestClient = client) =>
    request(context().app).post('/introspect').set('Authorization', basic(as.id, as.secret!)).type('form').send({ token });

  it('describes an active access token', async () => {
    const tokens = await obtainTokens(context().app, context().runtime, client, user);
    const res = await introspect(tokens.access_token);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json;charset=UTF-8');
    expect(res.headers['cache-control']).toBe('no-store');
    const issuer = context().config.issuer;
    expect(res.body).toMatchObject({
      active: true,
      scope: 'products:read orders:read',
      client_id: client.id,
      sub: String(user.id),
      iss: issuer,
      token_type: 'Bearer',
    });
    expect(res.body.exp - res.body.iat).toBe(context().config.accessTokenTtl);
  });

  it('describes an active refresh token', async () => {
    const tokens = await obtainTokens(context().app, context().runtime, client, user);
    const res = await introspect(tokens.refresh_token);
    expect(res.body).toMatchObject({ active: true, scope: tokens.scope, client_id: client.id, sub: String(user.id), iss: context().config.issuer });
    expect(typeof res.body.exp).toBe('number');
    expect(typeof res.body.iat).toBe('number');
    // token_type is the access token type of RFC 6749 §7.1; a refresh token has none.
    expect(res.body).not.toHaveProperty('token_type');
  });

  it('says only active:false for a revoked access token and for every token of a revoked family', async () => {
    const tokens = await obtainTokens(context().app, context().runtime, client, user);
    await request(context().app).post('/revoke').set('Authorization', basic(client.id, client.secret!)).type('form').send({ token: tokens.refresh_token });
    expect((await introspect(tokens.access_token)).body).toEqual({ active: false });
    expect((await introspect(tokens.refresh_token)).body).toEqual({ active: false });
  });

  it('says active:false for a retired (rotated) refresh token', async () => {
    const tokens = await obtainTokens(context().app, context().runtime, client, user);
    await tokenRequest(context().app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, client);
    expect((await introspect(tokens.refresh_token)).body).toEqual({ active: false });
  });

  it('says active:false for an expired refresh token', async () => {
    const { runtime } = context();
    const tokens = await obtainTokens(context().app, runtime, client, user);
    await runtime.db.update(refreshTokens).set({ expiresAt: new Date(Date.now() - 1000) }).where(eq(refreshTokens.tokenHash, sha256(tokens.refresh_token)));
    expect((await introspect(tokens.refresh_token)).body).toEqual({ active: false });
  });

  it('says active:false for an expired access token', async () => {
    const { runtime } = context();
    const key = await runtime.keys.signingKey();
    const issuer = context().config.issuer;
    const now = Math.floor(Date.now() / 1000);
    const expired = key.sign(
      { client_id: client.id, scope: 'products:read', grant_id: 'g', iss: issuer, aud: issuer, sub: String(user.id), jti: 'expired-jti', iat: now - 7200, exp: now - 3600 },
      'at+jwt',
    );
    expect((await introspect(expired)).body).toEqual({ active: false });
  });

  it.each([
    ['malformed', 'not-a-token'],
    ['a malformed JWT', 'x.y.z'],
    ['empty-ish', '...'],
  ])('says active:false for a %s token', async (_name, token) => {
    const res = await introspect(token);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ active: false });
  });

  it('says active:false for a JWT signed by a foreign key', async () => {
    const { privateKey } = await generateKeyPair('ES256');
    const issuer = context().config.issuer;
    const forged = await new SignJWT({ client_id: client.id, scope: 'orders:write', grant_id: 'g' })
      .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: 'foreign' })
      .setIssuer(issuer)
      .setAudience(issuer)
      .setSubject(String(user.id))
      .setJti('j')
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(privateKey);
    expect((await introspect(forged)).body).toEqual({ active: false });
  });

  it("says active:false for another client's tokens", async () => {
    const tokens = await obtainTokens(context().app, context().runtime, client, user);
    expect((await introspect(tokens.access_token, other)).body).toEqual({ active: false });
    expect((await introspect(tokens.refresh_token, other)).body).toEqual({ active: false });
  });

  it('requires client authentication: 401 invalid_client with a Basic challenge', async () => {
    const tokens = await obtainTokens(context().app, context().runtime, client, user);
    const res = await request(context().app).post('/introspect').type('form').send({ token: tokens.access_token });
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('invalid_client');
    expect(res.headers['www-authenticate']).toMatch(/^Basic /);
    const wrong = await request(context().app).post('/introspect').set('Authorization', basic(client.id, 'bad')).type('form').send({ token: tokens.access_token });
    expect(wrong.status).toBe(401);
  });

  /** The public client's request is refused exactly as the same request naming an unknown client id. */
  async function expectRefusedLikeUnknown(clientId: string, send: (clientId: string) => request.Test) {
    const known = await send(clientId);
    const unknown = await send('no-such-client');
    expect(known.status).toBe(401);
    expect(known.body).toEqual({ error: 'invalid_client', error_description: 'client authentication failed' });
    expect(known.headers['www-authenticate']).toMatch(/^Basic /);
    expect(unknown.status).toBe(401);
    expect(unknown.body).toEqual(known.body);
  }

  it('refuses a public client that sends Basic credentials with an empty secret, the same as an unknown id', async () => {
    const publicClient = await buildClient(context().runtime, { isPublic: true });
    const tokens = await obtainTokens(context().app, context().runtime, publicClient, user);
    const send = (clientId: string) =>
      request(context().app)
        .post('/introspect')
        .set('Authorization', `Basic ${Buffer.from(`${clientId}:`).toString('base64')}`)
        .type('form')
        .send({ token: tokens.access_token });
    await expectRefusedLikeUnknown(publicClient.id, send);
  });

  it('refuses a public client (client_id alone proves nothing), the same as an unknown id', async () => {
    const publicClient = await buildClient(context().runtime, { isPublic: true });
    const tokens = await obtainTokens(context().app, context().runtime, publicClient, user);
    const send = (clientId: string) =>
      request(context().app).post('/introspect').type('form').send({ token: tokens.access_token, client_id: clientId });
    await expectRefusedLikeUnknown(publicClient.id, send);
    const withSecret = await request(context().app)
      .post('/introspect')
      .set('Authorization', basic(publicClient.id, 'x'))
      .type('form')
      .send({ token: tokens.access_token });
    expect(withSecret.status).toBe(401);
    expect(withSecret.body).toEqual({ error: 'invalid_client', error_description: 'client authentication failed' });
  });
});
