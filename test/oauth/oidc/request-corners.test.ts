/**
 * Corners of the OpenID Connect sign-in face an OpenID certification tester probes, over raw HTTP against the real app:
 * OIDC Core §3.1.2.1–§3.1.2.6 (prompt, max_age, id_token_hint, nonce, request objects, response_mode/type), §3.1.3.7
 * (the ID Token a strict RP validates), §5.3 (UserInfo), §15.1 (what every OP must take without error), RFC 9207 (`iss`
 * on every authorization response), and that /.well-known/openid-configuration advertises exactly what works.
 */
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import request from 'supertest';
import { createHash } from 'node:crypto';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, generateKeyPair, jwtVerify, SignJWT } from 'jose';
import { describeEachDatabase, TEST_ISSUER } from '../../support/runtime.js';
import { and, eq } from 'drizzle-orm';
import { consents } from '../../../src/db/schema.js';
import {
  authorizeParams,
  authorizePath,
  Browser,
  buildClient,
  buildUser,
  codeFlowTokens,
  formFields,
  obtainTokens,
  pathOf,
  redirectParams,
  tokenRequest,
  type TestClient,
  type TestUser,
} from '../../support/oauth.js';

describeEachDatabase('OpenID Connect request corners', (context) => {
  let client: TestClient;
  let user: TestUser;

  beforeAll(async () => {
    [client, user] = await Promise.all([buildClient(context().runtime), buildUser(context().runtime)]);
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  const isLoginPage = (res: { status: number; text: string }) => res.status === 200 && res.text.includes('name="password"');
  const isConsentPage = (res: { status: number; text: string }) => res.status === 200 && res.text.includes('name="decision"');

  /** A browser signed in as `who` that has allowed `scope`, and the ID Token it got. */
  async function signedIn(who: TestUser = user, scope = 'openid', to: TestClient = client): Promise<{ browser: Browser; idToken: string }> {
    const browser = new Browser(context().app);
    const tokens = await codeFlowTokens(context().app, browser, to, who, { scope });
    expect(tokens.status, tokens.text).toBe(200);
    return { browser, idToken: tokens.body.id_token as string };
  }

  /** An error redirected to the client: error, the request's state, and iss (RFC 9207). */
  function expectRedirectedError(res: { status: number; headers: Record<string, string | undefined> }, error: string, state: string | undefined): void {
    expect(res.status).toBe(302);
    const answer = redirectParams(res);
    expect(`${answer.get('error')}: ${answer.get('error_description')}`).toMatch(new RegExp(`^${error}:`));
    expect(answer.get('state')).toBe(state ?? null);
    expect(answer.get('iss')).toBe(context().config.issuer);
    expect(answer.get('code')).toBeNull();
  }

  async function verifyIdToken(idToken: string) {
    const jwks = createLocalJWKSet((await request(context().app).get('/.well-known/jwks.json')).body);
    return (await jwtVerify(idToken, jwks, { issuer: TEST_ISSUER, audience: client.id })).payload;
  }

  async function redeem(params: { verifier: string }, landing: { headers: Record<string, string | undefined> }) {
    const code = redirectParams(landing).get('code');
    expect(code).toBeTruthy();
    return tokenRequest(context().app, { grant_type: 'authorization_code', code: code!, redirect_uri: client.redirectUri, code_verifier: params.verifier }, client);
  }

  describe('prompt (§3.1.2.1, §3.1.2.6)', () => {
    for (const prompt of ['none login', 'none consent', 'none select_account', 'consent none']) {
      it(`refuses prompt=${prompt} as invalid_request, with state and iss, even for a signed-in user`, async () => {
        const { browser } = await signedIn();
        const params = authorizeParams(client, { scope: 'openid', prompt });
        expectRedirectedError(await browser.open(authorizePath(params)), 'invalid_request', params.state);
      });
    }

    it('refuses a repeated prompt parameter as invalid_request, even when both say none', async () => {
      const { browser } = await signedIn();
      const params = authorizeParams(client, { scope: 'openid' });
      expectRedirectedError(await browser.open(`${authorizePath(params)}&prompt=none&prompt=none`), 'invalid_request', params.state);
    });

    it('refuses an unknown prompt value, and a known one in the wrong case, as invalid_request', async () => {
      for (const prompt of ['create', 'NONE', 'none create']) {
        const params = authorizeParams(client, { scope: 'openid', prompt });
        expectRedirectedError(await new Browser(context().app).open(authorizePath(params)), 'invalid_request', params.state);
      }
    });

    it('answers consent_required at the redirect URI to a signed-in user who never allowed this client', async () => {
      const { browser } = await signedIn();
      const other = await buildClient(context().runtime);
      const params = authorizeParams(other, { scope: 'openid', prompt: 'none' });
      const res = await browser.open(authorizePath(params));
      expect(res.status).toBe(302);
      expect(res.headers.location!.startsWith(`${other.redirectUri}?`)).toBe(true);
      expect(redirectParams(res).get('error')).toBe('consent_required');
      expect(redirectParams(res).get('state')).toBe(params.state);
      expect(redirectParams(res).get('iss')).toBe(TEST_ISSUER);
    });

    it('prompt="login consent" asks for the password and then for consent, then issues the code', async () => {
      const { browser } = await signedIn();
      const params = authorizeParams(client, { scope: 'openid', prompt: 'login consent' });
      const login = await browser.open(authorizePath(params));
      expect(isLoginPage(login)).toBe(true);
      const afterLogin = await browser.signIn(login, user.username, user.password);
      const consent = await browser.open(pathOf(afterLogin.headers.location!));
      expect(isConsentPage(consent)).toBe(true);
      const afterConsent = await browser.decide(consent, 'allow');
      const landing = await browser.open(pathOf(afterConsent.headers.location!));
      expect((await redeem(params, landing)).status).toBe(200);
    });
  });

  describe('max_age (§3.1.2.1)', () => {
    for (const maxAge of ['-5', '1.5', ' 5', '0x10']) {
      it(`refuses max_age=${JSON.stringify(maxAge)} with invalid_request, state and iss`, async () => {
        const params = authorizeParams(client, { scope: 'openid', max_age: maxAge });
        expectRedirectedError(await new Browser(context().app).open(authorizePath(params)), 'invalid_request', params.state);
      });
    }

    it('reads an empty max_age as not sent (RFC 6749 §3.1)', async () => {
      const res = await new Browser(context().app).open(authorizePath(authorizeParams(client, { scope: 'openid', max_age: '' })));
      expect(isLoginPage(res)).toBe(true);
    });

    it('puts auth_time in the ID Token whenever max_age was sent, the sign-in time, kept by a silent request', async () => {
      vi.useFakeTimers({ toFake: ['Date'] });
      const { browser } = await signedIn();
      const signInTime = Math.floor(Date.now() / 1000);
      vi.setSystemTime(Date.now() + 30_000);
      const params = authorizeParams(client, { scope: 'openid', max_age: '9999999999', prompt: 'none' });
      const res = await redeem(params, await browser.open(authorizePath(params)));
      const claims = await verifyIdToken(res.body.id_token);
      expect(claims.auth_time).toBe(signInTime);
    });

    it('records no consent from an Allow given after the sign-in outgrew max_age: the password comes first', async () => {
      vi.useFakeTimers({ toFake: ['Date'] });
      const own = await buildClient(context().runtime, { scope: 'openid profile email' });
      const browser = new Browser(context().app);
      await browser.authorize(authorizeParams(own, { scope: 'openid' }), user);
      const consent = await browser.open(authorizePath(authorizeParams(own, { scope: 'openid email', max_age: '60' })));
      expect(consent.text).toContain('name="decision"');
      vi.setSystemTime(Date.now() + 120_000);
      const allowed = await browser.decide(consent, 'allow');
      expect(allowed.headers.location!.startsWith(`${TEST_ISSUER}/authorize?`)).toBe(true);
      expect(isLoginPage(await browser.open(pathOf(allowed.headers.location!)))).toBe(true);
      const [stored] = await context().runtime.db.select().from(consents).where(and(eq(consents.userId, user.id), eq(consents.clientId, own.id)));
      expect(stored!.scope.split(' ')).not.toContain('email');
    });

    it('answers login_required to prompt=none with max_age when the sign-in is older, even with a matching id_token_hint', async () => {
      vi.useFakeTimers({ toFake: ['Date'] });
      const { browser, idToken } = await signedIn();
      vi.setSystemTime(Date.now() + 61_000);
      const params = authorizeParams(client, { scope: 'openid', prompt: 'none', max_age: '60', id_token_hint: idToken });
      expectRedirectedError(await browser.open(authorizePath(params)), 'login_required', params.state);
    });
  });

  describe('id_token_hint (§3.1.2.1)', () => {
    it('takes an expired ID Token as a hint: prompt=none still issues the code to the user it names', async () => {
      vi.useFakeTimers({ toFake: ['Date'] });
      const { browser, idToken } = await signedIn();
      const { exp } = decodeJwt(idToken);
      vi.setSystemTime((exp! + 60) * 1000);
      const params = authorizeParams(client, { scope: 'openid', prompt: 'none', id_token_hint: idToken });
      const res = await browser.open(authorizePath(params));
      expect(res.status).toBe(302);
      expect(redirectParams(res).get('error')).toBeNull();
      expect((await redeem(params, res)).status).toBe(200);
    });

    it('refuses a hint signed by a key this server does not hold, whatever kid it names', async () => {
      const { browser, idToken } = await signedIn();
      const { privateKey } = await generateKeyPair('ES256');
      const realKid = decodeProtectedHeader(idToken).kid!;
      for (const kid of [realKid, 'unknown-kid']) {
        const forged = await new SignJWT({ ...decodeJwt(idToken) }).setProtectedHeader({ alg: 'ES256', kid, typ: 'JWT' }).sign(privateKey);
        const params = authorizeParams(client, { scope: 'openid', prompt: 'none', id_token_hint: forged });
        expectRedirectedError(await browser.open(authorizePath(params)), 'invalid_request', params.state);
      }
    });

    it('is login_required, not a code, for prompt=none with a hint when nobody is signed in', async () => {
      const { idToken } = await signedIn();
      const params = authorizeParams(client, { scope: 'openid', prompt: 'none', id_token_hint: idToken });
      expectRedirectedError(await new Browser(context().app).open(authorizePath(params)), 'login_required', params.state);
    });

    it('refuses an access token of ours given as the hint', async () => {
      const tokens = await codeFlowTokens(context().app, new Browser(context().app), client, user, { scope: 'openid' });
      const { browser } = await signedIn();
      const params = authorizeParams(client, { scope: 'openid', prompt: 'none', id_token_hint: tokens.body.access_token });
      expectRedirectedError(await browser.open(authorizePath(params)), 'invalid_request', params.state);
    });
  });

  describe('nonce (§3.1.2.1, §3.1.3.7, §12.2)', () => {
    it('needs no nonce in the code flow, and puts none in the ID Token then', async () => {
      const res = await codeFlowTokens(context().app, new Browser(context().app), client, user, { scope: 'openid' });
      expect(res.status).toBe(200);
      expect((await verifyIdToken(res.body.id_token)).nonce).toBeUndefined();
    });

    it('carries a 512-character nonce of URL-special characters through the code to the ID Token, and not into a refreshed one', async () => {
      const nonce = '&=+#?%/;:,'.repeat(52).slice(0, 512);
      const first = await codeFlowTokens(context().app, new Browser(context().app), client, user, { scope: 'openid offline_access', nonce });
      expect((await verifyIdToken(first.body.id_token)).nonce).toBe(nonce);
      const refreshed = await tokenRequest(context().app, { grant_type: 'refresh_token', refresh_token: first.body.refresh_token }, client);
      expect(refreshed.status).toBe(200);
      const claims = await verifyIdToken(refreshed.body.id_token);
      expect(claims.nonce).toBeUndefined();
    });
  });

  describe('parameters that are not supported (§3.1.2.1, §6, §15.1)', () => {
    it('answers request and request_uri with request_not_supported and request_uri_not_supported, with state and iss', async () => {
      const a = authorizeParams(client, { scope: 'openid', request: 'eyJhbGciOiJub25lIn0.e30.' });
      expectRedirectedError(await new Browser(context().app).open(authorizePath(a)), 'request_not_supported', a.state);
      const b = authorizeParams(client, { scope: 'openid', request_uri: 'urn:ietf:params:oauth:request_uri:abc' });
      expectRedirectedError(await new Browser(context().app).open(authorizePath(b)), 'request_uri_not_supported', b.state);
    });

    it('answers the registration parameter with registration_not_supported (§3.1.2.6), with state and iss, not by ignoring it', async () => {
      const params = authorizeParams(client, { scope: 'openid', registration: '{"logo_uri":"https://evil.example/logo.png"}' });
      expectRedirectedError(await new Browser(context().app).open(authorizePath(params)), 'registration_not_supported', params.state);
    });

    // §15.1: acr_values, display and the locales must not cause an error; claims is ignored (claims_parameter_supported: false).
    it('takes display, ui_locales, claims_locales, acr_values and a claims parameter of any shape without error', async () => {
      const params = authorizeParams(client, {
        scope: 'openid',
        display: 'popup',
        ui_locales: 'fr-CA <b>',
        claims_locales: 'de',
        acr_values: 'urn:mace:incommon:iap:silver',
        claims: '{not json',
      });
      const res = await new Browser(context().app).authorize(params, user);
      expect((await redeem(params, res)).status).toBe(200);
    });

    it('shows the login page for a login_hint with markup, prefilled and escaped', async () => {
      const hint = `"'><img src=x onerror=alert(1)>&amp;`;
      const res = await new Browser(context().app).open(authorizePath(authorizeParams(client, { scope: 'openid', login_hint: hint })));
      expect(isLoginPage(res)).toBe(true);
      expect(res.text).not.toContain('<img src=x');
      expect(formFields(res.text).username).toBe(hint);
    });
  });

  describe('response_type and response_mode against discovery', () => {
    for (const responseType of ['token', 'id_token', 'code id_token', 'code token', 'id_token token', 'none', 'code code']) {
      it(`answers response_type=${responseType} with unsupported_response_type, state and iss`, async () => {
        const params = authorizeParams(client, { scope: 'openid', response_type: responseType, nonce: 'n' });
        expectRedirectedError(await new Browser(context().app).open(authorizePath(params)), 'unsupported_response_type', params.state);
      });
    }

    for (const mode of ['fragment', 'form_post', 'jwt', 'query.jwt']) {
      it(`refuses response_mode=${mode}, which is not advertised, with invalid_request`, async () => {
        const params = authorizeParams(client, { scope: 'openid', response_mode: mode });
        expectRedirectedError(await new Browser(context().app).open(authorizePath(params)), 'invalid_request', params.state);
      });
    }

    it('advertises only what works: code, query, the prompts it takes, no claims or request parameters', async () => {
      const metadata = (await request(context().app).get('/.well-known/openid-configuration')).body;
      expect(metadata.issuer).toBe(TEST_ISSUER);
      expect(metadata.response_types_supported).toEqual(['code']);
      expect(metadata.response_modes_supported).toEqual(['query']);
      expect(metadata.authorization_response_iss_parameter_supported).toBe(true);
      expect(metadata.id_token_signing_alg_values_supported).toContain('RS256');
      expect(metadata.subject_types_supported).toEqual(expect.arrayContaining(['public']));
      expect(metadata.claims_parameter_supported).toBe(false);
      expect(metadata.request_parameter_supported).toBe(false);
      expect(metadata.request_uri_parameter_supported).toBe(false);
      for (const prompt of metadata.prompt_values_supported as string[]) {
        const params = authorizeParams(client, { scope: 'openid', prompt });
        const res = await new Browser(context().app).open(authorizePath(params));
        expect(res.status === 200 || redirectParams(res).get('error') === 'login_required', prompt).toBe(true);
      }
    });
  });

  describe('the ID Token (§2, §3.1.3.7)', () => {
    it('carries iss, a single aud, sub, iat, exp, auth_time, sid and at_hash of the access token it came with', async () => {
      const res = await codeFlowTokens(context().app, new Browser(context().app), client, user, { scope: 'openid', max_age: '600' });
      const claims = await verifyIdToken(res.body.id_token);
      expect(claims.aud).toBe(client.id);
      if (claims.azp !== undefined) expect(claims.azp).toBe(client.id);
      expect(claims.sub).toBe(String(user.id));
      expect(claims.auth_time).toBeTypeOf('number');
      expect(claims.sid).toBeTypeOf('string');
      expect(claims.at_hash).toBe(createHash('sha256').update(res.body.access_token).digest().subarray(0, 16).toString('base64url'));
    });
  });

  describe('RP-Initiated Logout pages', () => {
    it('answers other methods on /logout and /logout/confirm with a 405 page and Allow, as the sign-in pages do', async () => {
      for (const [method, path, allow] of [
        ['put', '/logout', 'GET, HEAD, POST'],
        ['delete', '/logout', 'GET, HEAD, POST'],
        ['get', '/logout/confirm', 'POST'],
      ] as const) {
        const res = await request(context().app)[method](path).redirects(0);
        expect(res.status, `${method} ${path}`).toBe(405);
        expect(res.headers.allow).toBe(allow);
        expect(res.headers['content-type']).toMatch(/^text\/html/);
      }
    });
  });

  describe('UserInfo (§5.3)', () => {
    it('answers GET, POST with the header and POST with the token in the form body alike', async () => {
      const { access_token } = await obtainTokens(context().app, context().runtime, client, user, { scope: 'openid profile' });
      const get = await request(context().app).get('/userinfo').set('Authorization', `Bearer ${access_token}`);
      const post = await request(context().app).post('/userinfo').set('Authorization', `Bearer ${access_token}`);
      const body = await request(context().app).post('/userinfo').type('form').send({ access_token });
      for (const res of [get, post, body]) {
        expect(res.status, res.text).toBe(200);
        expect(res.body.sub).toBe(String(user.id));
        expect(res.body.preferred_username).toBe(user.username);
      }
    });

    it('answers a token without openid with 403 insufficient_scope and a challenge', async () => {
      const { access_token } = await obtainTokens(context().app, context().runtime, client, user, { scope: 'products:read' });
      const res = await request(context().app).get('/userinfo').set('Authorization', `Bearer ${access_token}`);
      expect(res.status).toBe(403);
      expect(res.body.error).toBe('insufficient_scope');
      expect(res.headers['www-authenticate']).toMatch(/error="insufficient_scope"/);
    });

    it('lets a browser app read the answer and the challenge (CORS)', async () => {
      const origin = 'https://spa.example';
      const preflight = await request(context().app)
        .options('/userinfo')
        .set('Origin', origin)
        .set('Access-Control-Request-Method', 'GET')
        .set('Access-Control-Request-Headers', 'authorization,dpop');
      expect(preflight.status).toBeLessThan(300);
      expect(preflight.headers['access-control-allow-origin']).toBeTruthy();
      const refused = await request(context().app).get('/userinfo').set('Origin', origin);
      expect(refused.status).toBe(401);
      expect(refused.headers['access-control-allow-origin']).toBeTruthy();
      expect(refused.headers['access-control-expose-headers']).toMatch(/WWW-Authenticate/i);
    });

    it('answers other methods with 405, Allow and a JSON error, as the other endpoints do, not a 404', async () => {
      for (const method of ['put', 'delete', 'patch'] as const) {
        const res = await request(context().app)[method]('/userinfo');
        expect(res.status, method).toBe(405);
        expect(res.headers.allow).toBe('GET, HEAD, POST, OPTIONS');
        expect(res.body.error).toBe('invalid_request');
      }
    });
  });
});

describeEachDatabase(
  'OpenID Connect request corners for a self-registered client',
  (context) => {
    let client: TestClient;
    let user: TestUser;

    beforeAll(async () => {
      const redirectUri = 'https://self-registered.example/cb';
      const res = await request(context().app).post('/register').send({ redirect_uris: [redirectUri], token_endpoint_auth_method: 'none', client_name: 'Self' });
      expect(res.status).toBe(201);
      client = { id: res.body.client_id, secret: undefined, redirectUri, redirectUris: [redirectUri], name: 'Self', isPublic: true };
      user = await buildUser(context().runtime);
    });

    afterEach(() => {
      vi.useRealTimers();
    });

    it('asks for the password again when Allow comes after the sign-in grew older than max_age, instead of issuing the code', async () => {
      vi.useFakeTimers({ toFake: ['Date'] });
      const browser = new Browser(context().app);
      await browser.authorize(authorizeParams(client, { scope: 'openid' }), user);
      const params = authorizeParams(client, { scope: 'openid', max_age: '60' });
      const consent = await browser.open(authorizePath(params));
      expect(consent.status).toBe(200);
      expect(consent.text).toContain('name="decision"');
      vi.setSystemTime(Date.now() + 120_000);
      const allowed = await browser.decide(consent, 'allow');
      expect(allowed.status).toBe(303);
      expect(allowed.headers.location!.startsWith(`${TEST_ISSUER}/authorize?`)).toBe(true);
      const page = await browser.open(pathOf(allowed.headers.location!));
      expect(page.text).toContain('name="password"');
      // Signing in again then leads to the consent page and the code, with a fresh auth_time.
      const landing = await browser.authorize(params, user);
      expect(redirectParams(landing).get('code')).toBeTruthy();
    });

    it('takes max_age=0 and prompt=login through one sign-in and the consent page to the code (no loop)', async () => {
      for (const overrides of [{ max_age: '0' }, { prompt: 'login' }, { max_age: '0', prompt: 'consent' }]) {
        const browser = new Browser(context().app);
        await browser.authorize(authorizeParams(client, { scope: 'openid' }), user);
        const params = authorizeParams(client, { scope: 'openid', ...overrides });
        const landing = await browser.authorize(params, user);
        expect(redirectParams(landing).get('code'), JSON.stringify(overrides)).toBeTruthy();
      }
    });
  },
  { REGISTRATION: 'open', REGISTRATION_RATE_LIMIT: '10000' },
);
