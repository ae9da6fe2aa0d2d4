/**
 * DPoP (RFC 9449) at the token endpoint and at the resources, over raw HTTP: proofs are built
 * by hand so every refusal the RFC lists can be provoked.
 */
import { describe, expect, it } from 'vitest';
import request from 'supertest';
import { decodeJwt } from 'jose';
import { describeEachDatabase, TEST_ISSUER } from '../support/runtime.js';
import { buildClient, buildUser, issueCode, tokenRequest, basic, type TestClient, type TestUser } from '../support/oauth.js';
import { dpopKey, dpopProof, symmetricProof, unsignedProof, type DpopKey } from '../support/dpop.js';

const TOKEN_URL = `${TEST_ISSUER}/token`;

describeEachDatabase('DPoP (RFC 9449)', (context) => {
  const nonce = () => context().runtime.dpop.currentNonce();

  async function codeGrant(client: TestClient, user: TestUser, overrides: { dpopJkt?: string } = {}) {
    const { code, verifier } = await issueCode(context().runtime, client, user, overrides);
    return { grant_type: 'authorization_code', code, redirect_uri: client.redirectUri, code_verifier: verifier };
  }

  function post(fields: Record<string, string>, client: TestClient, proof?: string | string[]) {
    const req = request(context().app).post('/token').type('form');
    if (client.secret) req.set('Authorization', basic(client.id, client.secret));
    else fields = { ...fields, client_id: client.id };
    if (typeof proof === 'string') req.set('DPoP', proof);
    // Two header lines, which Node joins with ", ".
    if (Array.isArray(proof)) req.set('DPoP', proof as unknown as string);
    return req.send(fields);
  }

  async function dpopTokens(client: TestClient, user: TestUser, key: DpopKey) {
    const res = await post(await codeGrant(client, user), client, await dpopProof(key, { htu: TOKEN_URL, nonce: nonce() }));
    expect(res.status, res.text).toBe(200);
    return res.body as { access_token: string; refresh_token: string; token_type: string };
  }

  describe('token endpoint (§5)', () => {
    it('issues token_type DPoP with cnf.jkt, and a DPoP-Nonce for the next proof', async () => {
      const { app, runtime } = context();
      const [client, user, key] = await Promise.all([buildClient(runtime), buildUser(runtime), dpopKey('ES256')]);
      const res = await post(await codeGrant(client, user), client, await dpopProof(key, { htu: TOKEN_URL, nonce: nonce() }));
      expect(res.status, res.text).toBe(200);
      expect(res.body.token_type).toBe('DPoP');
      expect(decodeJwt(res.body.access_token).cnf).toEqual({ jkt: key.jkt });
      expect(res.headers['dpop-nonce']).toMatch(/^[a-z0-9]+\.[A-Za-z0-9_-]+$/);

      const introspected = await request(app).post('/introspect').type('form').set('Authorization', basic(client.id, client.secret!)).send({ token: res.body.access_token });
      expect(introspected.body).toMatchObject({ active: true, token_type: 'DPoP', cnf: { jkt: key.jkt } });
    });

    for (const alg of ['EdDSA', 'RS256'] as const) {
      it(`accepts a proof signed with ${alg}`, async () => {
        const { runtime } = context();
        const [client, user, key] = await Promise.all([buildClient(runtime), buildUser(runtime), dpopKey(alg)]);
        expect((await dpopTokens(client, user, key)).token_type).toBe('DPoP');
      });
    }

    it('without a proof keeps issuing Bearer tokens', async () => {
      const { app, runtime } = context();
      const [client, user] = await Promise.all([buildClient(runtime), buildUser(runtime)]);
      const res = await tokenRequest(app, await codeGrant(client, user), client);
      expect(res.body.token_type).toBe('Bearer');
      expect(decodeJwt(res.body.access_token).cnf).toBeUndefined();
    });

    it('asks for a nonce with use_dpop_nonce and DPoP-Nonce (§8), leaving the code usable for the retry', async () => {
      const { runtime } = context();
      const [client, user, key] = await Promise.all([buildClient(runtime), buildUser(runtime), dpopKey()]);
      const fields = await codeGrant(client, user);
      const first = await post(fields, client, await dpopProof(key, { htu: TOKEN_URL }));
      expect(first.status).toBe(400);
      expect(first.body.error).toBe('use_dpop_nonce');
      const serverNonce = first.headers['dpop-nonce'];
      expect(serverNonce).toBeTruthy();
      const bogus = await post(fields, client, await dpopProof(key, { htu: TOKEN_URL, nonce: 'x.forged' }));
      expect(bogus.body.error).toBe('use_dpop_nonce');
      const retry = await post(fields, client, await dpopProof(key, { htu: TOKEN_URL, nonce: serverNonce }));
      expect(retry.status, retry.text).toBe(200);
    });

    it('accepts an htu written differently but equal after RFC 3986 §6.2.2 normalisation (case, default port, percent-encoding)', async () => {
      const { runtime } = context();
      const [client, user, key] = await Promise.all([buildClient(runtime), buildUser(runtime), dpopKey()]);
      for (const htu of ['HTTP://LOCALHOST:3000/token', 'http://localhost:3000/%74ok%65n', 'http://localhost:3000/token?x=1#frag']) {
        const res = await post(await codeGrant(client, user), client, await dpopProof(key, { htu, nonce: nonce() }));
        expect(res.status, `${htu}: ${res.text}`).toBe(200);
      }
      // The path itself is case-sensitive.
      const upper = await post(await codeGrant(client, user), client, await dpopProof(key, { htu: 'http://localhost:3000/TOKEN', nonce: nonce() }));
      expect(upper.body.error).toBe('invalid_dpop_proof');
    });

    const refusals: [string, (key: DpopKey) => Promise<string | string[]>, RegExp][] = [
      ['a proof for another URL (htu)', (key) => dpopProof(key, { htu: `${TEST_ISSUER}/revoke`, nonce: nonce() }), /htu/],
      ['a proof for another method (htm)', (key) => dpopProof(key, { htm: 'GET', htu: TOKEN_URL, nonce: nonce() }), /htm/],
      ['a proof signed with HS256', () => symmetricProof(TOKEN_URL), /ES256, EdDSA, Ed25519, RS256/],
      ['an unsigned (alg none) proof', async (key) => unsignedProof(key, TOKEN_URL), /ES256, EdDSA, Ed25519, RS256|not a valid/],
      ['a private key in jwk', (key) => dpopProof(key, { htu: TOKEN_URL, nonce: nonce(), jwk: key.privateJwk }), /public key/],
      ['a jwk other than the signing key', async (key) => dpopProof(key, { htu: TOKEN_URL, nonce: nonce(), jwk: (await dpopKey()).publicJwk }), /signature/],
      ['a wrong typ', (key) => dpopProof(key, { htu: TOKEN_URL, nonce: nonce(), typ: 'JWT' }), /typ/],
      ['two DPoP headers', async (key) => [await dpopProof(key, { htu: TOKEN_URL, nonce: nonce() }), await dpopProof(key, { htu: TOKEN_URL, nonce: nonce() })], /exactly one/],
      ['a header that is not a JWT', async () => 'not-a-jwt', /not a JWT/],
    ];
    for (const [title, build, message] of refusals) {
      it(`refuses ${title} with invalid_dpop_proof (§4.3)`, async () => {
        const { runtime } = context();
        const [client, user, key] = await Promise.all([buildClient(runtime), buildUser(runtime), dpopKey()]);
        const res = await post(await codeGrant(client, user), client, await build(key));
        expect(res.status).toBe(400);
        expect(res.body.error).toBe('invalid_dpop_proof');
        expect(res.body.error_description).toMatch(message);
      });
    }

    it('dates a proof carrying the server nonce by that nonce (§4.3): a client whose clock is off still gets tokens, once per proof', async () => {
      const { runtime } = context();
      const [client, user, key] = await Promise.all([buildClient(runtime), buildUser(runtime), dpopKey()]);
      const now = Math.floor(Date.now() / 1000);
      for (const iat of [now - 600, now + 600]) {
        const unnoncedFields = await codeGrant(client, user);
        // Without the nonce the answer names the cure (use_dpop_nonce), not the clock the client cannot fix.
        const first = await post(unnoncedFields, client, await dpopProof(key, { htu: TOKEN_URL, iat }));
        expect(first.body.error).toBe('use_dpop_nonce');
        const proof = await dpopProof(key, { htu: TOKEN_URL, iat, nonce: first.headers['dpop-nonce'] });
        const res = await post(unnoncedFields, client, proof);
        expect(res.status, res.text).toBe(200);
        expect(res.body.token_type).toBe('DPoP');
        const replay = await post(await codeGrant(client, user), client, proof);
        expect(replay.body).toMatchObject({ error: 'invalid_dpop_proof', error_description: 'this DPoP proof has already been used' });
      }
    });

    it('refuses a replayed proof (§11.1), even by 20 concurrent requests: exactly one is accepted', async () => {
      const { runtime } = context();
      const [client, user, key] = await Promise.all([buildClient(runtime), buildUser(runtime), dpopKey()]);
      const proof = await dpopProof(key, { htu: TOKEN_URL, nonce: nonce() });
      const grants = await Promise.all(Array.from({ length: 20 }, () => codeGrant(client, user)));
      const results = await Promise.all(grants.map((fields) => post(fields, client, proof)));
      expect(results.filter((res) => res.status === 200)).toHaveLength(1);
      for (const res of results.filter((r) => r.status !== 200)) {
        expect(res.body).toMatchObject({ error: 'invalid_dpop_proof', error_description: 'this DPoP proof has already been used' });
      }
    });

    it('binds a code to dpop_jkt (§10): another key or no proof gets invalid_grant', async () => {
      const { app, runtime } = context();
      const [client, user, key, other] = await Promise.all([buildClient(runtime), buildUser(runtime), dpopKey(), dpopKey()]);
      const wrongKey = await post(await codeGrant(client, user, { dpopJkt: key.jkt }), client, await dpopProof(other, { htu: TOKEN_URL, nonce: nonce() }));
      expect(wrongKey.body).toMatchObject({ error: 'invalid_grant' });
      const noProof = await tokenRequest(app, await codeGrant(client, user, { dpopJkt: key.jkt }), client);
      expect(noProof.body).toMatchObject({ error: 'invalid_grant' });
      const right = await post(await codeGrant(client, user, { dpopJkt: key.jkt }), client, await dpopProof(key, { htu: TOKEN_URL, nonce: nonce() }));
      expect(right.status, right.text).toBe(200);
    });

    it('refuses a malformed dpop_jkt at /authorize', async () => {
      const { app, runtime } = context();
      const client = await buildClient(runtime);
      const res = await request(app)
        .get('/authorize')
        .query({ response_type: 'code', client_id: client.id, redirect_uri: client.redirectUri, dpop_jkt: 'short', code_challenge: 'a'.repeat(43), code_challenge_method: 'S256' })
        .redirects(0);
      expect(res.status).toBe(302);
      const location = new URL(res.headers.location!);
      expect(location.searchParams.get('error')).toBe('invalid_request');
      expect(location.searchParams.get('error_description')).toMatch(/dpop_jkt/);
    });

    it('binds a public client’s refresh tokens to the key (§5): another key or none is invalid_grant and revokes nothing', async () => {
      const { runtime } = context();
      const [client, user, key, other] = await Promise.all([buildClient(runtime, { isPublic: true }), buildUser(runtime), dpopKey(), dpopKey()]);
      const tokens = await dpopTokens(client, user, key);
      const refresh = { grant_type: 'refresh_token', refresh_token: tokens.refresh_token };

      const stolen = await post(refresh, client, await dpopProof(other, { htu: TOKEN_URL, nonce: nonce() }));
      expect(stolen.body).toMatchObject({ error: 'invalid_grant', error_description: 'the refresh token is bound to another DPoP key' });
      const bare = await post(refresh, client);
      expect(bare.body).toMatchObject({ error: 'invalid_grant' });

      const rightful = await post(refresh, client, await dpopProof(key, { htu: TOKEN_URL, nonce: nonce() }));
      expect(rightful.status, rightful.text).toBe(200);
      expect(decodeJwt(rightful.body.access_token).cnf).toEqual({ jkt: key.jkt });
      // The successor stays bound.
      const next = await post({ grant_type: 'refresh_token', refresh_token: rightful.body.refresh_token }, client, await dpopProof(other, { htu: TOKEN_URL, nonce: nonce() }));
      expect(next.body.error).toBe('invalid_grant');
    });

    it('binds a public client’s refresh token obtained without a proof once it refreshes with one (§5)', async () => {
      const { app, runtime } = context();
      const [client, user, key, other] = await Promise.all([buildClient(runtime, { isPublic: true }), buildUser(runtime), dpopKey(), dpopKey()]);
      const unbound = await tokenRequest(app, await codeGrant(client, user), client);
      expect(unbound.body.token_type).toBe('Bearer');
      const refreshed = await post({ grant_type: 'refresh_token', refresh_token: unbound.body.refresh_token }, client, await dpopProof(key, { htu: TOKEN_URL, nonce: nonce() }));
      expect(refreshed.status, refreshed.text).toBe(200);
      expect(decodeJwt(refreshed.body.access_token).cnf).toEqual({ jkt: key.jkt });
      const next = { grant_type: 'refresh_token', refresh_token: refreshed.body.refresh_token };
      expect((await post(next, client)).body).toMatchObject({ error: 'invalid_grant', error_description: 'the refresh token is DPoP-bound: send a DPoP proof of its key' });
      expect((await post(next, client, await dpopProof(other, { htu: TOKEN_URL, nonce: nonce() }))).body.error).toBe('invalid_grant');
      const rightful = await post(next, client, await dpopProof(key, { htu: TOKEN_URL, nonce: nonce() }));
      expect(rightful.status, rightful.text).toBe(200);
    });

    it('leaves a confidential client’s refresh token unbound: a refresh may use a new key', async () => {
      const { runtime } = context();
      const [client, user, key, other] = await Promise.all([buildClient(runtime), buildUser(runtime), dpopKey(), dpopKey()]);
      const tokens = await dpopTokens(client, user, key);
      const res = await post({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, client, await dpopProof(other, { htu: TOKEN_URL, nonce: nonce() }));
      expect(res.status, res.text).toBe(200);
      expect(decodeJwt(res.body.access_token).cnf).toEqual({ jkt: other.jkt });
    });

    it('requires a proof from a client registered with dpop_bound_access_tokens (§5.2)', async () => {
      const { app, runtime } = context();
      const [client, user, key] = await Promise.all([buildClient(runtime, { dpopBoundAccessTokens: true }), buildUser(runtime), dpopKey()]);
      const bare = await tokenRequest(app, await codeGrant(client, user), client);
      expect(bare.status).toBe(400);
      expect(bare.body.error).toBe('invalid_dpop_proof');
      expect((await dpopTokens(client, user, key)).token_type).toBe('DPoP');
    });
  });

  describe('resources (§7)', () => {
    async function boundToken(key: DpopKey) {
      const { runtime } = context();
      const [client, user] = await Promise.all([buildClient(runtime), buildUser(runtime)]);
      return (await dpopTokens(client, user, key)).access_token;
    }
    const PRODUCTS = `${TEST_ISSUER}/products`;
    const GRAPHQL = `${TEST_ISSUER}/graphql`;

    it('REST and GraphQL accept Authorization: DPoP with a proof carrying ath, htm and htu', async () => {
      const { app } = context();
      const key = await dpopKey();
      const token = await boundToken(key);
      const rest = await request(app)
        .get('/products?limit=1')
        .set('Authorization', `DPoP ${token}`)
        .set('DPoP', await dpopProof(key, { htm: 'GET', htu: `${PRODUCTS}?ignored=query`, accessToken: token }));
      expect(rest.status, rest.text).toBe(200);
      const graphql = await request(app)
        .post('/graphql')
        .set('Authorization', `DPoP ${token}`)
        .set('DPoP', await dpopProof(key, { htm: 'POST', htu: GRAPHQL, accessToken: token }))
        .send({ query: '{ __typename }' });
      expect(graphql.status, graphql.text).toBe(200);
      expect(graphql.body.data).toEqual({ __typename: 'Query' });
    });

    it('refuses a DPoP-bound token presented as Bearer', async () => {
      const { app } = context();
      const token = await boundToken(await dpopKey());
      const res = await request(app).get('/products').set('Authorization', `Bearer ${token}`);
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toMatch(/^DPoP realm="fieldgate", algs="ES256 EdDSA Ed25519 RS256", error="invalid_token"/);
      expect(res.body.error.status).toBe('UNAUTHENTICATED');
    });

    it('refuses a Bearer token presented as DPoP', async () => {
      const { app, runtime } = context();
      const [client, user, key] = await Promise.all([buildClient(runtime), buildUser(runtime), dpopKey()]);
      const bearer = (await tokenRequest(app, await codeGrant(client, user), client)).body.access_token as string;
      const res = await request(app)
        .get('/products')
        .set('Authorization', `DPoP ${bearer}`)
        .set('DPoP', await dpopProof(key, { htm: 'GET', htu: PRODUCTS, accessToken: bearer }));
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toMatch(/error="invalid_token"/);
    });

    const resourceRefusals: [string, (key: DpopKey, token: string) => Promise<string | undefined>][] = [
      ['no proof', async () => undefined],
      ['a proof signed by another key', async (_key, token) => dpopProof(await dpopKey(), { htm: 'GET', htu: PRODUCTS, accessToken: token })],
      ['a wrong ath', (key) => dpopProof(key, { htm: 'GET', htu: PRODUCTS, ath: 'A'.repeat(43) })],
      ['no ath', (key) => dpopProof(key, { htm: 'GET', htu: PRODUCTS })],
      ['a wrong htm', (key, token) => dpopProof(key, { htm: 'POST', htu: PRODUCTS, accessToken: token })],
      ['a wrong htu', (key, token) => dpopProof(key, { htm: 'GET', htu: `${TEST_ISSUER}/orders`, accessToken: token })],
      ['a stale iat', (key, token) => dpopProof(key, { htm: 'GET', htu: PRODUCTS, accessToken: token, iat: Math.floor(Date.now() / 1000) - 3600 })],
    ];
    for (const [title, build] of resourceRefusals) {
      it(`answers ${title} with 401 and WWW-Authenticate: DPoP error="invalid_dpop_proof"`, async () => {
        const { app } = context();
        const key = await dpopKey();
        const token = await boundToken(key);
        const req = request(app).get('/products').set('Authorization', `DPoP ${token}`);
        const proof = await build(key, token);
        if (proof !== undefined) req.set('DPoP', proof);
        const res = await req;
        expect(res.status).toBe(401);
        expect(res.headers['www-authenticate']).toMatch(/^DPoP realm="fieldgate", algs="ES256 EdDSA Ed25519 RS256", error="invalid_dpop_proof", error_description="[^"]+"$/);
      });
    }

    it('refuses a proof replayed at a resource', async () => {
      const { app } = context();
      const key = await dpopKey();
      const token = await boundToken(key);
      const proof = await dpopProof(key, { htm: 'GET', htu: PRODUCTS, accessToken: token });
      const first = await request(app).get('/products').set('Authorization', `DPoP ${token}`).set('DPoP', proof);
      expect(first.status).toBe(200);
      const replay = await request(app).get('/products').set('Authorization', `DPoP ${token}`).set('DPoP', proof);
      expect(replay.status).toBe(401);
      expect(replay.headers['www-authenticate']).toContain('error_description="this DPoP proof has already been used"');
    });

    it('GraphQL answers a bad proof with UNAUTHENTICATED and the DPoP challenge', async () => {
      const { app } = context();
      const key = await dpopKey();
      const token = await boundToken(key);
      const res = await request(app)
        .post('/graphql')
        .set('Authorization', `DPoP ${token}`)
        .set('DPoP', await dpopProof(key, { htm: 'POST', htu: GRAPHQL, ath: 'A'.repeat(43) }))
        .send({ query: '{ __typename }' });
      expect(res.status).toBe(401);
      expect(res.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
      expect(res.headers['www-authenticate']).toMatch(/^DPoP .*error="invalid_dpop_proof"/);
    });
  });
});

describeEachDatabase(
  'DPoP nonces at resources (DPOP_NONCE=all)',
  (context) => {
    it('asks for a nonce with use_dpop_nonce and DPoP-Nonce, then accepts it', async () => {
      const { app, runtime } = context();
      const [client, user, key] = await Promise.all([buildClient(runtime), buildUser(runtime), dpopKey()]);
      const { code, verifier } = await issueCode(runtime, client, user);
      const tokens = await request(app)
        .post('/token')
        .type('form')
        .set('Authorization', basic(client.id, client.secret!))
        .set('DPoP', await dpopProof(key, { htu: TOKEN_URL, nonce: runtime.dpop.currentNonce() }))
        .send({ grant_type: 'authorization_code', code, redirect_uri: client.redirectUri, code_verifier: verifier });
      const token = tokens.body.access_token as string;
      const htu = `${TEST_ISSUER}/products`;
      const first = await request(app).get('/products').set('Authorization', `DPoP ${token}`).set('DPoP', await dpopProof(key, { htm: 'GET', htu, accessToken: token }));
      expect(first.status).toBe(401);
      expect(first.headers['www-authenticate']).toMatch(/error="use_dpop_nonce"/);
      const serverNonce = first.headers['dpop-nonce'];
      expect(serverNonce).toBeTruthy();
      const retry = await request(app)
        .get('/products')
        .set('Authorization', `DPoP ${token}`)
        .set('DPoP', await dpopProof(key, { htm: 'GET', htu, accessToken: token, nonce: serverNonce }));
      expect(retry.status, retry.text).toBe(200);
    });
  },
  { DPOP_NONCE: 'all' },
);
