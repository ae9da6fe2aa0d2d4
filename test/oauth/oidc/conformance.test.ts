/**
 * The OpenID Provider as a relying party, a conformance suite (the OpenID Foundation's basic OP plan) or an attacker
 * meets it: ID Token validation (OIDC Core §3.1.3.7), `nonce` of odd sizes and characters, a code or a refresh token
 * used many times at once, re-authentication for `max_age` (§3.1.2.1), `redirect_uri` required of an OpenID request,
 * the refreshed ID Token (§12.2), UserInfo with the token in the header or a form body (RFC 6750 §2.1, §2.2) and the
 * tokens it must refuse (§5.3), and a discovery document (OIDC Discovery §3) that names every claim the tokens carry.
 */
import { beforeAll, describe, expect, it, vi, afterEach } from 'vitest';
import request from 'supertest';
import { createHash } from 'node:crypto';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify, type JWTPayload } from 'jose';
import { describeEachDatabase, TEST_ISSUER } from '../../support/runtime.js';
import {
  authorizeParams,
  authorizePath,
  basic,
  Browser,
  buildClient,
  buildUser,
  codeFlowTokens,
  issueCode,
  obtainTokens,
  pathOf,
  redirectParams,
  tokenRequest,
  type TestClient,
  type TestUser,
} from '../../support/oauth.js';
import { dpopKey, dpopProof } from '../../support/dpop.js';

describeEachDatabase('OpenID Provider conformance', (context) => {
  let client: TestClient;
  let user: TestUser;

  beforeAll(async () => {
    [client, user] = await Promise.all([buildClient(context().runtime), buildUser(context().runtime)]);
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  /** §3.1.3.7 as a strict RP runs it: signature by a published key, iss, aud, exp, iat. */
  async function verifyIdToken(idToken: string, audience = client.id): Promise<JWTPayload> {
    const jwks = createLocalJWKSet((await request(context().app).get('/.well-known/jwks.json')).body);
    const { payload } = await jwtVerify(idToken, jwks, { issuer: context().config.issuer, audience, algorithms: ['ES256'] });
    return payload;
  }

  const atHash = (accessToken: string) => createHash('sha256').update(accessToken, 'ascii').digest().subarray(0, 16).toString('base64url');

  describe('the ID Token (§2, §3.1.3.7)', () => {
    it('carries kid, iss, aud, sub, exp, iat, auth_time, at_hash and the nonce exactly as sent, whatever its characters', async () => {
      const nonce = `é "quoted" <tag> & + = / % \\ 😀 ${'n'.repeat(480)}`.slice(0, 512);
      const res = await codeFlowTokens(context().app, new Browser(context().app), client, user, { scope: 'openid', nonce });
      expect(res.status, res.text).toBe(200);
      expect(decodeProtectedHeader(res.body.id_token).kid).toBeTypeOf('string');
      const claims = await verifyIdToken(res.body.id_token);
      expect(claims.sub).toBe(String(user.id));
      expect(claims.nonce).toBe(nonce);
      expect(claims.at_hash).toBe(atHash(res.body.access_token));
      expect(claims.auth_time).toBeTypeOf('number');
      expect(claims.auth_time).toBeLessThanOrEqual(claims.iat!);
      expect(claims.exp).toBeGreaterThan(claims.iat!);
    });

    it('refuses a nonce longer than 512 characters with invalid_request at the redirect URI, with state', async () => {
      const params = authorizeParams(client, { scope: 'openid', nonce: 'n'.repeat(513) });
      const res = await new Browser(context().app).open(authorizePath(params));
      expect(res.status).toBe(302);
      expect(redirectParams(res).get('error')).toBe('invalid_request');
      expect(redirectParams(res).get('state')).toBe(params.state);
    });

    it('gives one ID Token for a code redeemed 10 times at once', async () => {
      const params = authorizeParams(client, { scope: 'openid', nonce: 'once' });
      const code = redirectParams(await new Browser(context().app).authorize(params, user)).get('code')!;
      const fields = { grant_type: 'authorization_code', code, redirect_uri: client.redirectUri, code_verifier: params.verifier };
      const answers = await Promise.all(Array.from({ length: 10 }, () => tokenRequest(context().app, fields, client)));
      const issued = answers.filter((res) => res.status === 200);
      expect(issued).toHaveLength(1);
      expect(issued[0]!.body.id_token).toBeTypeOf('string');
      for (const res of answers.filter((r) => r.status !== 200)) {
        expect(res.status).toBe(400);
        expect(res.body.error).toBe('invalid_grant');
      }
    });

    it('gives a later auth_time after max_age forces a new sign-in (oidcc-max-age-1)', async () => {
      vi.useFakeTimers({ toFake: ['Date'] });
      const browser = new Browser(context().app);
      const first = await verifyIdToken((await codeFlowTokens(context().app, browser, client, user, { scope: 'openid' })).body.id_token);
      vi.setSystemTime(Date.now() + 2_000);
      const params = authorizeParams(client, { scope: 'openid', max_age: '1' });
      const page = await browser.open(authorizePath(params));
      expect(page.text).toContain('name="password"');
      const landing = await browser.authorize(params, user);
      const code = redirectParams(landing).get('code')!;
      const res = await tokenRequest(context().app, { grant_type: 'authorization_code', code, redirect_uri: client.redirectUri, code_verifier: params.verifier }, client);
      const second = decodeJwt(res.body.id_token);
      expect(second.auth_time).toBeGreaterThan(first.auth_time as number);
    });
  });

  describe('the refreshed ID Token (§12.2)', () => {
    it('keeps iss, sub, aud, auth_time and sid, takes a new iat and carries no nonce, also for refreshes racing each other', async () => {
      vi.useFakeTimers({ toFake: ['Date'] });
      const first = await codeFlowTokens(context().app, new Browser(context().app), client, user, { scope: 'openid offline_access', nonce: 'n-0' });
      const original = await verifyIdToken(first.body.id_token);
      vi.setSystemTime(Date.now() + 5_000);
      const answers = await Promise.all(
        Array.from({ length: 5 }, () => tokenRequest(context().app, { grant_type: 'refresh_token', refresh_token: first.body.refresh_token }, client)),
      );
      const refreshed = answers.filter((res) => res.status === 200);
      expect(refreshed.length).toBeGreaterThanOrEqual(1);
      for (const res of answers.filter((r) => r.status !== 200)) expect(res.body.error).toBe('invalid_grant');
      for (const res of refreshed) {
        const claims = await verifyIdToken(res.body.id_token);
        expect(claims).toMatchObject({ iss: original.iss, sub: original.sub, aud: original.aud, auth_time: original.auth_time, sid: original.sid });
        expect(claims.iat).toBeGreaterThan(original.iat!);
        expect(claims.nonce).toBeUndefined();
        expect(claims.at_hash).toBe(atHash(res.body.access_token));
      }
    });
  });

  describe('a grant made before auth_time was stored', () => {
    it('never puts the time of the token request in auth_time, so refreshing does not change it (§12.2)', async () => {
      vi.useFakeTimers({ toFake: ['Date'] });
      const { code, verifier } = await issueCode(context().runtime, client, user, { scope: 'openid offline_access' });
      const first = await tokenRequest(context().app, { grant_type: 'authorization_code', code, redirect_uri: client.redirectUri, code_verifier: verifier }, client);
      expect(first.status, first.text).toBe(200);
      const original = await verifyIdToken(first.body.id_token);
      vi.setSystemTime(Date.now() + 5_000);
      const refreshed = await tokenRequest(context().app, { grant_type: 'refresh_token', refresh_token: first.body.refresh_token }, client);
      const claims = await verifyIdToken(refreshed.body.id_token);
      expect(claims.auth_time).toBe(original.auth_time);
      // Unknown, so left out rather than claimed as now: an RP checking its own max_age must not take it for a sign-in.
      expect(original.auth_time).toBeUndefined();
    });
  });

  describe('/authorize parameters a conformance suite sends', () => {
    it('refuses an OpenID request without redirect_uri with invalid_request, though only one is registered (§3.1.2.1)', async () => {
      const params = authorizeParams(client, { scope: 'openid', redirect_uri: undefined });
      const res = await new Browser(context().app).open(authorizePath(params));
      expect(res.status).toBe(302);
      expect(res.headers.location!.startsWith(`${client.redirectUri}?`)).toBe(true);
      expect(redirectParams(res).get('error')).toBe('invalid_request');
      expect(redirectParams(res).get('state')).toBe(params.state);
      // A plain OAuth request may still leave it out (RFC 6749 §3.1.2.3).
      const plain = await new Browser(context().app).authorize(authorizeParams(client, { scope: 'products:read', redirect_uri: undefined }), user);
      expect(redirectParams(plain).get('code')).toBeTruthy();
    });

    // §3.1.2.1: scope values not understood SHOULD be ignored; RPs asking for every §5.4 scope by default still sign in.
    it('drops the standard address and phone scopes from an OpenID request, and grants the rest', async () => {
      const res = await codeFlowTokens(context().app, new Browser(context().app), client, user, { scope: 'openid address products:read phone' });
      expect(res.status, res.text).toBe(200);
      expect(res.body.scope).toBe('openid products:read');
      // Outside an OpenID request, and for any other unknown scope, the request is still refused.
      for (const scope of ['address products:read', 'openid products:read admin']) {
        const refused = await new Browser(context().app).authorize(authorizeParams(client, { scope }), user);
        expect(redirectParams(refused).get('error'), scope).toBe('invalid_scope');
      }
    });

    it('ignores a claims parameter that is not JSON (claims_parameter_supported is false)', async () => {
      const res = await new Browser(context().app).authorize(authorizeParams(client, { scope: 'openid', claims: '{"userinfo":' }), user);
      expect(redirectParams(res).get('code')).toBeTruthy();
    });

    it('ignores acr_values, ui_locales and display, and keeps prompt=none silent with an id_token_hint naming the user', async () => {
      const browser = new Browser(context().app);
      const first = await codeFlowTokens(context().app, browser, client, user, { scope: 'openid' });
      const params = authorizeParams(client, { scope: 'openid', prompt: 'none', acr_values: '1 2', ui_locales: 'fr-CA en', display: 'page', id_token_hint: first.body.id_token });
      const res = await browser.open(authorizePath(params));
      expect(res.status).toBe(302);
      expect(redirectParams(res).get('code')).toBeTruthy();
    });
  });

  describe('id_token_hint with prompt=none (§3.1.2.1)', () => {
    /** A browser signed in as `who` (consent given), and an ID Token of `who` for `to`. */
    async function signedInWithIdToken(who: TestUser, to: TestClient = client) {
      const browser = new Browser(context().app);
      const tokens = await codeFlowTokens(context().app, browser, to, who, { scope: 'openid' });
      expect(tokens.status).toBe(200);
      return { browser, idToken: tokens.body.id_token as string };
    }
    const silently = (browser: Browser, overrides: Record<string, string>) =>
      browser.open(authorizePath(authorizeParams(client, { scope: 'openid', prompt: 'none', state: 'st-1', ...overrides })));

    it('is login_required, with no code, when the hint names another user than the one signed in', async () => {
      const other = await buildUser(context().runtime);
      const { idToken: othersToken } = await signedInWithIdToken(other);
      const { browser } = await signedInWithIdToken(user);
      const res = await silently(browser, { id_token_hint: othersToken });
      expect(res.status).toBe(302);
      const answer = redirectParams(res);
      expect(answer.get('error')).toBe('login_required');
      expect(answer.get('state')).toBe('st-1');
      expect(answer.get('code')).toBeNull();
    });

    it('is invalid_request for a hint issued to another client, forged, or not a JWT at all', async () => {
      const otherClient = await buildClient(context().runtime);
      const { idToken: foreign } = await signedInWithIdToken(user, otherClient);
      const { browser, idToken } = await signedInWithIdToken(user);
      const [header, payload] = idToken.split('.');
      const forged = `${header}.${Buffer.from(JSON.stringify({ ...decodeJwt(idToken), sub: 'someone-else' })).toString('base64url')}.${idToken.split('.')[2]}`;
      for (const hint of [foreign, forged, `${header}.${payload}.`, 'not-a-jwt', 'x'.repeat(8_193)]) {
        const res = await silently(browser, { id_token_hint: hint });
        expect(res.status).toBe(302);
        expect(redirectParams(res).get('error'), hint.slice(0, 40)).toBe('invalid_request');
        expect(redirectParams(res).get('code')).toBeNull();
      }
    });

    it('matches a pairwise client by its pairwise sub', async () => {
      const pairwise = await buildClient(context().runtime, { redirectUris: ['https://pairwise.example/cb'], oidc: { subjectType: 'pairwise' } });
      const { browser, idToken } = await signedInWithIdToken(user, pairwise);
      expect(decodeJwt(idToken).sub).not.toBe(String(user.id));
      const res = await browser.open(authorizePath(authorizeParams(pairwise, { scope: 'openid', prompt: 'none', id_token_hint: idToken })));
      expect(redirectParams(res).get('code')).toBeTruthy();
    });

    it('is ignored by an interactive request: the signed-in user gets a code whoever the hint names', async () => {
      const other = await buildUser(context().runtime);
      const { idToken: othersToken } = await signedInWithIdToken(other);
      const { browser } = await signedInWithIdToken(user);
      const res = await browser.open(authorizePath(authorizeParams(client, { scope: 'openid', id_token_hint: othersToken })));
      expect(res.status).toBe(302);
      expect(redirectParams(res).get('code')).toBeTruthy();
    });

    it('refuses a repeated id_token_hint with invalid_request', async () => {
      const { browser, idToken } = await signedInWithIdToken(user);
      const path = `${authorizePath(authorizeParams(client, { scope: 'openid', prompt: 'none' }))}&id_token_hint=${idToken}&id_token_hint=${idToken}`;
      expect(redirectParams(await browser.open(path)).get('error')).toBe('invalid_request');
    });
  });

  describe('UserInfo (§5.3)', () => {
    const USERINFO = `${TEST_ISSUER}/userinfo`;

    it('answers a POST carrying the access token in a form body (RFC 6750 §2.2, oidcc-userinfo-post-body)', async () => {
      const { access_token } = await obtainTokens(context().app, context().runtime, client, user, { scope: 'openid' });
      const res = await request(context().app).post('/userinfo').type('form').send({ access_token });
      expect(res.status, res.text).toBe(200);
      expect(res.body).toEqual({ sub: String(user.id) });
    });

    it('refuses a token sent both in the Authorization header and the body with invalid_request (RFC 6750 §2)', async () => {
      const { access_token } = await obtainTokens(context().app, context().runtime, client, user, { scope: 'openid' });
      const res = await request(context().app).post('/userinfo').set('Authorization', `Bearer ${access_token}`).type('form').send({ access_token });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_request');
      expect(res.headers['www-authenticate']).toMatch(/^Bearer realm="fieldgate", error="invalid_request"/);
    });

    it('refuses a form body that is not a form, too large, or repeats access_token, in the protocol format', async () => {
      const { access_token } = await obtainTokens(context().app, context().runtime, client, user, { scope: 'openid' });
      const repeated = await request(context().app).post('/userinfo').type('form').send(`access_token=${access_token}&access_token=${access_token}`);
      expect(repeated.status).toBe(400);
      expect(repeated.body.error).toBe('invalid_request');
      const huge = await request(context().app).post('/userinfo').type('form').send(`access_token=${'a'.repeat(20_000)}`);
      expect(huge.status).toBe(413);
      expect(huge.body.error).toBe('invalid_request');
      const json = await request(context().app).post('/userinfo').type('json').send({ access_token });
      expect(json.status).toBe(401);
      expect(json.headers['www-authenticate']).toMatch(/^Bearer realm="fieldgate", DPoP/);
    });

    it('does not take a token from the query string of a GET', async () => {
      const { access_token } = await obtainTokens(context().app, context().runtime, client, user, { scope: 'openid' });
      const res = await request(context().app).get(`/userinfo?access_token=${access_token}`);
      expect(res.status).toBe(401);
      expect(res.body.error).toBe('invalid_token');
    });

    it('refuses a DPoP-bound token sent in the body: it must come as Authorization: DPoP with its proof', async () => {
      const key = await dpopKey();
      const dpopClient = await buildClient(context().runtime, { isPublic: true });
      const params = authorizeParams(dpopClient, { scope: 'openid' });
      const code = redirectParams(await new Browser(context().app).authorize(params, user)).get('code')!;
      const token = await request(context().app)
        .post('/token')
        .type('form')
        .set('DPoP', await dpopProof(key, { htu: `${TEST_ISSUER}/token`, nonce: context().runtime.dpop.currentNonce() }))
        .send({ grant_type: 'authorization_code', code, redirect_uri: dpopClient.redirectUri, code_verifier: params.verifier, client_id: dpopClient.id });
      expect(token.body.token_type).toBe('DPoP');
      const res = await request(context().app)
        .post('/userinfo')
        .set('DPoP', await dpopProof(key, { htm: 'POST', htu: USERINFO, accessToken: token.body.access_token }))
        .type('form')
        .send({ access_token: token.body.access_token });
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toMatch(/^DPoP /);
    });

    it('refuses an ID Token presented as the access token, though the same key signed both', async () => {
      const res = await codeFlowTokens(context().app, new Browser(context().app), client, user, { scope: 'openid' });
      for (const send of [
        () => request(context().app).get('/userinfo').set('Authorization', `Bearer ${res.body.id_token}`),
        () => request(context().app).post('/userinfo').type('form').send({ access_token: res.body.id_token }),
      ]) {
        const answer = await send();
        expect(answer.status).toBe(401);
        expect(answer.body.error).toBe('invalid_token');
        expect(answer.headers['www-authenticate']).toMatch(/^Bearer realm="fieldgate", error="invalid_token"/);
      }
    });

    it('answers a token without openid with 403 insufficient_scope naming openid', async () => {
      const { access_token } = await obtainTokens(context().app, context().runtime, client, user, { scope: 'products:read' });
      const res = await request(context().app).get('/userinfo').set('Authorization', `Bearer ${access_token}`);
      expect(res.status).toBe(403);
      expect(res.body.error).toBe('insufficient_scope');
      expect(res.headers['www-authenticate']).toContain('scope="openid"');
    });

    it('refuses a client_credentials token, which speaks for no user, in the protocol format', async () => {
      const service = await buildClient(context().runtime, { redirectUris: [], grantTypes: ['client_credentials'], scope: 'products:read' });
      const token = await tokenRequest(context().app, { grant_type: 'client_credentials' }, service);
      expect(token.status, token.text).toBe(200);
      const res = await request(context().app).post('/userinfo').set('Authorization', `Bearer ${token.body.access_token}`);
      expect(res.status).toBe(403);
      expect(res.body.error).toBe('insufficient_scope');
      expect(res.headers['www-authenticate']).toMatch(/^Bearer realm="fieldgate", error="insufficient_scope"/);
    });
  });

  describe('discovery (OIDC Discovery §3)', () => {
    it('lists in claims_supported every claim the ID Token and UserInfo carry', async () => {
      const withClaims = await buildUser(context().runtime);
      await context().runtime.users.updateProfile(withClaims.username, { displayName: 'Ada L', email: 'ada@example.com', emailVerified: true });
      const res = await codeFlowTokens(context().app, new Browser(context().app), client, withClaims, { scope: 'openid profile email', nonce: 'x' });
      const metadata = (await request(context().app).get('/.well-known/openid-configuration')).body;
      const userinfo = await request(context().app).get('/userinfo').set('Authorization', `Bearer ${res.body.access_token}`);
      for (const claim of [...Object.keys(decodeJwt(res.body.id_token)), ...Object.keys(userinfo.body)]) {
        expect(metadata.claims_supported, claim).toContain(claim);
      }
    });
  });

  it('sends the browser back with a code after a sign-in for prompt=login, with the same sub', async () => {
    const browser = new Browser(context().app);
    const first = decodeJwt((await codeFlowTokens(context().app, browser, client, user, { scope: 'openid' })).body.id_token);
    const params = authorizeParams(client, { scope: 'openid', prompt: 'login' });
    const page = await browser.open(authorizePath(params));
    expect(page.text).toContain('name="password"');
    const signedIn = await browser.signIn(page, user.username, user.password);
    const landing = await browser.open(pathOf(signedIn.headers.location!));
    const code = redirectParams(landing).get('code')!;
    const res = await request(context().app)
      .post('/token')
      .type('form')
      .set('Authorization', basic(client.id, client.secret!))
      .send({ grant_type: 'authorization_code', code, redirect_uri: client.redirectUri, code_verifier: params.verifier });
    expect(decodeJwt(res.body.id_token).sub).toBe(first.sub);
  });
});
