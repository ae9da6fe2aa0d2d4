/**
 * The device authorization grant (RFC 8628) at its two endpoints: POST /device_authorization
 * (§3.1, §3.2) and grant_type=urn:ietf:params:oauth:grant-type:device_code at /token (§3.4,
 * §3.5) — every error of §3.5 over raw HTTP, single use under concurrent polls, on one
 * instance and across two on one PostgreSQL database. The user's decision is recorded through
 * the store here; the /device pages have their own suite.
 */
import { beforeAll, expect, it, vi } from 'vitest';
import request from 'supertest';
import { eq, sql } from 'drizzle-orm';
import { createApp } from '../../../src/app.js';
import { createLogger } from '../../../src/logger.js';
import { openRuntime } from '../../../src/runtime.js';
import { deviceCodes, loginThrottle } from '../../../src/db/schema.js';
import { sha256 } from '../../../src/crypto/secrets.js';
import { DEVICE_CODE_GRANT_TYPE } from '../../../src/oauth/stores/clients.js';
import { DeviceCodeStore, normalizeUserCode } from '../../../src/oauth/stores/device-codes.js';
import { decodeJwt } from 'jose';
import { describeEachDatabase, TEST_ISSUER } from '../../support/runtime.js';
import { dpopKey, dpopProof } from '../../support/dpop.js';
import { basic, buildClient, buildUser, tokenRequest, type TestClient, type TestUser } from '../../support/oauth.js';

const USER_CODE = /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/;

interface DeviceAuthorization {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}

describeEachDatabase('device authorization grant', (context) => {
  let tv: TestClient;
  let confidentialTv: TestClient;
  let other: TestClient;
  let user: TestUser;
  let store: DeviceCodeStore;

  beforeAll(async () => {
    const { runtime } = context();
    tv = await buildClient(runtime, { redirectUris: [], isPublic: true, grantTypes: [DEVICE_CODE_GRANT_TYPE, 'refresh_token'], scope: 'products:read orders:read' });
    confidentialTv = await buildClient(runtime, { redirectUris: [], grantTypes: [DEVICE_CODE_GRANT_TYPE] });
    other = await buildClient(runtime, { redirectUris: [], isPublic: true, grantTypes: [DEVICE_CODE_GRANT_TYPE] });
    user = await buildUser(runtime);
    store = new DeviceCodeStore(runtime.db, runtime.config.deviceCodeTtl);
  });

  function authorizeDevice(client: TestClient, fields: Record<string, string> = {}) {
    const req = request(context().app).post('/device_authorization').type('form');
    if (client.secret) req.set('Authorization', basic(client.id, client.secret));
    return req.send(client.secret ? fields : { client_id: client.id, ...fields });
  }

  async function start(client: TestClient = tv, scope?: string): Promise<DeviceAuthorization> {
    const res = await authorizeDevice(client, scope ? { scope } : {});
    expect(res.status).toBe(200);
    return res.body as DeviceAuthorization;
  }

  const poll = (deviceCode: string, client: TestClient = tv, app = context().app) =>
    tokenRequest(app, { grant_type: DEVICE_CODE_GRANT_TYPE, device_code: deviceCode }, client);

  async function decide(started: DeviceAuthorization, client: TestClient, decision: 'approved' | 'denied', userId = user.id) {
    expect(await store.decide(normalizeUserCode(started.user_code)!, client.id, userId, decision)).toBeDefined();
  }

  /** Moves the last poll back, as if the client had waited its interval. */
  const waitedInterval = (deviceCode: string) =>
    context().runtime.db.update(deviceCodes).set({ lastPolledAt: sql`now() - interval '1 hour'` }).where(eq(deviceCodes.deviceCodeHash, sha256(deviceCode)));

  it('answers a device authorization request per §3.2, without caching', async () => {
    const res = await authorizeDevice(tv);
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['content-type']).toBe('application/json;charset=UTF-8');
    const body = res.body as DeviceAuthorization;
    expect(body).toEqual({
      device_code: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      user_code: expect.stringMatching(USER_CODE),
      verification_uri: `${context().config.issuer}/device`,
      verification_uri_complete: `${context().config.issuer}/device?user_code=${body.user_code}`,
      expires_in: context().config.deviceCodeTtl,
      interval: 5,
    });
    const [row] = await context().runtime.db.select().from(deviceCodes).where(eq(deviceCodes.deviceCodeHash, sha256(body.device_code)));
    expect(row).toMatchObject({ clientId: tv.id, scope: 'products:read orders:read', status: 'pending', intervalSeconds: 5 });
    expect(JSON.stringify(row)).not.toContain(body.device_code);
    expect(JSON.stringify(row)).not.toContain(body.user_code.replace('-', ''));
  });

  it('authenticates confidential clients as /token does', async () => {
    expect((await authorizeDevice(confidentialTv)).status).toBe(200);
    const wrong = await request(context().app).post('/device_authorization').type('form').set('Authorization', basic(confidentialTv.id, 'nope')).send({});
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe('invalid_client');
    const bare = await request(context().app).post('/device_authorization').type('form').send({ client_id: confidentialTv.id });
    expect(bare.body.error).toBe('invalid_client');
  });

  it('limits the scope to the client registration (invalid_scope), and defaults to all of it', async () => {
    expect((await start(tv, 'products:read')).user_code).toMatch(USER_CODE);
    for (const scope of ['orders:write', 'admin']) {
      const res = await authorizeDevice(tv, { scope });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_scope');
    }
  });

  it('refuses the OpenID Connect scopes as a choice of this grant, which issues no ID Token, not as unknown ones', async () => {
    for (const scope of ['openid', 'products:read offline_access']) {
      const res = await authorizeDevice(tv, { scope });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_scope');
      expect(res.body.error_description).toMatch(/^the device grant issues no ID Token, so (openid|offline_access) cannot be requested/);
    }
  });

  it('is unauthorized_client for a client not registered for the device grant, at both endpoints', async () => {
    const webApp = await buildClient(context().runtime);
    const res = await authorizeDevice(webApp);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('unauthorized_client');
    expect((await poll('anything', webApp)).body.error).toBe('unauthorized_client');
  });

  it('refuses other methods and other bodies in the JSON error format', async () => {
    const get = await request(context().app).get('/device_authorization');
    expect(get.status).toBe(405);
    expect(get.body.error).toBe('invalid_request');
    const json = await request(context().app).post('/device_authorization').send({ client_id: tv.id });
    expect(json.status).toBe(400);
    expect(json.body.error).toBe('invalid_request');
  });

  it('answers authorization_pending, then slow_down to a poll inside the interval, which grows by 5 s each time (§3.5)', async () => {
    const started = await start();
    const first = await poll(started.device_code);
    expect(first.status).toBe(400);
    expect(first.body.error).toBe('authorization_pending');
    expect(first.headers['cache-control']).toBe('no-store');
    const tooFast = await poll(started.device_code);
    expect(tooFast.status).toBe(400);
    expect(tooFast.body.error).toBe('slow_down');
    expect(tooFast.body.error_description).toMatch(/10 seconds/);
    expect((await poll(started.device_code)).body.error).toBe('slow_down');
    const [row] = await context().runtime.db.select().from(deviceCodes).where(eq(deviceCodes.deviceCodeHash, sha256(started.device_code)));
    expect(row!.intervalSeconds).toBe(15);
    await waitedInterval(started.device_code);
    expect((await poll(started.device_code)).body.error).toBe('authorization_pending');
  });

  it('lets a poll arrive up to a second early (network and queueing delay), and slows down one that comes sooner', async () => {
    const started = await start();
    expect((await poll(started.device_code)).body.error).toBe('authorization_pending');
    const lastPolledSecondsAgo = (seconds: number) =>
      context()
        .runtime.db.update(deviceCodes)
        .set({ lastPolledAt: sql`now() - make_interval(secs => ${seconds})` })
        .where(eq(deviceCodes.deviceCodeHash, sha256(started.device_code)));
    await lastPolledSecondsAgo(4.5);
    expect((await poll(started.device_code)).body.error).toBe('authorization_pending');
    await lastPolledSecondsAgo(2.5);
    const tooSoon = await poll(started.device_code);
    expect(tooSoon.body.error).toBe('slow_down');
    expect(tooSoon.body.error_description).toMatch(/10 seconds/);
  });

  it('counts concurrent too-fast polls one after another: one pending, the rest slow_down', async () => {
    const started = await start();
    const answers = await Promise.all(Array.from({ length: 10 }, () => poll(started.device_code)));
    const errors = answers.map((res) => res.body.error as string);
    expect(errors.filter((error) => error === 'authorization_pending')).toHaveLength(1);
    expect(errors.filter((error) => error === 'slow_down')).toHaveLength(9);
    const [row] = await context().runtime.db.select().from(deviceCodes).where(eq(deviceCodes.deviceCodeHash, sha256(started.device_code)));
    expect(row!.intervalSeconds).toBe(5 + 9 * 5);
  });

  it('issues access and refresh tokens once approved, like the code grant', async () => {
    const { runtime, app } = context();
    const started = await start();
    await decide(started, tv, 'approved');
    const res = await poll(started.device_code);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ token_type: 'Bearer', scope: 'products:read orders:read', expires_in: runtime.config.accessTokenTtl });
    expect(res.body.refresh_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const principal = await runtime.accessTokens.verify(res.body.access_token);
    expect(principal).toMatchObject({ userId: user.id, clientId: tv.id });
    const orders = await request(app).get('/orders').set('Authorization', `Bearer ${res.body.access_token}`);
    expect(orders.status).toBe(200);
    const refreshed = await tokenRequest(app, { grant_type: 'refresh_token', refresh_token: res.body.refresh_token }, tv);
    expect(refreshed.status).toBe(200);
  });

  it('binds a public client’s refresh token to the DPoP key it redeemed the device code with (RFC 9449 §5)', async () => {
    const { app, runtime } = context();
    const [key, thief] = await Promise.all([dpopKey(), dpopKey()]);
    const tokenUrl = `${TEST_ISSUER}/token`;
    const started = await start();
    await decide(started, tv, 'approved');
    const redeemed = await poll(started.device_code).set('DPoP', await dpopProof(key, { htu: tokenUrl, nonce: runtime.dpop.currentNonce() }));
    expect(redeemed.status, redeemed.text).toBe(200);
    expect(redeemed.body.token_type).toBe('DPoP');
    expect(decodeJwt(redeemed.body.access_token).cnf).toEqual({ jkt: key.jkt });
    const refresh = (proof?: string) => {
      const req = request(app).post('/token').type('form');
      if (proof) req.set('DPoP', proof);
      return req.send({ grant_type: 'refresh_token', refresh_token: redeemed.body.refresh_token, client_id: tv.id });
    };
    // Stolen without the key: useless, with or without a proof of the thief's own key, and the family stays alive.
    const bare = await refresh();
    expect(bare.body).toMatchObject({ error: 'invalid_grant', error_description: 'the refresh token is DPoP-bound: send a DPoP proof of its key' });
    const otherKey = await refresh(await dpopProof(thief, { htu: tokenUrl, nonce: runtime.dpop.currentNonce() }));
    expect(otherKey.body).toMatchObject({ error: 'invalid_grant', error_description: 'the refresh token is bound to another DPoP key' });
    const rightful = await refresh(await dpopProof(key, { htu: tokenUrl, nonce: runtime.dpop.currentNonce() }));
    expect(rightful.status, rightful.text).toBe(200);
    expect(decodeJwt(rightful.body.access_token).cnf).toEqual({ jkt: key.jkt });
  });

  it('narrows the audience to a requested resource (RFC 8707), and refuses an unknown one before using the code up', async () => {
    const started = await start();
    await decide(started, tv, 'approved');
    const withResource = (resource: string) => poll(started.device_code).send({ resource });
    const unknown = await withResource('https://evil.example/api');
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toBe('invalid_target');
    const narrowed = await withResource(`${TEST_ISSUER}/graphql`);
    expect(narrowed.status, narrowed.text).toBe(200);
    expect(decodeJwt(narrowed.body.access_token).aud).toBe(`${TEST_ISSUER}/graphql`);
  });

  it('issues no refresh token to a client not registered for refresh_token', async () => {
    const started = await start(confidentialTv);
    await decide(started, confidentialTv, 'approved');
    const res = await poll(started.device_code, confidentialTv);
    expect(res.status).toBe(200);
    expect(res.body).not.toHaveProperty('refresh_token');
  });

  it('is single use: a redeemed device code is invalid_grant, and the tokens stay valid', async () => {
    const started = await start();
    await decide(started, tv, 'approved');
    const first = await poll(started.device_code);
    expect(first.status).toBe(200);
    const again = await poll(started.device_code);
    expect(again.status).toBe(400);
    expect(again.body.error).toBe('invalid_grant');
    await expect(context().runtime.accessTokens.verify(first.body.access_token)).resolves.toBeDefined();
  });

  it('leaves the OpenID scopes a client registered for its code flow out of the scope a device gets by default', async () => {
    const both = await buildClient(context().runtime, { isPublic: true, grantTypes: ['authorization_code', DEVICE_CODE_GRANT_TYPE], scope: 'openid email products:read' });
    const started = await start(both);
    await decide(started, both, 'approved');
    const res = await poll(started.device_code, both);
    expect(res.status, res.text).toBe(200);
    expect(res.body.scope).toBe('products:read');
    expect(res.body.id_token).toBeUndefined();
  });

  it('answers access_denied once the user denied, every time', async () => {
    const started = await start();
    await decide(started, tv, 'denied');
    for (let i = 0; i < 2; i++) {
      const res = await poll(started.device_code);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('access_denied');
    }
  });

  it('answers expired_token for an expired device code, approved or not', async () => {
    const pending = await start();
    const approved = await start();
    await decide(approved, tv, 'approved');
    await context().runtime.db
      .update(deviceCodes)
      .set({ expiresAt: sql`now() - interval '1 second'` })
      .where(sql`${deviceCodes.deviceCodeHash} in (${sha256(pending.device_code)}, ${sha256(approved.device_code)})`);
    for (const started of [pending, approved]) {
      const res = await poll(started.device_code);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('expired_token');
    }
    expect(await store.decide(normalizeUserCode(pending.user_code)!, tv.id, user.id, 'approved')).toBeUndefined();
  });

  it("is invalid_grant for another client's device code, and changes nothing of it", async () => {
    const started = await start();
    await decide(started, tv, 'approved');
    const stolen = await poll(started.device_code, other);
    expect(stolen.status).toBe(400);
    expect(stolen.body).toEqual({ error: 'invalid_grant', error_description: 'the device code is not valid' });
    const [row] = await context().runtime.db.select().from(deviceCodes).where(eq(deviceCodes.deviceCodeHash, sha256(started.device_code)));
    expect(row).toMatchObject({ status: 'approved', lastPolledAt: null });
    expect((await poll(started.device_code)).status).toBe(200);
  });

  it('is invalid_grant for an unknown device code, invalid_request without one', async () => {
    expect((await poll('not-a-device-code')).body).toEqual({ error: 'invalid_grant', error_description: 'the device code is not valid' });
    const missing = await tokenRequest(context().app, { grant_type: DEVICE_CODE_GRANT_TYPE }, tv);
    expect(missing.status).toBe(400);
    expect(missing.body.error).toBe('invalid_request');
    const repeated = await request(context().app).post('/token').type('form').send(`grant_type=${encodeURIComponent(DEVICE_CODE_GRANT_TYPE)}&client_id=${tv.id}&device_code=a&device_code=b`);
    expect(repeated.body.error).toBe('invalid_request');
    const huge = await poll('x'.repeat(15_000));
    expect(huge.body.error).toBe('invalid_grant');
  });

  it('is invalid_grant when the approving user was deleted before the poll', async () => {
    const { runtime } = context();
    const doomed = await buildUser(runtime);
    const started = await start();
    await decide(started, tv, 'approved', doomed.id);
    await runtime.users.delete(doomed.username);
    expect((await poll(started.device_code)).body.error).toBe('invalid_grant');
  });

  it('answers authorization_pending, not invalid_grant, to a poll the user approved between its redeem and its look, and the next poll gets the tokens', async () => {
    const started = await start();
    // The approval lands between the poll's two statements, as a user's Allow on another instance can.
    const redeem = DeviceCodeStore.prototype.redeem;
    const spy = vi.spyOn(DeviceCodeStore.prototype, 'redeem').mockImplementationOnce(async function (this: DeviceCodeStore, ...args) {
      const redeemed = await redeem.apply(this, args);
      await decide(started, tv, 'approved');
      return redeemed;
    });
    try {
      const racing = await poll(started.device_code);
      expect(racing.status).toBe(400);
      expect(racing.body.error).toBe('authorization_pending');
    } finally {
      spy.mockRestore();
    }
    await waitedInterval(started.device_code);
    const next = await poll(started.device_code);
    expect(next.status, next.text).toBe(200);
    expect((await context().runtime.accessTokens.verify(next.body.access_token)).userId).toBe(user.id);
  });

  it('yields exactly one token to 50 concurrent polls after approval', async () => {
    const started = await start();
    await decide(started, tv, 'approved');
    const answers = await Promise.all(Array.from({ length: 50 }, () => poll(started.device_code)));
    expect(answers.filter((res) => res.status === 200)).toHaveLength(1);
    expect(answers.filter((res) => res.status === 400).every((res) => res.body.error === 'invalid_grant')).toBe(true);
  });

  it('yields exactly one token to concurrent polls on two instances of one database', async () => {
    const { kind, testDatabase, config } = context();
    if (kind !== 'postgres') return; // PGlite is one process's database; a second instance needs PostgreSQL
    const second = await openRuntime(config, createLogger('silent'), await testDatabase.open());
    try {
      const apps = [context().app, createApp(second)];
      for (let round = 0; round < 5; round++) {
        const started = await start();
        await decide(started, tv, 'approved');
        const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => poll(started.device_code, tv, apps[i % 2])));
        expect(answers.filter((res) => res.status === 200)).toHaveLength(1);
        expect(answers.filter((res) => res.status !== 200).every((res) => res.body.error === 'invalid_grant')).toBe(true);
      }
      // slow_down is shared too: a poll on one instance right after one on the other is too fast.
      const started = await start();
      expect((await poll(started.device_code, tv, apps[0])).body.error).toBe('authorization_pending');
      expect((await poll(started.device_code, tv, apps[1])).body.error).toBe('slow_down');
    } finally {
      await second.close();
    }
  });

  it('answers a client deleted while this instance still has it cached as invalid_client, never a 500', async () => {
    const { runtime } = context();
    const [publicDoomed, confidentialDoomed] = await Promise.all([
      buildClient(runtime, { redirectUris: [], isPublic: true, grantTypes: [DEVICE_CODE_GRANT_TYPE] }),
      buildClient(runtime, { redirectUris: [], grantTypes: [DEVICE_CODE_GRANT_TYPE] }),
    ]);
    // The first request puts the client in this instance's client cache; the delete (another instance, the CLI) does not clear it.
    await Promise.all([start(publicDoomed), start(confidentialDoomed)]);
    await Promise.all([runtime.clients.delete(publicDoomed.id), runtime.clients.delete(confidentialDoomed.id)]);
    const viaBody = await authorizeDevice(publicDoomed);
    expect(viaBody.status).toBe(400);
    expect(viaBody.body).toEqual({ error: 'invalid_client', error_description: 'client authentication failed' });
    const viaHeader = await authorizeDevice(confidentialDoomed);
    expect(viaHeader.status).toBe(401);
    expect(viaHeader.body.error).toBe('invalid_client');
    expect(viaHeader.headers['www-authenticate']).toMatch(/^Basic /);
  });

  it('ends with the client: a deleted client polls invalid_client and its device codes are gone', async () => {
    const { runtime } = context();
    const doomed = await buildClient(runtime, { redirectUris: [], isPublic: true, grantTypes: [DEVICE_CODE_GRANT_TYPE] });
    const started = await start(doomed);
    await runtime.clients.delete(doomed.id);
    const rows = await runtime.db.select().from(deviceCodes).where(eq(deviceCodes.deviceCodeHash, sha256(started.device_code)));
    expect(rows).toHaveLength(0);
  });
});

describeEachDatabase(
  'device authorization requests per client IP (DEVICE_AUTHORIZATION_RATE_LIMIT)',
  (context) => {
    it('of 10 concurrent requests from one IP, 4 get codes and 6 are 429 with Retry-After, storing nothing; other IPs still get codes', async () => {
      const { runtime, app } = context();
      const tv = await buildClient(runtime, { redirectUris: [], isPublic: true, grantTypes: [DEVICE_CODE_GRANT_TYPE] });
      const ask = (ip: string, clientId = tv.id) =>
        request(app).post('/device_authorization').type('form').set('X-Forwarded-For', ip).send({ client_id: clientId });
      const stored = async () => Number((await runtime.db.select({ n: sql<number>`count(*)` }).from(deviceCodes))[0]!.n);

      const answers = await Promise.all(Array.from({ length: 10 }, () => ask('203.0.113.7')));
      expect(answers.map((res) => res.status).sort()).toEqual([200, 200, 200, 200, 429, 429, 429, 429, 429, 429]);
      for (const refused of answers.filter((res) => res.status === 429)) {
        expect(refused.body).toEqual({ error: 'temporarily_unavailable', error_description: 'too many device authorization requests from this address; try again later' });
        expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
        expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(15 * 60);
        expect(refused.headers['cache-control']).toBe('no-store');
      }
      expect(await stored()).toBe(4);
      // Requests that fail client authentication count too: the limit is not a way to probe client ids.
      expect((await ask('203.0.113.8', 'no-such-client')).body.error).toBe('invalid_client');
      const [second] = await Promise.all([ask('203.0.113.8'), ask('203.0.113.8'), ask('203.0.113.8')]);
      expect(second.status === 200 || second.status === 429).toBe(true);
      expect((await ask('203.0.113.8')).status).toBe(429);
      expect((await ask('198.51.100.1')).status).toBe(200);
      expect(await stored()).toBe(8);
    });

    it('never announces a Retry-After longer than the window, though a concurrent request opened it after this one began', async () => {
      const { runtime, app } = context();
      const tv = await buildClient(runtime, { redirectUris: [], isPublic: true, grantTypes: [DEVICE_CODE_GRANT_TYPE] });
      // What a request sees when the one that opened the window started after it: a window starting after its now().
      await runtime.db.insert(loginThrottle).values({ key: 'device:203.0.113.9', failures: 4, windowStartedAt: sql`now() + interval '5 seconds'` });
      const refused = await request(app).post('/device_authorization').type('form').set('X-Forwarded-For', '203.0.113.9').send({ client_id: tv.id });
      expect(refused.status).toBe(429);
      expect(Number(refused.headers['retry-after'])).toBe(15 * 60);
    });
  },
  { DEVICE_AUTHORIZATION_RATE_LIMIT: '4', TRUST_PROXY: 'loopback' },
);
