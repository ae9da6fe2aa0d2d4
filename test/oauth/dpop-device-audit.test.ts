/**
 * An independent audit of DPoP (RFC 9449) and the device authorization grant (RFC 8628): the corners a hostile client or
 * a certification suite tries that the feature suites leave out, over raw HTTP against the real app.
 */
import { describe, expect, it } from 'vitest';
import request from 'supertest';
import { randomUUID } from 'node:crypto';
import { SignJWT, exportJWK, generateKeyPair, type JWTPayload } from 'jose';
import { createApp } from '../../src/app.js';
import { createLogger } from '../../src/logger.js';
import { openRuntime } from '../../src/runtime.js';
import { DEVICE_CODE_GRANT_TYPE } from '../../src/oauth/stores/clients.js';
import { DeviceCodeStore, normalizeUserCode } from '../../src/oauth/stores/device-codes.js';
import { describeEachDatabase, TEST_ISSUER } from '../support/runtime.js';
import { basic, buildClient, buildUser, issueCode, type TestClient, type TestUser } from '../support/oauth.js';
import { dpopKey, dpopProof, type DpopKey } from '../support/dpop.js';
import { createTestUser } from '../support/tokens.js';
import { grants } from '../../src/db/schema.js';

const TOKEN_URL = `${TEST_ISSUER}/token`;
const PRODUCTS = `${TEST_ISSUER}/products`;
const DPOP_CHALLENGE = /^DPoP realm="fieldgate", algs="ES256 EdDSA Ed25519 RS256", error="([a-z_]+)", error_description="[^"]+"$/;

const now = () => Math.floor(Date.now() / 1000);

describeEachDatabase('DPoP and device grant audit', (context) => {
  const nonce = () => context().runtime.dpop.currentNonce();
  /** A nonce the server stopped accepting: issued ten minutes ago. */
  const staleNonce = () => context().runtime.dpop.currentNonce(Date.now() - 10 * 60_000);

  async function codeGrant(client: TestClient, user: TestUser) {
    const { code, verifier } = await issueCode(context().runtime, client, user);
    return { grant_type: 'authorization_code', code, redirect_uri: client.redirectUri, code_verifier: verifier };
  }

  function post(fields: Record<string, string>, client: TestClient, proof?: string | string[], app = context().app) {
    const req = request(app).post('/token').type('form');
    if (client.secret) req.set('Authorization', basic(client.id, client.secret));
    else fields = { ...fields, client_id: client.id };
    if (proof !== undefined) req.set('DPoP', proof as string);
    return req.send(fields);
  }

  /** A proof signed by `key` with exactly these claims and extra header members, none filled in. */
  function rawProof(key: DpopKey, claims: JWTPayload, header: Record<string, unknown> = {}) {
    return new SignJWT(claims).setProtectedHeader({ alg: key.alg, typ: 'dpop+jwt', jwk: key.publicJwk, ...header }).sign(key.privateKey);
  }

  const tokenClaims = (overrides: Record<string, unknown> = {}): JWTPayload => ({ htm: 'POST', htu: TOKEN_URL, jti: randomUUID(), iat: now(), nonce: nonce(), ...overrides });

  async function publicJwkOf(alg: 'RS256' | 'EdDSA') {
    return exportJWK((await generateKeyPair(alg, { extractable: true })).publicKey);
  }

  describe('proofs at /token (§4.2, §4.3)', () => {
    const refusals: [string, (key: DpopKey) => Promise<string>, RegExp][] = [
      ['no htm', (key) => rawProof(key, tokenClaims({ htm: undefined })), /htm/],
      ['an htm in lower case (methods are case-sensitive)', (key) => rawProof(key, tokenClaims({ htm: 'post' })), /htm/],
      ['no htu', (key) => rawProof(key, tokenClaims({ htu: undefined })), /htu/],
      ['a numeric htu', (key) => rawProof(key, tokenClaims({ htu: 42 })), /htu/],
      ['a relative htu', (key) => rawProof(key, tokenClaims({ htu: '/token' })), /htu/],
      ['an htu with another scheme', (key) => rawProof(key, tokenClaims({ htu: 'https://localhost:3000/token' })), /htu/],
      ['no jti', (key) => rawProof(key, tokenClaims({ jti: undefined })), /jti/],
      ['an empty jti', (key) => rawProof(key, tokenClaims({ jti: '' })), /jti/],
      ['a numeric jti', (key) => rawProof(key, tokenClaims({ jti: 7 })), /jti/],
      ['a jti of 300 characters', (key) => rawProof(key, tokenClaims({ jti: 'j'.repeat(300) })), /jti/],
      ['no iat', (key) => rawProof(key, tokenClaims({ iat: undefined })), /iat/],
      ['a string iat', (key) => rawProof(key, tokenClaims({ iat: String(now()) })), /not a valid signed JWT/],
      ['an exp in the past', (key) => rawProof(key, tokenClaims({ exp: now() - 10 })), /not a valid signed JWT/],
      ['an RSA jwk under ES256', async (key) => rawProof(key, tokenClaims(), { jwk: await publicJwkOf('RS256') }), /not a valid signed JWT/],
      ['an OKP jwk under ES256', async (key) => rawProof(key, tokenClaims(), { jwk: await publicJwkOf('EdDSA') }), /not a valid signed JWT/],
      ['a jwk that is no object', (key) => rawProof(key, tokenClaims(), { jwk: 'x' }), /public key that signed it/],
      ['no jwk', (key) => rawProof(key, tokenClaims(), { jwk: undefined }), /public key that signed it/],
    ];
    for (const [title, build, message] of refusals) {
      it(`refuses a proof with ${title}: 400 invalid_dpop_proof, code left for the retry`, async () => {
        const { runtime } = context();
        const [client, user, key] = await Promise.all([buildClient(runtime), buildUser(runtime), dpopKey()]);
        const fields = await codeGrant(client, user);
        const res = await post(fields, client, await build(key));
        expect(res.status).toBe(400);
        expect(res.headers['content-type']).toBe('application/json;charset=UTF-8');
        expect(res.headers['cache-control']).toBe('no-store');
        expect(res.body).toMatchObject({ error: 'invalid_dpop_proof', error_description: expect.stringMatching(message) });
        // Refused before the grant ran (§5): the corrected proof still gets the tokens.
        const retry = await post(fields, client, await dpopProof(key, { htu: TOKEN_URL, nonce: nonce() }));
        expect(retry.status, retry.text).toBe(200);
      });
    }

    for (const [title, value] of [['a stale', staleNonce], ['a numeric', () => 5], ['a forged', () => `${'z'.repeat(5)}.${'A'.repeat(32)}`]] as const) {
      it(`answers ${title} nonce with use_dpop_nonce and a fresh DPoP-Nonce that the retry succeeds with (§8)`, async () => {
        const { runtime } = context();
        const [client, user, key] = await Promise.all([buildClient(runtime), buildUser(runtime), dpopKey()]);
        const fields = await codeGrant(client, user);
        const res = await post(fields, client, await rawProof(key, tokenClaims({ nonce: value() })));
        expect(res.status).toBe(400);
        expect(res.body.error).toBe('use_dpop_nonce');
        const fresh = res.headers['dpop-nonce'];
        expect(fresh).toBe(nonce());
        const retry = await post(fields, client, await rawProof(key, tokenClaims({ nonce: fresh })));
        expect(retry.status, retry.text).toBe(200);
        expect(retry.body.token_type).toBe('DPoP');
      });
    }

    it('accepts the fully-specified Ed25519 algorithm it advertises (RFC 9864)', async () => {
      const { runtime } = context();
      const [client, user] = await Promise.all([buildClient(runtime), buildUser(runtime)]);
      const { privateKey, publicKey } = await generateKeyPair('Ed25519', { extractable: true });
      const proof = await new SignJWT(tokenClaims()).setProtectedHeader({ alg: 'Ed25519', typ: 'dpop+jwt', jwk: await exportJWK(publicKey) }).sign(privateKey);
      const res = await post(await codeGrant(client, user), client, proof);
      expect(res.status, res.text).toBe(200);
      expect(res.body.token_type).toBe('DPoP');
    });
  });

  describe('proofs at the resources (§7)', () => {
    async function boundTokens(key: DpopKey, client?: TestClient) {
      const { runtime } = context();
      const [owner, user] = await Promise.all([client ?? buildClient(runtime), buildUser(runtime)]);
      const res = await post(await codeGrant(owner, user), owner, await dpopProof(key, { htu: TOKEN_URL, nonce: nonce() }));
      expect(res.status, res.text).toBe(200);
      return res.body as { access_token: string; refresh_token: string };
    }

    function getProducts(token: string, proof?: string | string[], scheme = 'DPoP', app = context().app) {
      const req = request(app).get('/products').set('Authorization', `${scheme} ${token}`);
      if (proof !== undefined) req.set('DPoP', proof as string);
      return req;
    }

    it('refuses the proof a client sent to /token when replayed at a resource with the token it got', async () => {
      const key = await dpopKey();
      const tokenProof = await dpopProof(key, { htu: TOKEN_URL, nonce: nonce() });
      const { runtime } = context();
      const [client, user] = await Promise.all([buildClient(runtime), buildUser(runtime)]);
      const { access_token: token } = (await post(await codeGrant(client, user), client, tokenProof)).body;
      const res = await getProducts(token, tokenProof);
      expect(res.status).toBe(401);
      expect(DPOP_CHALLENGE.exec(res.headers['www-authenticate'] ?? '')?.[1]).toBe('invalid_dpop_proof');
    });

    it('refuses two DPoP headers at a resource', async () => {
      const key = await dpopKey();
      const { access_token: token } = await boundTokens(key);
      const proofs = [await dpopProof(key, { htm: 'GET', htu: PRODUCTS, accessToken: token }), await dpopProof(key, { htm: 'GET', htu: PRODUCTS, accessToken: token })];
      const res = await getProducts(token, proofs);
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toMatch(/error="invalid_dpop_proof", error_description="send exactly one DPoP header"/);
    });

    it('compares htu without its fragment and after case normalization, and reads the scheme name in any case', async () => {
      const key = await dpopKey();
      const { access_token: token } = await boundTokens(key);
      for (const [htu, scheme] of [[`${PRODUCTS}#frag`, 'DPoP'], ['HTTP://LocalHost:3000/products?a=1#b', 'DPoP'], [PRODUCTS, 'dpop']] as const) {
        const res = await getProducts(token, await dpopProof(key, { htm: 'GET', htu, accessToken: token }), scheme);
        expect(res.status, `${htu} ${scheme}: ${res.text}`).toBe(200);
      }
    });

    it('answers a stale nonce with 401 use_dpop_nonce and DPoP-Nonce, then accepts the proof carrying it', async () => {
      const key = await dpopKey();
      const { access_token: token } = await boundTokens(key);
      const res = await getProducts(token, await dpopProof(key, { htm: 'GET', htu: PRODUCTS, accessToken: token, nonce: staleNonce() }));
      expect(res.status).toBe(401);
      expect(DPOP_CHALLENGE.exec(res.headers['www-authenticate'] ?? '')?.[1]).toBe('use_dpop_nonce');
      const retry = await getProducts(token, await dpopProof(key, { htm: 'GET', htu: PRODUCTS, accessToken: token, nonce: res.headers['dpop-nonce'] }));
      expect(retry.status, retry.text).toBe(200);
    });

    it('refuses the bearer downgrade of a bound token everywhere a token is read: REST with a proof, plain GraphQL, the userinfo body', async () => {
      const { app } = context();
      const key = await dpopKey();
      const { access_token: token } = await boundTokens(key);
      const answers = [
        await getProducts(token, await dpopProof(key, { htm: 'GET', htu: PRODUCTS, accessToken: token }), 'Bearer'),
        await request(app).post('/graphql').set('Authorization', `Bearer ${token}`).send({ query: '{ __typename }' }),
        await request(app).post('/userinfo').type('form').send({ access_token: token }),
      ];
      for (const res of answers) {
        expect(res.status).toBe(401);
        expect(DPOP_CHALLENGE.exec(res.headers['www-authenticate'] ?? '')?.[1]).toBe('invalid_token');
      }
    });

    it('accepts a proof at a resource once across two instances of one database (§11.1)', async () => {
      const { kind, testDatabase, config } = context();
      if (kind !== 'postgres') return; // PGlite is one process's database; a second instance needs PostgreSQL
      const second = await openRuntime(config, createLogger('silent'), await testDatabase.open());
      try {
        const apps = [context().app, createApp(second)];
        const key = await dpopKey();
        const { access_token: token } = await boundTokens(key);
        const proof = await dpopProof(key, { htm: 'GET', htu: PRODUCTS, accessToken: token });
        const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => getProducts(token, proof, 'DPoP', apps[i % 2])));
        expect(answers.filter((res) => res.status === 200)).toHaveLength(1);
        for (const res of answers.filter((answer) => answer.status !== 200)) {
          expect(res.headers['www-authenticate']).toMatch(/error="invalid_dpop_proof", error_description="this DPoP proof has already been used"/);
        }
      } finally {
        await second.close();
      }
    });
  });

  describe('device authorization grant (RFC 8628)', () => {
    let ipSequence = 0;
    const deviceClient = (overrides: Partial<Parameters<typeof buildClient>[1]> = {}) =>
      buildClient(context().runtime, { redirectUris: [], isPublic: true, grantTypes: [DEVICE_CODE_GRANT_TYPE, 'refresh_token'], scope: 'products:read orders:read', ...overrides });

    function authorizeDevice(client: TestClient, fields: Record<string, string> = {}) {
      const req = request(context().app).post('/device_authorization').type('form').set('X-Forwarded-For', `192.0.2.${++ipSequence}`);
      if (client.secret) req.set('Authorization', basic(client.id, client.secret));
      return req.send(client.secret ? fields : { client_id: client.id, ...fields });
    }

    const poll = (client: TestClient, deviceCode: string, proof?: string) =>
      post({ grant_type: DEVICE_CODE_GRANT_TYPE, device_code: deviceCode }, client, proof);

    async function approved(client: TestClient, fields: Record<string, string> = {}) {
      const { runtime } = context();
      const res = await authorizeDevice(client, fields);
      expect(res.status, res.text).toBe(200);
      const user = await buildUser(runtime);
      const store = new DeviceCodeStore(runtime.db, runtime.config.deviceCodeTtl);
      expect(await store.decide(normalizeUserCode(res.body.user_code)!, client.id, user.id, 'approved')).toBeDefined();
      return res.body as { device_code: string; user_code: string };
    }

    it('reads scope leniently where RFC 6749 §3.3 allows and refuses what it cannot grant', async () => {
      const tv = await deviceClient();
      const answers: [string, number, string | undefined][] = [
        ['', 200, undefined],
        [' ', 200, undefined],
        ['orders:read  products:read orders:read', 200, undefined],
        ['PRODUCTS:READ', 400, 'invalid_scope'],
        ['products:read\torders:read', 400, 'invalid_scope'],
        ['products:read orders:write', 400, 'invalid_scope'],
        ['openid', 400, 'invalid_scope'],
      ];
      for (const [scope, status, error] of answers) {
        const res = await authorizeDevice(tv, { scope });
        expect(res.status, `${JSON.stringify(scope)}: ${res.text}`).toBe(status);
        if (error) expect(res.body.error).toBe(error);
      }
      const started = await approved(tv, { scope: 'orders:read  products:read orders:read' });
      const tokens = await poll(tv, started.device_code);
      expect(tokens.status, tokens.text).toBe(200);
      expect(tokens.body.scope.split(' ').sort()).toEqual(['orders:read', 'products:read']);
    });

    it('refuses a confidential client that does not authenticate at /device_authorization, and its code to any other client', async () => {
      const { app } = context();
      const confidential = await deviceClient({ isPublic: false, grantTypes: [DEVICE_CODE_GRANT_TYPE] });
      const unauthenticated = await request(app).post('/device_authorization').type('form').send({ client_id: confidential.id });
      expect(unauthenticated.status).toBe(400);
      expect(unauthenticated.body.error).toBe('invalid_client');
      const started = await approved(confidential);
      const thief = await deviceClient({ isPublic: false, grantTypes: [DEVICE_CODE_GRANT_TYPE] });
      expect((await poll(thief, started.device_code)).body.error).toBe('invalid_grant');
      expect((await poll(confidential, started.device_code)).status).toBe(200);
    });

    it('binds a device-flow refresh token to the proof key: no proof or another key is invalid_grant (RFC 9449 §5)', async () => {
      const tv = await deviceClient();
      const key = await dpopKey();
      const started = await approved(tv);
      const noNonce = await poll(tv, started.device_code, await dpopProof(key, { htu: TOKEN_URL }));
      expect(noNonce.body.error).toBe('use_dpop_nonce');
      const tokens = await poll(tv, started.device_code, await dpopProof(key, { htu: TOKEN_URL, nonce: noNonce.headers['dpop-nonce'] }));
      expect(tokens.status, tokens.text).toBe(200);
      expect(tokens.body.token_type).toBe('DPoP');
      const refresh = { grant_type: 'refresh_token', refresh_token: tokens.body.refresh_token as string };
      expect((await post(refresh, tv)).body.error).toBe('invalid_grant');
      expect((await post(refresh, tv, await dpopProof(await dpopKey(), { htu: TOKEN_URL, nonce: nonce() }))).body.error).toBe('invalid_grant');
      expect((await post(refresh, tv, await dpopProof(key, { htu: TOKEN_URL, nonce: nonce() }))).status).toBe(200);
    });
  });

  describe('insufficient_scope for a DPoP-bound token (RFC 9449 §7.1: the challenge uses the scheme of the request)', () => {
    const INSUFFICIENT = (scope: string) =>
      new RegExp(`^DPoP realm="fieldgate", algs="ES256 EdDSA Ed25519 RS256", error="insufficient_scope", error_description="[^"]+", scope="${scope}"$`);

    /** A DPoP-bound token with `scope`, for a new user (or none: a client acting for itself). */
    async function boundToken(scope: string, { forUser = true } = {}) {
      const { runtime } = context();
      const key = await dpopKey();
      const userId = forUser ? await createTestUser(runtime) : null;
      const client = await runtime.clients.create({ name: 'dpop app', redirectUris: ['https://app.example/cb'], isPublic: true, scope: 'openid products:read orders:read orders:write' });
      const grantId = randomUUID();
      await runtime.db.insert(grants).values({ id: grantId, clientId: client.client_id, userId, scope });
      const { token } = await runtime.accessTokens.issue({ userId, clientId: client.client_id, scope, grantId, jkt: key.jkt });
      const proof = (htm: string, path: string) => dpopProof(key, { htm, htu: `${TEST_ISSUER}${path}`, accessToken: token });
      return { token, proof };
    }

    it('answers /userinfo without openid with a DPoP challenge naming the scope', async () => {
      const { token, proof } = await boundToken('products:read');
      const res = await request(context().app).get('/userinfo').set('Authorization', `DPoP ${token}`).set('DPoP', await proof('GET', '/userinfo'));
      expect(res.status).toBe(403);
      expect(res.headers['www-authenticate']).toMatch(INSUFFICIENT('openid'));
    });

    it('answers GraphQL and REST reads of orders without orders:read with a DPoP challenge naming the scope', async () => {
      const { token, proof } = await boundToken('products:read');
      const graphql = await request(context().app)
        .post('/graphql')
        .set('Authorization', `DPoP ${token}`)
        .set('DPoP', await proof('POST', '/graphql'))
        .send({ query: '{ orders { id } }' });
      expect(graphql.status).toBe(403);
      expect(graphql.headers['www-authenticate']).toMatch(INSUFFICIENT('orders:read'));
      const rest = await request(context().app).get('/orders').set('Authorization', `DPoP ${token}`).set('DPoP', await proof('GET', '/orders'));
      expect(rest.status).toBe(403);
      expect(rest.headers['www-authenticate']).toMatch(INSUFFICIENT('orders:read'));
    });

    it('answers a REST PATCH without orders:write with a DPoP challenge naming the scope', async () => {
      const { token, proof } = await boundToken('orders:read');
      const res = await request(context().app)
        .patch('/orders/1?update_mask=memo')
        .set('Authorization', `DPoP ${token}`)
        .set('DPoP', await proof('PATCH', '/orders/1'))
        .send({ memo: 'x' });
      expect(res.status).toBe(403);
      expect(res.headers['www-authenticate']).toMatch(INSUFFICIENT('orders:write'));
    });

    it('answers /userinfo for a DPoP token that speaks for no user with a DPoP challenge too', async () => {
      const { token, proof } = await boundToken('openid', { forUser: false });
      const res = await request(context().app).get('/userinfo').set('Authorization', `DPoP ${token}`).set('DPoP', await proof('GET', '/userinfo'));
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toMatch(DPOP_CHALLENGE);
    });

    it('still answers a Bearer token with a Bearer challenge', async () => {
      const { runtime } = context();
      const userId = await createTestUser(runtime);
      const client = await runtime.clients.create({ name: 'bearer app', redirectUris: ['https://app.example/cb'], isPublic: true, scope: 'products:read' });
      const grantId = randomUUID();
      await runtime.db.insert(grants).values({ id: grantId, clientId: client.client_id, userId, scope: 'products:read' });
      const { token } = await runtime.accessTokens.issue({ userId, clientId: client.client_id, scope: 'products:read', grantId });
      const res = await request(context().app).get('/orders').set('Authorization', `Bearer ${token}`);
      expect(res.status).toBe(403);
      expect(res.headers['www-authenticate']).toMatch(/^Bearer realm="fieldgate", error="insufficient_scope", error_description="[^"]+", scope="orders:read"/);
    });
  });
});
