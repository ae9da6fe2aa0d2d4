/**
 * `GET|POST /userinfo` (OIDC Core §5.3) with the two kinds of access token the server issues: Bearer, and
 * DPoP-bound ones, sent as `Authorization: DPoP` with a proof for this URL and method (RFC 9449 §7).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { describeEachDatabase, TEST_ISSUER } from '../../support/runtime.js';
import { basic, buildClient, buildUser, issueCode, obtainTokens, type TestClient, type TestUser } from '../../support/oauth.js';
import { dpopKey, dpopProof, type DpopKey } from '../../support/dpop.js';

const USERINFO = `${TEST_ISSUER}/userinfo`;
const EXTERNAL_RESOURCE = 'https://rs.example/api';
const DPOP_CHALLENGE = /^DPoP realm="fieldgate", algs="ES256 EdDSA Ed25519 RS256", error="invalid_dpop_proof", error_description="[^"]+"$/;

/** An access token bound to `key`, for `user`, with the openid scope. */
async function boundToken(app: Parameters<typeof request>[0], runtime: Parameters<typeof issueCode>[0], client: TestClient, user: TestUser, key: DpopKey): Promise<string> {
  const { code, verifier } = await issueCode(runtime, client, user, { scope: 'openid' });
  const res = await request(app)
    .post('/token')
    .type('form')
    .set('Authorization', basic(client.id, client.secret!))
    .set('DPoP', await dpopProof(key, { htu: `${TEST_ISSUER}/token`, nonce: runtime.dpop.currentNonce() }))
    .send({ grant_type: 'authorization_code', code, redirect_uri: client.redirectUri, code_verifier: verifier });
  expect(res.status, res.text).toBe(200);
  expect(res.body.token_type).toBe('DPoP');
  return res.body.access_token as string;
}

describeEachDatabase('GET|POST /userinfo', (context) => {
  let client: TestClient;
  let user: TestUser;

  beforeAll(async () => {
    [client, user] = await Promise.all([buildClient(context().runtime), buildUser(context().runtime)]);
  });

  const call = (method: 'GET' | 'POST', authorization: string, proof?: string) => {
    const req = method === 'GET' ? request(context().app).get('/userinfo') : request(context().app).post('/userinfo');
    req.set('Authorization', authorization);
    if (proof !== undefined) req.set('DPoP', proof);
    return req;
  };

  it('answers a Bearer token with the claims, by GET and by POST', async () => {
    const { access_token } = await obtainTokens(context().app, context().runtime, client, user, { scope: 'openid' });
    for (const method of ['GET', 'POST'] as const) {
      const res = await call(method, `Bearer ${access_token}`);
      expect(res.status, method).toBe(200);
      expect(res.body).toEqual({ sub: String(user.id) });
    }
  });

  describe('a DPoP-bound token (RFC 9449 §7)', () => {
    it.each(['GET', 'POST'] as const)('answers %s with the claims given a proof with ath, htm and htu', async (method) => {
      const key = await dpopKey();
      const token = await boundToken(context().app, context().runtime, client, user, key);
      const res = await call(method, `DPoP ${token}`, await dpopProof(key, { htm: method, htu: USERINFO, accessToken: token }));
      expect(res.status, res.text).toBe(200);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.body).toEqual({ sub: String(user.id) });
    });

    const refusals: [string, (key: DpopKey, token: string) => Promise<string | undefined>][] = [
      ['no proof', async () => undefined],
      ['a proof signed by another key', async (_key, token) => dpopProof(await dpopKey(), { htm: 'GET', htu: USERINFO, accessToken: token })],
      ['a wrong ath', (key) => dpopProof(key, { htm: 'GET', htu: USERINFO, ath: 'A'.repeat(43) })],
      ['a wrong htm', (key, token) => dpopProof(key, { htm: 'POST', htu: USERINFO, accessToken: token })],
      ['the htu of another endpoint', (key, token) => dpopProof(key, { htm: 'GET', htu: `${TEST_ISSUER}/products`, accessToken: token })],
    ];
    it.each(refusals)('answers %s with 401 and a DPoP challenge naming invalid_dpop_proof', async (_title, build) => {
      const key = await dpopKey();
      const token = await boundToken(context().app, context().runtime, client, user, key);
      const res = await call('GET', `DPoP ${token}`, await build(key, token));
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toMatch(DPOP_CHALLENGE);
      expect(res.body.error).toBe('invalid_token');
    });

    it('refuses the token sent as Bearer, and a proof replayed', async () => {
      const key = await dpopKey();
      const token = await boundToken(context().app, context().runtime, client, user, key);
      const asBearer = await call('GET', `Bearer ${token}`);
      expect(asBearer.status).toBe(401);
      expect(asBearer.headers['www-authenticate']).toMatch(/^DPoP .*error="invalid_token"/);
      const proof = await dpopProof(key, { htm: 'GET', htu: USERINFO, accessToken: token });
      expect((await call('GET', `DPoP ${token}`, proof)).status).toBe(200);
      const replay = await call('GET', `DPoP ${token}`, proof);
      expect(replay.status).toBe(401);
      expect(replay.headers['www-authenticate']).toMatch(DPOP_CHALLENGE);
    });
  });

  it('offers both schemes to a request without a token', async () => {
    const res = await request(context().app).get('/userinfo');
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer realm="fieldgate", DPoP realm="fieldgate", algs="ES256 EdDSA Ed25519 RS256"');
  });
});

describeEachDatabase(
  'GET /userinfo with DPOP_NONCE=all',
  (context) => {
    it('asks for a nonce with use_dpop_nonce and DPoP-Nonce, then answers the retry', async () => {
      const { app, runtime } = context();
      const [client, user, key] = await Promise.all([buildClient(runtime), buildUser(runtime), dpopKey()]);
      const token = await boundToken(app, runtime, client, user, key);
      const first = await request(app).get('/userinfo').set('Authorization', `DPoP ${token}`).set('DPoP', await dpopProof(key, { htm: 'GET', htu: USERINFO, accessToken: token }));
      expect(first.status).toBe(401);
      expect(first.headers['www-authenticate']).toMatch(/error="use_dpop_nonce"/);
      const nonce = first.headers['dpop-nonce'];
      expect(nonce).toBeTruthy();
      const retry = await request(app)
        .get('/userinfo')
        .set('Authorization', `DPoP ${token}`)
        .set('DPoP', await dpopProof(key, { htm: 'GET', htu: USERINFO, accessToken: token, nonce }));
      expect(retry.status, retry.text).toBe(200);
      expect(retry.body).toEqual({ sub: String(user.id) });
    });
  },
  { DPOP_NONCE: 'all' },
);

describeEachDatabase(
  'GET /userinfo with RESOURCE_INDICATORS',
  (context) => {
    async function tokenFor(resources: string[]): Promise<string> {
      const { app, runtime } = context();
      const [client, user] = await Promise.all([buildClient(runtime), buildUser(runtime)]);
      const { code, verifier } = await issueCode(runtime, client, user, { scope: 'openid', resources });
      const res = await request(app)
        .post('/token')
        .type('form')
        .set('Authorization', basic(client.id, client.secret!))
        .send({ grant_type: 'authorization_code', code, redirect_uri: client.redirectUri, code_verifier: verifier });
      expect(res.status, res.text).toBe(200);
      return res.body.access_token as string;
    }

    it('refuses a token issued only for an external resource (RFC 8707), and answers one for this server’s own APIs', async () => {
      const external = await request(context().app).get('/userinfo').set('Authorization', `Bearer ${await tokenFor([EXTERNAL_RESOURCE])}`);
      expect(external.status).toBe(401);
      expect(external.headers['www-authenticate']).toMatch(/^Bearer realm="fieldgate", error="invalid_token"/);
      expect(external.body.error).toBe('invalid_token');
      for (const resources of [[], [TEST_ISSUER], [`${TEST_ISSUER}/graphql`], [EXTERNAL_RESOURCE, TEST_ISSUER]]) {
        const own = await request(context().app).get('/userinfo').set('Authorization', `Bearer ${await tokenFor(resources)}`);
        expect(own.status, JSON.stringify(resources)).toBe(200);
      }
    });
  },
  { RESOURCE_INDICATORS: EXTERNAL_RESOURCE },
);
