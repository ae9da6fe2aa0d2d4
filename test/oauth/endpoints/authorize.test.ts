/**
 * GET /authorize (RFC 6749 §4.1.1, §4.1.2): parameters, the never-redirected errors
 * (§4.1.2.1), the redirected errors with iss (RFC 9207), the code redirect and default scopes (§3.3).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { eq } from 'drizzle-orm';
import { grants } from '../../../src/db/schema.js';
import { Sealer } from '../../../src/crypto/sealed.js';
import { describeEachDatabase } from '../../support/runtime.js';
import {
  authorizeParams,
  authorizePath,
  Browser,
  buildClient,
  buildUser,
  pathOf,
  redirectParams,
  tokenRequest,
  type TestClient,
  type TestUser,
} from '../../support/oauth.js';

describeEachDatabase('GET /authorize', (context) => {
  let client: TestClient;
  let publicClient: TestClient;
  let twoUris: TestClient;
  let user: TestUser;

  beforeAll(async () => {
    const { runtime } = context();
    client = await buildClient(runtime, { scope: 'products:read orders:read' });
    publicClient = await buildClient(runtime, { isPublic: true });
    twoUris = await buildClient(runtime, { redirectUris: ['https://two.example/a', 'https://two.example/b'] });
    user = await buildUser(runtime);
  });

  const get = (params: Parameters<typeof authorizePath>[0]) => request(context().app).get(authorizePath(params)).redirects(0);

  describe('errors shown on our own page, never redirected (RFC 6749 §4.1.2.1)', () => {
    const expectErrorPage = (res: request.Response, text: RegExp) => {
      expect(res.status).toBe(400);
      expect(res.headers.location).toBeUndefined();
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.text).toMatch(text);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
      expect(res.headers['referrer-policy']).toBe('no-referrer');
    };

    it('unknown client_id', async () => {
      expectErrorPage(await get(authorizeParams(client, { client_id: 'no-such-client' })), /not registered/);
    });

    it('missing client_id', async () => {
      expectErrorPage(await get(authorizeParams(client, { client_id: undefined })), /client_id is missing/);
    });

    it('repeated client_id', async () => {
      const res = await request(context().app)
        .get(`/authorize?response_type=code&client_id=${client.id}&client_id=${client.id}&redirect_uri=${encodeURIComponent(client.redirectUri)}`)
        .redirects(0);
      expectErrorPage(res, /repeated/);
    });

    it.each([
      ['an unregistered host', 'https://attacker.example/callback'],
      ['a prefix of the registered URI', 'PREFIX'],
      ['the registered URI with a suffix', 'SUFFIX'],
      ['the registered URI with an extra query', 'QUERY'],
      ['the registered URI with a fragment', 'FRAGMENT'],
      ['the registered URI in another case', 'CASE'],
      ['the registered URI with a trailing slash', 'SLASH'],
      ['a userinfo trick', 'USERINFO'],
      ['a path traversal', 'TRAVERSAL'],
    ])('redirect_uri mismatch: %s (open redirect attempt)', async (_name, kind) => {
      const registered = client.redirectUri;
      const variants: Record<string, string> = {
        PREFIX: registered.slice(0, -3),
        SUFFIX: `${registered}.attacker.example`,
        QUERY: `${registered}?next=https://attacker.example`,
        FRAGMENT: `${registered}#x`,
        CASE: registered.toUpperCase(),
        SLASH: `${registered}/`,
        USERINFO: registered.replace('https://', 'https://attacker.example@'),
        TRAVERSAL: `${registered}/../../attacker`,
      };
      const redirectUri = variants[kind] ?? kind;
      const res = await get(authorizeParams(client, { redirect_uri: redirectUri }));
      expectErrorPage(res, /not one this application registered/);
      expect(res.text).not.toContain('attacker.example/callback"');
    });

    it('missing redirect_uri when the client registered more than one', async () => {
      expectErrorPage(await get(authorizeParams(twoUris, { redirect_uri: undefined })), /registered more than one/);
    });

    it('repeated redirect_uri', async () => {
      const path = `${authorizePath(authorizeParams(client))}&redirect_uri=${encodeURIComponent(client.redirectUri)}`;
      expectErrorPage(await request(context().app).get(path).redirects(0), /repeated/);
    });

    it('even a bad response_type is not redirected when the redirect URI is untrusted', async () => {
      const res = await get(authorizeParams(client, { response_type: 'token', redirect_uri: 'https://attacker.example/' }));
      expectErrorPage(res, /not one this application registered/);
    });
  });

  describe('errors redirected to the client with error, error_description, state and iss (RFC 6749 §4.1.2.1, RFC 9207)', () => {
    const expectRedirectError = (res: request.Response, error: string, state: string | undefined, redirectUri = client.redirectUri) => {
      expect(res.status).toBe(302);
      const location = res.headers.location!;
      expect(location.startsWith(`${redirectUri}?`)).toBe(true);
      const params = redirectParams(res);
      expect(params.get('error')).toBe(error);
      expect(params.get('error_description')).toBeTruthy();
      expect(params.get('state')).toBe(state ?? null);
      expect(params.get('iss')).toBe(context().config.issuer);
      expect(params.get('code')).toBeNull();
    };

    it('unsupported_response_type for response_type=token', async () => {
      const params = authorizeParams(client, { response_type: 'token', state: 'a b&c=d/é' });
      expectRedirectError(await get(params), 'unsupported_response_type', 'a b&c=d/é');
    });

    it('invalid_request for a missing response_type', async () => {
      const params = authorizeParams(client, { response_type: undefined });
      expectRedirectError(await get(params), 'invalid_request', params.state);
    });

    it('invalid_request for a repeated parameter', async () => {
      const params = authorizeParams(client);
      const res = await request(context().app).get(`${authorizePath(params)}&scope=products:read&scope=orders:read`).redirects(0);
      expectRedirectError(res, 'invalid_request', params.state);
    });

    it.each(['form_post', 'fragment', 'query.jwt', 'web_message'])(
      'invalid_request for response_mode=%s, in the query, as response_modes_supported lists only query',
      async (mode) => {
        const params = authorizeParams(client, { response_mode: mode });
        expectRedirectError(await get(params), 'invalid_request', params.state);
      },
    );

    it('invalid_request for a repeated response_mode, even when both say query', async () => {
      const params = authorizeParams(client, { response_mode: 'query' });
      const res = await request(context().app).get(`${authorizePath(params)}&response_mode=query`).redirects(0);
      expectRedirectError(res, 'invalid_request', params.state);
    });

    it('a repeated state is not echoed (no single value to echo)', async () => {
      const params = authorizeParams(client);
      const res = await request(context().app).get(`${authorizePath(params)}&state=other`).redirects(0);
      expectRedirectError(res, 'invalid_request', undefined);
    });

    it('invalid_request when a public client sends no PKCE challenge', async () => {
      const params = authorizeParams(publicClient, { code_challenge: undefined, code_challenge_method: undefined });
      expectRedirectError(await get(params), 'invalid_request', params.state, publicClient.redirectUri);
    });

    it('invalid_request for code_challenge_method=plain', async () => {
      const params = authorizeParams(client, { code_challenge: 'x'.repeat(43), code_challenge_method: 'plain' });
      const res = await get(params);
      expectRedirectError(res, 'invalid_request', params.state);
      expect(redirectParams(res).get('error_description')).toMatch(/code_challenge_method is not supported; use S256/);
    });

    it('invalid_request for a challenge without a method (the default would be plain)', async () => {
      expectRedirectError(await get(authorizeParams(client, { code_challenge_method: undefined, state: 's' })), 'invalid_request', 's');
    });

    it('invalid_request for a malformed code_challenge', async () => {
      expectRedirectError(await get(authorizeParams(client, { code_challenge: 'short', state: 's' })), 'invalid_request', 's');
    });

    it('invalid_request for a method without a challenge', async () => {
      expectRedirectError(await get(authorizeParams(client, { code_challenge: undefined, state: 's' })), 'invalid_request', 's');
    });

    it('invalid_scope for a scope the client is not registered for (RFC 6749 §3.3)', async () => {
      expectRedirectError(await get(authorizeParams(client, { scope: 'products:read orders:write', state: 's' })), 'invalid_scope', 's');
    });

    it('invalid_scope for a request without scope from a client that registered only OpenID scopes (asked for by name)', async () => {
      const openidOnly = await buildClient(context().runtime, { scope: 'openid profile' });
      expectRedirectError(await get(authorizeParams(openidOnly, { state: 's' })), 'invalid_scope', 's', openidOnly.redirectUri);
    });

    it('invalid_scope for an unknown scope', async () => {
      expectRedirectError(await get(authorizeParams(client, { scope: 'admin', state: 's' })), 'invalid_scope', 's');
    });

    it('appends to a query the registered redirect URI already has', async () => {
      const withQuery = await buildClient(context().runtime, { redirectUris: ['https://q.example/cb?tenant=7'] });
      const res = await get(authorizeParams(withQuery, { response_type: 'token', state: 's' }));
      expect(res.headers.location).toMatch(/^https:\/\/q\.example\/cb\?tenant=7&error=unsupported_response_type&/);
    });
  });

  describe('a valid request', () => {
    it('shows the login page to a browser without a session', async () => {
      const res = await get(authorizeParams(client));
      expect(res.status).toBe(200);
      expect(res.text).toContain('name="username"');
      expect(res.text).toContain('name="password"');
    });

    it('takes response_mode=query, the default, through sign-in and consent to the code', async () => {
      const res = await new Browser(context().app).authorize(authorizeParams(client, { response_mode: 'query' }), user);
      expect(res.status).toBe(302);
      expect(redirectParams(res).get('code')).toBeTruthy();
    });

    it('without redirect_uri uses the only registered one', async () => {
      const browser = new Browser(context().app);
      const res = await browser.authorize(authorizeParams(client, { redirect_uri: undefined }), user);
      expect(res.status).toBe(302);
      expect(res.headers.location!.startsWith(`${client.redirectUri}?`)).toBe(true);
    });

    it('redirects with code, the same state and iss after Allow; the code is sealed, and its grant exists only once redeemed (RFC 6749 §4.1.2)', async () => {
      const { runtime } = context();
      const browser = new Browser(context().app);
      const params = authorizeParams(client, { state: 'xyz ~ 123' });
      const grantsOf = async () => (await runtime.db.select({ id: grants.id }).from(grants).where(eq(grants.clientId, client.id))).map((g) => g.id);
      const before = await grantsOf();
      const res = await browser.authorize(params, user);
      expect(res.status).toBe(302);
      const query = redirectParams(res);
      expect(query.get('state')).toBe('xyz ~ 123');
      expect(query.get('iss')).toBe(context().config.issuer);
      const code = query.get('code')!;
      expect(code).toMatch(/^[0-9a-z]+\.[A-Za-z0-9_-]+$/);
      // Encrypted: nothing of the authorization reads from the code itself.
      const decoded = Buffer.from(code.split('.')[1]!, 'base64url').toString('latin1');
      for (const secret of ['products:read', params.code_challenge, client.id, client.redirectUri]) expect(decoded).not.toContain(secret);
      const content = new Sealer(runtime.authorizationCodeSecret, 'authorization code').open(code) as Record<string, unknown>;
      expect(content).toMatchObject({ c: client.id, u: user.id, sc: 'products:read orders:read', cc: params.code_challenge }); // no scope → the client's defaults (RFC 6749 §3.3)
      expect((content.x as number) - Date.now() / 1000).toBeCloseTo(context().config.authCodeTtl, -1);
      // Issuing wrote no grant; redeeming creates it.
      expect(await grantsOf()).toEqual(before);
      const tokens = await tokenRequest(context().app, { grant_type: 'authorization_code', code, redirect_uri: client.redirectUri, code_verifier: params.verifier }, client);
      expect(tokens.status).toBe(200);
      const [grant] = await runtime.db.select().from(grants).where(eq(grants.id, content.g as string));
      expect(grant).toMatchObject({ clientId: client.id, userId: user.id, scope: 'products:read orders:read', revokedAt: null });
    });

    it('issues a different code for every authorization', async () => {
      const browser = new Browser(context().app);
      const first = redirectParams(await browser.authorize(authorizeParams(client), user)).get('code');
      const second = redirectParams(await browser.authorize(authorizeParams(client), user)).get('code');
      expect(first).not.toBe(second);
    });

    it('omits state from the response when the request had none', async () => {
      const browser = new Browser(context().app);
      const res = await browser.authorize(authorizeParams(client, { state: undefined }), user);
      expect(redirectParams(res).has('state')).toBe(false);
      expect(redirectParams(res).get('code')).toBeTruthy();
    });

    it('ignores unknown parameters', async () => {
      const browser = new Browser(context().app);
      const res = await browser.authorize(authorizeParams(client, { nonce: 'n', display: 'page', whatever: 'x' }), user);
      expect(redirectParams(res).get('code')).toBeTruthy();
    });

    it('answers other methods with 405 and no CORS headers', async () => {
      const res = await request(context().app).put(authorizePath(authorizeParams(client))).set('Origin', 'https://spa.example');
      expect(res.status).toBe(405);
      expect(res.headers.allow).toBe('GET, HEAD, POST');
      expect(res.headers['access-control-allow-origin']).toBeUndefined();
    });

    describe('a form POST (OIDC Core §3.1.2.1: the endpoint must take GET and POST)', () => {
      const formOf = (params: Record<string, string | undefined>) => {
        const form: Record<string, string> = {};
        for (const [name, value] of Object.entries(params)) if (value !== undefined && name !== 'verifier') form[name] = value;
        return form;
      };

      it('is answered with a 303 to the same request as a GET, so the Lax session cookie goes with it, and no CORS headers', async () => {
        const params = authorizeParams(client, { scope: 'openid', nonce: 'n é&=', ui_locales: 'de' });
        const res = await request(context().app).post('/authorize').set('Origin', 'https://spa.example').type('form').send(formOf(params)).redirects(0);
        expect(res.status).toBe(303);
        expect(res.headers['cache-control']).toBe('no-store');
        expect(res.headers['access-control-allow-origin']).toBeUndefined();
        const location = new URL(res.headers.location!);
        expect(location.origin + location.pathname).toBe(`${context().config.issuer}/authorize`);
        expect(Object.fromEntries(location.searchParams)).toEqual(formOf(params));
      });

      it('gives a signed-in user the code through prompt=none, as a GET does', async () => {
        const browser = new Browser(context().app);
        expect(redirectParams(await browser.authorize(authorizeParams(client, { scope: 'openid' }), user)).get('code')).toBeTruthy();
        const params = authorizeParams(client, { scope: 'openid', prompt: 'none' });
        const posted = await browser.agent.post('/authorize').type('form').send(formOf(params)).redirects(0);
        expect(posted.status).toBe(303);
        const res = await browser.open(pathOf(posted.headers.location!));
        expect(res.status).toBe(302);
        expect(redirectParams(res).get('code')).toBeTruthy();
        expect(redirectParams(res).get('state')).toBe(params.state);
      });

      it('refuses a body that is not a form on our own page, never redirecting', async () => {
        const res = await request(context().app).post('/authorize').set('Content-Type', 'application/json').send(JSON.stringify({ client_id: client.id })).redirects(0);
        expect(res.status).toBe(400);
        expect(res.headers.location).toBeUndefined();
        expect(res.headers['content-type']).toMatch(/^text\/html/);
      });
    });
  });
});

describeEachDatabase(
  'GET /authorize for a self-registered client (RFC 9700 §4.11.2: no open redirector)',
  (context) => {
    let client: TestClient;
    let user: TestUser;
    const phishing = 'https://phish.example/landing';

    beforeAll(async () => {
      // Anyone may register any https redirect URI, a phishing page included.
      const res = await request(context().app).post('/register').send({ redirect_uris: [phishing], token_endpoint_auth_method: 'none', client_name: 'Lure' });
      expect(res.status).toBe(201);
      client = { id: res.body.client_id, secret: undefined, redirectUri: phishing, redirectUris: [phishing], name: 'Lure', isPublic: true };
      user = await buildUser(context().runtime);
    });

    const get = (params: Parameters<typeof authorizePath>[0]) => request(context().app).get(authorizePath(params)).redirects(0);

    it.each([
      ['an unsupported response_type', { response_type: 'bogus' }, 'unsupported_response_type'],
      ['an unknown scope', { scope: 'nope' }, 'invalid_scope'],
      ['no PKCE', { code_challenge: undefined, code_challenge_method: undefined }, 'invalid_request'],
      ['prompt=none without a session', { prompt: 'none' }, 'login_required'],
    ] as const)('shows %s on our page with a link the user may follow, never redirecting by itself', async (_name, overrides, error) => {
      const res = await get(authorizeParams(client, { state: 's"<', ...overrides }));
      expect(res.status).toBe(400);
      expect(res.headers.location).toBeUndefined();
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.text).toContain('phish.example');
      expect(res.text).not.toContain('http-equiv="refresh"');
      const href = /<a href="([^"]*)">Return to/.exec(res.text)![1]!.replace(/&amp;/g, '&');
      const link = new URL(href);
      expect(link.origin + link.pathname).toBe(phishing);
      expect(link.searchParams.get('error')).toBe(error);
      expect(link.searchParams.get('state')).toBe('s"<');
      expect(link.searchParams.get('iss')).toBe(context().config.issuer);
      expect(res.text).not.toContain('s"<');
    });

    it('still redirects at once when the signed-in user presses Deny, and with the code after Allow', async () => {
      const denied = await new Browser(context().app).authorize(authorizeParams(client), user, 'deny');
      expect(denied.status).toBe(303);
      expect(redirectParams(denied).get('error')).toBe('access_denied');
      const allowed = await new Browser(context().app).authorize(authorizeParams(client), user);
      expect(redirectParams(allowed).get('code')).toBeTruthy();
    });

    it('answers consent_required to prompt=none on our page too, even for a signed-in user', async () => {
      const browser = new Browser(context().app);
      await browser.authorize(authorizeParams(client), user);
      const res = await browser.open(authorizePath(authorizeParams(client, { prompt: 'none' })));
      expect(res.status).toBe(400);
      expect(res.headers.location).toBeUndefined();
      expect(res.text).toContain('error=consent_required');
    });
  },
  { REGISTRATION: 'open', REGISTRATION_RATE_LIMIT: '10000' },
);
