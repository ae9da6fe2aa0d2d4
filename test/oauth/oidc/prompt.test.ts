/**
 * OIDC Core §3.1.2.1 request parameters at /authorize, over raw HTTP: `prompt` (none, login,
 * consent, select_account), `max_age`, `login_hint`, unsupported request objects, and the
 * §3.1.2.6 errors that `prompt=none` answers with instead of a page.
 */
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import request from 'supertest';
import { describeEachDatabase } from '../../support/runtime.js';
import {
  authorizeParams,
  authorizePath,
  codeFlowTokens,
  Browser,
  buildClient,
  buildUser,
  formFields,
  pathOf,
  redirectParams,
  type TestClient,
  type TestUser,
} from '../../support/oauth.js';

describeEachDatabase('OpenID Connect authorization request parameters', (context) => {
  let client: TestClient;
  let user: TestUser;

  beforeAll(async () => {
    client = await buildClient(context().runtime);
    user = await buildUser(context().runtime);
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  /** A browser signed in as `user` that has allowed `scope` to the client. */
  async function signedIn(scope = 'openid products:read'): Promise<Browser> {
    const browser = new Browser(context().app);
    const res = await browser.authorize(authorizeParams(client, { scope }), user);
    expect(redirectParams(res).get('code')).toBeTruthy();
    return browser;
  }

  const isLoginPage = (res: { status: number; text: string }) => res.status === 200 && res.text.includes('name="password"');
  const isConsentPage = (res: { status: number; text: string }) => res.status === 200 && res.text.includes('name="decision"');

  describe('prompt=none (§3.1.2.6)', () => {
    it('answers login_required at the redirect URI, with state and iss, when nobody is signed in', async () => {
      const params = authorizeParams(client, { scope: 'openid', prompt: 'none' });
      const res = await new Browser(context().app).open(authorizePath(params));
      expect(res.status).toBe(302);
      const answer = redirectParams(res);
      expect(answer.get('error')).toBe('login_required');
      expect(answer.get('state')).toBe(params.state);
      expect(answer.get('iss')).toBe(context().config.issuer);
    });

    it('answers consent_required when the scopes were never allowed', async () => {
      const browser = await signedIn('openid');
      const res = await browser.open(authorizePath(authorizeParams(client, { scope: 'openid orders:read', prompt: 'none' })));
      expect(res.status).toBe(302);
      expect(redirectParams(res).get('error')).toBe('consent_required');
    });

    it('issues a code without any page when the user is signed in and has allowed the scopes', async () => {
      const browser = await signedIn();
      const res = await browser.open(authorizePath(authorizeParams(client, { scope: 'openid products:read', prompt: 'none' })));
      expect(res.status).toBe(302);
      expect(redirectParams(res).get('code')).toBeTruthy();
    });

    it('answers login_required when the sign-in is older than max_age', async () => {
      vi.useFakeTimers({ toFake: ['Date'] });
      const browser = await signedIn();
      vi.setSystemTime(Date.now() + 120_000);
      const res = await browser.open(authorizePath(authorizeParams(client, { scope: 'openid products:read', prompt: 'none', max_age: '60' })));
      expect(redirectParams(res).get('error')).toBe('login_required');
    });

    it('refuses prompt=none combined with another value as invalid_request', async () => {
      const browser = await signedIn();
      const res = await browser.open(authorizePath(authorizeParams(client, { scope: 'openid', prompt: 'none login' })));
      expect(res.status).toBe(302);
      expect(redirectParams(res).get('error')).toBe('invalid_request');
    });
  });

  it('refuses an unsupported prompt value as invalid_request', async () => {
    const res = await new Browser(context().app).open(authorizePath(authorizeParams(client, { prompt: 'create' })));
    expect(redirectParams(res).get('error')).toBe('invalid_request');
  });

  for (const prompt of ['login', 'select_account']) {
    it(`prompt=${prompt} asks a signed-in user to sign in again, then issues the code (no loop)`, async () => {
      const browser = await signedIn();
      const page = await browser.open(authorizePath(authorizeParams(client, { scope: 'openid products:read', prompt })));
      expect(isLoginPage(page)).toBe(true);
      const after = await browser.signIn(page, user.username, user.password);
      expect(after.status).toBe(303);
      const landing = await browser.open(pathOf(after.headers.location!));
      expect(landing.status).toBe(302);
      expect(redirectParams(landing).get('code')).toBeTruthy();
    });
  }

  it('prompt=consent shows the consent page although the scopes were allowed before', async () => {
    const browser = await signedIn();
    const page = await browser.open(authorizePath(authorizeParams(client, { scope: 'openid products:read', prompt: 'consent' })));
    expect(isConsentPage(page)).toBe(true);
    const after = await browser.decide(page, 'allow');
    const landing = await browser.open(pathOf(after.headers.location!));
    expect(redirectParams(landing).get('code')).toBeTruthy();
  });

  it('max_age forces a new sign-in once the session is older, and not before', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const browser = await signedIn();
    vi.setSystemTime(Date.now() + 120_000);
    const fresh = await browser.open(authorizePath(authorizeParams(client, { scope: 'openid products:read', max_age: '3600' })));
    expect(redirectParams(fresh).get('code')).toBeTruthy();
    const stale = await browser.open(authorizePath(authorizeParams(client, { scope: 'openid products:read', max_age: '60' })));
    expect(isLoginPage(stale)).toBe(true);
  });

  describe('max_age=0, which is prompt=login (§3.1.2.1)', () => {
    it('asks a user who signed in this very second to sign in again, then issues the code (no loop)', async () => {
      const browser = await signedIn();
      const page = await browser.open(authorizePath(authorizeParams(client, { scope: 'openid products:read', max_age: '0' })));
      expect(isLoginPage(page)).toBe(true);
      const after = await browser.signIn(page, user.username, user.password);
      expect(after.status).toBe(303);
      expect(new URL(after.headers.location!).searchParams.has('max_age')).toBe(false);
      const landing = await browser.open(pathOf(after.headers.location!));
      expect(landing.status).toBe(302);
      expect(redirectParams(landing).get('code')).toBeTruthy();
    });

    it('takes a new browser through sign-in and consent to the code', async () => {
      const res = await new Browser(context().app).authorize(authorizeParams(client, { scope: 'openid products:read', max_age: '0' }), user);
      expect(res.status).toBe(302);
      expect(redirectParams(res).get('code')).toBeTruthy();
    });

    it('answers login_required beside prompt=none, however fresh the sign-in', async () => {
      const browser = await signedIn();
      const params = authorizeParams(client, { scope: 'openid products:read', prompt: 'none', max_age: '0' });
      const res = await browser.open(authorizePath(params));
      expect(res.status).toBe(302);
      expect(redirectParams(res).get('error')).toBe('login_required');
      expect(redirectParams(res).get('state')).toBe(params.state);
    });
  });

  for (const maxAge of ['-1', 'abc', '1e3', '99999999999']) {
    it(`refuses max_age=${maxAge} as invalid_request`, async () => {
      const res = await new Browser(context().app).open(authorizePath(authorizeParams(client, { max_age: maxAge })));
      expect(redirectParams(res).get('error')).toBe('invalid_request');
    });
  }

  it('prefills the username from login_hint, escaped', async () => {
    const res = await new Browser(context().app).open(authorizePath(authorizeParams(client, { login_hint: 'ada"><script>' })));
    expect(isLoginPage(res)).toBe(true);
    expect(formFields(res.text).username).toBe('ada"><script>');
    expect(res.text).not.toContain('"><script>');
  });

  it('refuses request objects (§6) with request_not_supported and request_uri_not_supported', async () => {
    const a = await new Browser(context().app).open(authorizePath(authorizeParams(client, { request: 'eyJ.e30.' })));
    expect(redirectParams(a).get('error')).toBe('request_not_supported');
    const b = await new Browser(context().app).open(authorizePath(authorizeParams(client, { request_uri: 'https://x.example/r' })));
    expect(redirectParams(b).get('error')).toBe('request_uri_not_supported');
  });

  it('ignores the claims parameter (claims_parameter_supported is false)', async () => {
    const res = await new Browser(context().app).authorize(authorizeParams(client, { scope: 'openid', claims: '{"userinfo":{"email":null}}' }), user);
    expect(redirectParams(res).get('code')).toBeTruthy();
  });

  describe('offline_access (§11)', () => {
    async function exchange(scope: string) {
      return codeFlowTokens(context().app, new Browser(context().app), client, user, { scope });
    }

    it('issues no refresh token to an OpenID request without offline_access', async () => {
      const res = await exchange('openid products:read');
      expect(res.status).toBe(200);
      expect(res.body.id_token).toBeTypeOf('string');
      expect(res.body.refresh_token).toBeUndefined();
    });

    it('issues a refresh token with offline_access, and to plain OAuth requests as before', async () => {
      expect((await exchange('openid offline_access products:read')).body.refresh_token).toBeTypeOf('string');
      const plain = await exchange('products:read');
      expect(plain.body.refresh_token).toBeTypeOf('string');
      expect(plain.body.id_token).toBeUndefined();
    });

    it('asks for consent before offline_access is first granted', async () => {
      const fresh = await buildUser(context().runtime);
      const browser = new Browser(context().app);
      await browser.authorize(authorizeParams(client, { scope: 'openid' }), fresh);
      let res = await browser.open(authorizePath(authorizeParams(client, { scope: 'openid offline_access' })));
      expect(isConsentPage(res)).toBe(true);
      expect(res.text).toContain('Keep access while you are not using it');
      res = await browser.decide(res, 'allow');
      expect(res.status).toBe(303);
    });
  });
});
