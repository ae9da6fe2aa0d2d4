/**
 * Pairwise subjects (OIDC Core §8.1) everywhere a pairwise client can look: its access token (RFC 9068), ID Token,
 * userinfo, introspection, refreshed and device-flow tokens never carry the plain user id, while the API still serves
 * the right user's orders, found through the grant. Public-subject tokens cost no extra read.
 */
import { beforeAll, expect, it } from 'vitest';
import request from 'supertest';
import { decodeJwt } from 'jose';
import { describeEachDatabase } from '../../support/runtime.js';
import { basic, buildClient, buildUser, obtainTokens, tokenRequest, type TestClient, type TestUser } from '../../support/oauth.js';
import { buildOrder } from '../../support/factories.js';
import { captureSql } from '../../support/sql.js';
import { DEVICE_CODE_GRANT_TYPE } from '../../../src/oauth/stores/clients.js';
import { DeviceCodeStore } from '../../../src/oauth/stores/device-codes.js';
import { ClientGrantStore } from '../../../src/oauth/stores/client-grants.js';

const OIDC_SCOPE = 'openid offline_access orders:read';

describeEachDatabase('pairwise subjects', (context) => {
  let pairwise: TestClient;
  let sameSector: TestClient;
  let otherSector: TestClient;
  let publicSubject: TestClient;
  let resourceServer: TestClient;
  let user: TestUser;
  let someoneElse: TestUser;

  beforeAll(async () => {
    const { runtime } = context();
    [pairwise, sameSector, otherSector, publicSubject, resourceServer, user, someoneElse] = await Promise.all([
      buildClient(runtime, { redirectUris: ['https://shop.example/cb'], oidc: { subjectType: 'pairwise' } }),
      buildClient(runtime, { redirectUris: ['https://shop.example/other-cb'], oidc: { subjectType: 'pairwise' } }),
      buildClient(runtime, { redirectUris: ['https://tracker.example/cb'], oidc: { subjectType: 'pairwise' } }),
      buildClient(runtime, { redirectUris: ['https://plain.example/cb'] }),
      buildClient(runtime, { redirectUris: ['https://api.example/cb'], grantTypes: ['authorization_code', 'client_credentials'] }),
      buildUser(runtime),
      buildUser(runtime),
    ]);
    await buildOrder(runtime, { userId: user.id, memo: 'mine' });
    await buildOrder(runtime, { userId: someoneElse.id, memo: 'not mine' });
  });

  async function signIn(client: TestClient, who = user) {
    const tokens = await obtainTokens(context().app, context().runtime, client, who, { scope: OIDC_SCOPE });
    return tokens as typeof tokens & { id_token: string };
  }

  const introspect = (token: string, as: TestClient) =>
    request(context().app).post('/introspect').set('Authorization', basic(as.id, as.secret!)).type('form').send({ token });

  /** Whether the plain id appears as any claim's value (numbers such as iat are not the id's string). */
  function showsPlainId(claims: Record<string, unknown>, who = user): boolean {
    return Object.values(claims).some((value) => value === String(who.id) || value === who.id);
  }

  it('gives the access token, ID Token, userinfo and introspection the same pairwise sub, never the user id', async () => {
    const tokens = await signIn(pairwise);
    const access = decodeJwt(tokens.access_token);
    const id = decodeJwt(tokens.id_token);
    expect(id.sub).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(access.sub).toBe(id.sub);
    expect(showsPlainId(access)).toBe(false);
    expect(showsPlainId(id)).toBe(false);

    const info = await request(context().app).get('/userinfo').set('Authorization', `Bearer ${tokens.access_token}`);
    expect(info.status).toBe(200);
    expect(info.body.sub).toBe(id.sub);

    const forAccess = await introspect(tokens.access_token, pairwise);
    expect(forAccess.body).toMatchObject({ active: true, sub: id.sub });
    expect(showsPlainId(forAccess.body)).toBe(false);
    const forRefresh = await introspect(tokens.refresh_token, pairwise);
    expect(forRefresh.body).toMatchObject({ active: true, sub: id.sub });
    expect(showsPlainId(forRefresh.body)).toBe(false);
  });

  it('tells a resource server introspecting a pairwise token nothing, the user id least of all', async () => {
    const tokens = await signIn(pairwise);
    for (const token of [tokens.access_token, tokens.refresh_token]) {
      const res = await introspect(token, resourceServer);
      expect(res.body).toEqual({ active: false });
    }
  });

  it('keeps the pairwise sub in refreshed tokens', async () => {
    const tokens = await signIn(pairwise);
    const sub = decodeJwt(tokens.access_token).sub;
    const res = await tokenRequest(context().app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, pairwise);
    expect(res.status).toBe(200);
    expect(decodeJwt(res.body.access_token).sub).toBe(sub);
    expect(decodeJwt(res.body.id_token).sub).toBe(sub);
  });

  it('gives clients of one sector one sub, and clients of different sectors different ones', async () => {
    const [a, b, c] = await Promise.all([signIn(pairwise), signIn(sameSector), signIn(otherSector)]);
    const subs = [a, b, c].map((tokens) => decodeJwt(tokens.access_token).sub);
    expect(subs[0]).toBe(subs[1]);
    expect(subs[2]).not.toBe(subs[0]);
    expect(decodeJwt(c.id_token).sub).toBe(subs[2]);
    // And another user of the same client is someone else.
    const theirs = await signIn(pairwise, someoneElse);
    expect(decodeJwt(theirs.access_token).sub).not.toBe(subs[0]);
  });

  it("serves the right user's orders to a pairwise token, over REST and GraphQL, 20 requests at once", async () => {
    const tokens = await signIn(pairwise);
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        i % 2
          ? request(context().app).get('/orders?fields=memo').set('Authorization', `Bearer ${tokens.access_token}`)
          : request(context().app)
              .post('/graphql')
              .set('Authorization', `Bearer ${tokens.access_token}`)
              .send({ query: '{ orders(limit: 10) { memo } }' }),
      ),
    );
    for (const res of responses) {
      expect(res.status).toBe(200);
      const memos = JSON.stringify(res.body);
      expect(memos).toContain('mine');
      expect(memos).not.toContain('not mine');
    }
  });

  it('gives the device flow the pairwise sub too', async () => {
    const { runtime, app } = context();
    const tv = await buildClient(runtime, {
      redirectUris: ['https://shop.example/tv'],
      grantTypes: ['authorization_code', DEVICE_CODE_GRANT_TYPE],
      oidc: { subjectType: 'pairwise' },
    });
    const devices = new DeviceCodeStore(runtime.db, 600);
    const issued = await devices.issue(tv.id, 'orders:read');
    await devices.decide(issued.userCode, tv.id, user.id, 'approved');
    const res = await tokenRequest(app, { grant_type: DEVICE_CODE_GRANT_TYPE, device_code: issued.deviceCode }, tv);
    expect(res.status).toBe(200);
    const sub = decodeJwt(res.body.access_token).sub;
    expect(sub).not.toBe(String(user.id));
    expect(sub).toBe(decodeJwt((await signIn(pairwise)).access_token).sub);
    const orders = await request(app).get('/orders?fields=memo').set('Authorization', `Bearer ${res.body.access_token}`);
    expect(JSON.stringify(orders.body)).toContain('mine');
  });

  it('refuses a pairwise token once its user is deleted, and one naming a grant of another client or no user', async () => {
    const { runtime, app } = context();
    const leaving = await buildUser(runtime);
    const tokens = await signIn(pairwise, leaving);
    await runtime.users.delete(leaving.username);
    const gone = await request(app).get('/orders').set('Authorization', `Bearer ${tokens.access_token}`);
    expect(gone.status).toBe(401);

    // Our own signature over a mismatched grant (it cannot be forged from outside): still refused, never a 500.
    const theirs = await signIn(publicSubject);
    const crossed = await runtime.accessTokens.issue({ userId: user.id, subject: 'x'.repeat(43), clientId: pairwise.id, scope: 'orders:read', grantId: theirs.grantId });
    const machineGrant = await new ClientGrantStore(runtime.db).create(resourceServer.id, 'products:read');
    const noUser = await runtime.accessTokens.issue({ userId: user.id, subject: 'y'.repeat(43), clientId: resourceServer.id, scope: 'orders:read', grantId: machineGrant! });
    for (const token of [crossed.token, noUser.token]) {
      const res = await request(app).get('/orders').set('Authorization', `Bearer ${token}`);
      expect(res.status).toBe(401);
    }
  });

  it('reads no grant for a public-subject token, and a pairwise grant once per instance', async () => {
    const { runtime } = context();
    const plain = await signIn(publicSubject);
    expect(decodeJwt(plain.access_token).sub).toBe(String(user.id));
    const ownerReads = (statements: string[]) => statements.filter((sql) => /select "client_id", "user_id" from "grants"/.test(sql)).length;
    expect(ownerReads(await captureSql(runtime, () => runtime.accessTokens.verify(plain.access_token)))).toBe(0);

    const first = await signIn(pairwise);
    expect(ownerReads(await captureSql(runtime, () => runtime.accessTokens.verify(first.access_token)))).toBe(1);
    const refreshed = await tokenRequest(context().app, { grant_type: 'refresh_token', refresh_token: first.refresh_token }, pairwise);
    expect(ownerReads(await captureSql(runtime, () => runtime.accessTokens.verify(refreshed.body.access_token)))).toBe(0);
  });
});
