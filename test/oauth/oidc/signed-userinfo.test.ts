/**
 * Signed UserInfo (OIDC Core §5.3.2, Registration §2): `userinfo_signed_response_alg` is ES256 or RS256 or refused with
 * invalid_client_metadata, and such a client's /userinfo answer is an `application/jwt` signed with the published key
 * of that algorithm, with `iss` and `aud`; every other client keeps plain JSON.
 */
import { beforeAll, expect, it } from 'vitest';
import request from 'supertest';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { describeEachDatabase } from '../../support/runtime.js';
import { buildClient, buildUser, obtainTokens, type TestClient, type TestUser } from '../../support/oauth.js';

describeEachDatabase(
  'signed UserInfo',
  (context) => {
    let user: TestUser;

    beforeAll(async () => {
      user = await buildUser(context().runtime);
      await context().runtime.users.updateProfile(user.username, { displayName: 'Grace Hopper', email: 'grace@example.com', emailVerified: true });
    });

    const register = (body: unknown) => request(context().app).post('/register').set('Content-Type', 'application/json').send(JSON.stringify(body));

    async function verifyUserinfo(jwt: string, audience: string, alg = 'ES256') {
      const jwks = (await request(context().app).get('/.well-known/jwks.json')).body;
      return jwtVerify(jwt, createLocalJWKSet(jwks), { issuer: context().config.issuer, audience, algorithms: [alg] });
    }

    const userinfo = (token: string) => request(context().app).get('/userinfo').set('Authorization', `Bearer ${token}`).buffer(true).parse((res, done) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      res.on('end', () => done(null, text));
    });

    it('registers ES256 through /register, echoes it, and answers /userinfo with a signed JWT carrying iss and aud', async () => {
      const res = await register({ redirect_uris: ['https://signed.example/cb'], token_endpoint_auth_method: 'client_secret_basic', userinfo_signed_response_alg: 'ES256' });
      expect(res.status).toBe(201);
      expect(res.body.userinfo_signed_response_alg).toBe('ES256');
      const client: TestClient = { id: res.body.client_id, secret: res.body.client_secret, redirectUri: 'https://signed.example/cb', redirectUris: ['https://signed.example/cb'], name: 'x', isPublic: false };
      const tokens = await obtainTokens(context().app, context().runtime, client, user, { scope: 'openid profile email' });
      const answer = await userinfo(tokens.access_token);
      expect(answer.status).toBe(200);
      expect(answer.headers['content-type']).toBe('application/jwt');
      expect(answer.headers['cache-control']).toBe('no-store');
      expect(decodeProtectedHeader(answer.body as string).alg).toBe('ES256');
      const { payload } = await verifyUserinfo(answer.body as string, client.id);
      expect(payload).toMatchObject({ iss: context().config.issuer, aud: client.id, sub: String(user.id), name: 'Grace Hopper', email: 'grace@example.com', email_verified: true });
      // The registration read-back (RFC 7592) shows it too.
      const read = await request(context().app).get(`/register/${client.id}`).set('Authorization', `Bearer ${res.body.registration_access_token}`);
      expect(read.body.userinfo_signed_response_alg).toBe('ES256');
    });

    it('signs with the RS256 key for a client that registered RS256, at /register or in the store', async () => {
      const { runtime, app } = context();
      const res = await register({ redirect_uris: ['https://signed-rs.example/cb'], token_endpoint_auth_method: 'client_secret_basic', userinfo_signed_response_alg: 'RS256' });
      expect(res.status, res.text).toBe(201);
      expect(res.body.userinfo_signed_response_alg).toBe('RS256');
      const registered: TestClient = { id: res.body.client_id, secret: res.body.client_secret, redirectUri: 'https://signed-rs.example/cb', redirectUris: ['https://signed-rs.example/cb'], name: 'x', isPublic: false };
      const stored = await buildClient(runtime, { oidc: { userinfoSignedResponseAlg: 'RS256' } });
      const rsaKid = (await runtime.keys.signingKey('RS256')).kid;
      for (const client of [registered, stored]) {
        const tokens = await obtainTokens(app, runtime, client, user, { scope: 'openid email' });
        const answer = await userinfo(tokens.access_token);
        expect(answer.status).toBe(200);
        expect(answer.headers['content-type']).toBe('application/jwt');
        expect(decodeProtectedHeader(answer.body as string)).toMatchObject({ alg: 'RS256', kid: rsaKid });
        const { payload } = await verifyUserinfo(answer.body as string, client.id, 'RS256');
        expect(payload).toMatchObject({ iss: context().config.issuer, aud: client.id, sub: String(user.id), email: 'grace@example.com' });
        // Not the ES256 key: a client pinned to RS256 never gets anything else.
        await expect(verifyUserinfo(answer.body as string, client.id, 'ES256')).rejects.toThrow();
      }
    });

    it.each([['PS256'], ['none'], ['HS256'], ['es256'], [256], [['ES256']], [{ alg: 'ES256' }], ['']])(
      'refuses userinfo_signed_response_alg %j with invalid_client_metadata and stores nothing',
      async (alg) => {
        const res = await register({ redirect_uris: ['https://refused.example/cb'], client_name: `refused ${JSON.stringify(alg)}`, userinfo_signed_response_alg: alg });
        expect(res.status).toBe(400);
        expect(res.body.error).toBe('invalid_client_metadata');
        expect(res.body.error_description).toContain('userinfo_signed_response_alg');
        const list = await context().runtime.clients.list();
        expect(list.some((c) => c.client_name === `refused ${JSON.stringify(alg)}`)).toBe(false);
      },
    );

    it('signs the pairwise sub for a pairwise client, and keeps JSON for a client that did not ask', async () => {
      const { runtime, app } = context();
      const pairwise = await buildClient(runtime, { redirectUris: ['https://pairwise-signed.example/cb'], oidc: { subjectType: 'pairwise', userinfoSignedResponseAlg: 'ES256' } });
      const tokens = await obtainTokens(app, runtime, pairwise, user, { scope: 'openid' });
      const { payload } = await verifyUserinfo((await userinfo(tokens.access_token)).body as string, pairwise.id);
      expect(payload.sub).not.toBe(String(user.id));
      expect(payload.sub).toMatch(/^[A-Za-z0-9_-]{43}$/);

      const plain = await buildClient(runtime);
      const plainTokens = await obtainTokens(app, runtime, plain, user, { scope: 'openid' });
      const json = await request(app).get('/userinfo').set('Authorization', `Bearer ${plainTokens.access_token}`);
      expect(json.headers['content-type']).toBe('application/json;charset=UTF-8');
      expect(json.body).toEqual({ sub: String(user.id) });
    });

    it('keeps errors as RFC 6750 JSON challenges for a signing client', async () => {
      const { runtime, app } = context();
      const client = await buildClient(runtime, { oidc: { userinfoSignedResponseAlg: 'ES256' } });
      const tokens = await obtainTokens(app, runtime, client, user, { scope: 'products:read' });
      const res = await request(app).get('/userinfo').set('Authorization', `Bearer ${tokens.access_token}`);
      expect(res.status).toBe(403);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.headers['www-authenticate']).toContain('insufficient_scope');
    });

    it('lets the store refuse any other algorithm and turn signing off again', async () => {
      const { runtime } = context();
      await expect(buildClient(runtime, { oidc: { userinfoSignedResponseAlg: 'PS256' } })).rejects.toThrow(/ES256 or RS256/);
      const client = await buildClient(runtime, { oidc: { userinfoSignedResponseAlg: 'ES256' } });
      expect((await runtime.clients.update(client.id, { oidc: { userinfoSignedResponseAlg: '' } }))?.userinfo_signed_response_alg).toBeUndefined();
    });

    it('advertises ES256 and RS256 as userinfo_signing_alg_values_supported and id_token_signing_alg_values_supported', async () => {
      const res = await request(context().app).get('/.well-known/openid-configuration');
      expect(res.body.userinfo_signing_alg_values_supported).toEqual(['ES256', 'RS256']);
      // Discovery §3: RS256 MUST be among the ID Token algorithms.
      expect(res.body.id_token_signing_alg_values_supported).toEqual(['ES256', 'RS256']);
    });
  },
  { REGISTRATION: 'open', REGISTRATION_RATE_LIMIT: '10000' },
);
