/**
 * Revocation (RFC 7009): client-authenticated; a refresh token takes its
 * whole family with it, an access token goes alone; unknown tokens get 200; another client's
 * token is refused and left alone — and revocation reaches the resource side at once.
 */
import { beforeAll, expect, it } from 'vitest';
import request from 'supertest';
import { authenticateBearer } from '../../../src/tokens/bearer.js';
import { describeEachDatabase } from '../../support/runtime.js';
import { basic, buildTokenCast, obtainTokens, securityEvents, tokenRequest, type TestClient, type TestUser } from '../../support/oauth.js';

describeEachDatabase('POST /revoke', (context) => {
  let client: TestClient;
  let other: TestClient;
  let publicClient: TestClient;
  let user: TestUser;

  beforeAll(async () => {
    ({ client, other, publicClient, user } = await buildTokenCast(context().runtime));
  });

  const revoke = (as: TestClient, fields: Record<string, string>) => {
    const req = request(context().app).post('/revoke').type('form');
    if (as.secret) req.set('Authorization', basic(as.id, as.secret));
    return req.send(as.secret ? fields : { ...fields, client_id: as.id });
  };
  const accepts = (accessToken: string) => authenticateBearer(context().runtime.accessTokens, `Bearer ${accessToken}`);
  const refresh = (as: TestClient, refreshToken: string) => tokenRequest(context().app, { grant_type: 'refresh_token', refresh_token: refreshToken }, as);

  it('revoking a refresh token revokes its family: refresh tokens and access tokens (RFC 7009 §2.1: at once on the resource side)', async () => {
    const first = await obtainTokens(context().app, context().runtime, client, user);
    const rotated = await refresh(client, first.refresh_token);
    await accepts(rotated.body.access_token); // cached as valid on the resource side
    const res = await revoke(client, { token: rotated.body.refresh_token, token_type_hint: 'refresh_token' });
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect((await refresh(client, rotated.body.refresh_token)).body.error).toBe('invalid_grant');
    await expect(accepts(first.access_token)).rejects.toMatchObject({ code: 'invalid_token' });
    await expect(accepts(rotated.body.access_token)).rejects.toMatchObject({ code: 'invalid_token' });
    expect(securityEvents(context().logs.lines, 'token_revoked').at(-1)).toMatchObject({
      clientId: client.id,
      userId: user.id,
      grantId: first.grantId,
      tokenType: 'refresh_token',
    });
  });

  it('revoking an access token revokes that token only', async () => {
    const tokens = await obtainTokens(context().app, context().runtime, client, user);
    await accepts(tokens.access_token);
    const res = await revoke(client, { token: tokens.access_token, token_type_hint: 'access_token' });
    expect(res.status).toBe(200);
    await expect(accepts(tokens.access_token)).rejects.toMatchObject({ code: 'invalid_token' });
    const refreshed = await refresh(client, tokens.refresh_token);
    expect(refreshed.status).toBe(200);
    await accepts(refreshed.body.access_token);
  });

  it('finds the token whatever the hint says', async () => {
    const tokens = await obtainTokens(context().app, context().runtime, client, user);
    expect((await revoke(client, { token: tokens.refresh_token, token_type_hint: 'access_token' })).status).toBe(200);
    expect((await refresh(client, tokens.refresh_token)).body.error).toBe('invalid_grant');
  });

  it.each([
    ['an unknown opaque token', 'no-such-token'],
    ['a malformed JWT', 'a.b.c'],
  ])('answers 200 for %s', async (_name, token) => {
    expect((await revoke(client, { token })).status).toBe(200);
  });

  it('answers 200 for a token revoked already', async () => {
    const tokens = await obtainTokens(context().app, context().runtime, client, user);
    expect((await revoke(client, { token: tokens.refresh_token })).status).toBe(200);
    expect((await revoke(client, { token: tokens.refresh_token })).status).toBe(200);
  });

  it("a client cannot revoke another client's refresh or access token", async () => {
    const tokens = await obtainTokens(context().app, context().runtime, client, user);
    const refreshAttempt = await revoke(other, { token: tokens.refresh_token });
    expect(refreshAttempt.status).toBe(400);
    expect(refreshAttempt.body.error).toBe('invalid_request');
    const accessAttempt = await revoke(other, { token: tokens.access_token });
    expect(accessAttempt.body.error).toBe('invalid_request');
    await accepts(tokens.access_token);
    expect((await refresh(client, tokens.refresh_token)).status).toBe(200);
  });

  it('public clients revoke their own tokens with client_id', async () => {
    const tokens = await obtainTokens(context().app, context().runtime, publicClient, user);
    expect((await revoke(publicClient, { token: tokens.refresh_token })).status).toBe(200);
    expect((await refresh(publicClient, tokens.refresh_token)).body.error).toBe('invalid_grant');
  });

  it('requires client authentication', async () => {
    const tokens = await obtainTokens(context().app, context().runtime, client, user);
    const anonymous = await request(context().app).post('/revoke').type('form').send({ token: tokens.refresh_token });
    expect(anonymous.status).toBe(400);
    expect(anonymous.body.error).toBe('invalid_client');
    const wrong = await request(context().app).post('/revoke').set('Authorization', basic(client.id, 'nope')).type('form').send({ token: tokens.refresh_token });
    expect(wrong.status).toBe(401);
    expect(wrong.headers['www-authenticate']).toMatch(/^Basic /);
    expect((await refresh(client, tokens.refresh_token)).status).toBe(200);
  });

  it('a missing token is invalid_request; a non-form body too', async () => {
    const missing = await revoke(client, {});
    expect(missing.body.error).toBe('invalid_request');
    expect(missing.headers['content-type']).toBe('application/json;charset=UTF-8');
    const json = await request(context().app).post('/revoke').set('Authorization', basic(client.id, client.secret!)).send({ token: 'x' });
    expect(json.status).toBe(400);
    expect(json.body.error).toBe('invalid_request');
  });
});
