/**
 * RP-Initiated Logout 1.0 at /logout: id_token_hint (signature checked, expiry not),
 * post_logout_redirect_uri (registered, exact match) with state, the CSRF-protected
 * confirmation, the end of the browser session, and Back-Channel Logout 1.0 tokens.
 */
import { startLogoutReceiver } from '../../support/logout-receiver.js';
import { beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import { describeEachDatabase } from '../../support/runtime.js';
import { authorizeParams, authorizePath, Browser, codeFlowTokens, buildClient, buildUser, formAction, formFields, redirectParams, type TestClient, type TestUser } from '../../support/oauth.js';
import { securityEventCounter } from '../../../src/http/metrics.js';
import { logoutToken, notifyBackchannelLogout, postLogoutToken } from '../../../src/oauth/oidc/backchannel.js';
import { ConsentStore } from '../../../src/oauth/stores/consents.js';
import { createOAuthContext } from '../../../src/oauth/context.js';

describeEachDatabase('RP-Initiated Logout', (context) => {
  let client: TestClient;
  let other: TestClient;
  let user: TestUser;
  const afterLogout = 'https://rp.example/signed-out';

  beforeAll(async () => {
    client = await buildClient(context().runtime, { redirectUris: ['https://rp.example/cb'], oidc: { postLogoutRedirectUris: [afterLogout] } });
    other = await buildClient(context().runtime, { redirectUris: ['https://other.example/cb'] });
    user = await buildUser(context().runtime);
  });

  async function signedInWithIdToken(): Promise<{ browser: Browser; idToken: string }> {
    const browser = new Browser(context().app);
    const token = await codeFlowTokens(context().app, browser, client, user, { scope: 'openid' });
    expect(token.body.id_token).toBeTypeOf('string');
    return { browser, idToken: token.body.id_token };
  }

  const logoutPath = (params: Record<string, string>) => `/logout?${new URLSearchParams(params).toString()}`;

  it('asks a signed-in user to confirm, then ends the session and returns to the registered URI with state', async () => {
    const { browser, idToken } = await signedInWithIdToken();
    const page = await browser.open(logoutPath({ id_token_hint: idToken, post_logout_redirect_uri: afterLogout, state: 'xyz' }));
    expect(page.status).toBe(200);
    expect(page.text).toContain('Sign out?');
    // An app may open its logout in a popup (oidc-client-ts signoutPopup) and wait for it to come back.
    expect(page.headers['cross-origin-opener-policy']).toBe('unsafe-none');
    const done = await browser.submit(formAction(page.text), { ...formFields(page.text), decision: 'logout' });
    expect(done.status).toBe(303);
    expect(done.headers.location).toBe(`${afterLogout}?state=xyz`);
    // The session is over: /authorize shows the login page again.
    const again = await browser.open(authorizePath(authorizeParams(client, { scope: 'openid' })));
    expect(again.text).toContain('name="password"');
  });

  it('accepts an expired id_token_hint signed by this server', async () => {
    const { browser, idToken } = await signedInWithIdToken();
    expect(decodeJwt(idToken).exp).toBeTypeOf('number');
    // Re-sign an expired copy with the server's own key, as an old hint would be.
    const key = await context().runtime.keys.signingKey();
    const expired = key.sign({ ...decodeJwt(idToken), iat: 1_000, exp: 2_000 }, decodeProtectedHeader(idToken).typ as string);
    const page = await browser.open(logoutPath({ id_token_hint: expired, post_logout_redirect_uri: afterLogout }));
    expect(page.status).toBe(200);
    expect(page.text).toContain('Sign out?');
  });

  it('accepts an id_token_hint signed with our RS256 key (a client registered RS256), and refuses one whose header claims another algorithm', async () => {
    const rsClient = await buildClient(context().runtime, {
      redirectUris: ['https://rs256.example/cb'],
      oidc: { postLogoutRedirectUris: ['https://rs256.example/bye'], idTokenSignedResponseAlg: 'RS256' },
    });
    const browser = new Browser(context().app);
    const token = await codeFlowTokens(context().app, browser, rsClient, user, { scope: 'openid' });
    const idToken = token.body.id_token as string;
    expect(decodeProtectedHeader(idToken)).toMatchObject({ alg: 'RS256', kid: (await context().runtime.keys.signingKey('RS256')).kid });
    const page = await browser.open(logoutPath({ id_token_hint: idToken, post_logout_redirect_uri: 'https://rs256.example/bye' }));
    expect(page.status).toBe(200);
    expect(page.text).toContain('Sign out?');
    // The RSA key's kid on a header that says ES256: verified only with the key's own algorithm, so refused.
    const [, payload, signature] = idToken.split('.');
    const header = Buffer.from(JSON.stringify({ ...decodeProtectedHeader(idToken), alg: 'ES256' })).toString('base64url');
    const confused = await browser.open(logoutPath({ id_token_hint: `${header}.${payload}.${signature}`, post_logout_redirect_uri: 'https://rs256.example/bye' }));
    expect(confused.status).toBe(400);
  });

  it('refuses as id_token_hint a signed UserInfo answer, which our key signed with iss, aud and sub but is no ID Token (Core §2: no exp)', async () => {
    const signing = await buildClient(context().runtime, {
      redirectUris: ['https://signed.example/cb'],
      oidc: { postLogoutRedirectUris: ['https://signed.example/bye'], userinfoSignedResponseAlg: 'ES256' },
    });
    const browser = new Browser(context().app);
    const tokens = await codeFlowTokens(context().app, browser, signing, user, { scope: 'openid' });
    const userinfo = await request(context().app).get('/userinfo').set('Authorization', `Bearer ${tokens.body.access_token}`);
    expect(userinfo.headers['content-type']).toBe('application/jwt');
    expect(decodeJwt(userinfo.text)).toMatchObject({ iss: context().config.issuer, aud: signing.id, sub: String(user.id) });
    const page = await browser.open(logoutPath({ id_token_hint: userinfo.text, post_logout_redirect_uri: 'https://signed.example/bye' }));
    expect(page.status).toBe(400);
    expect(page.headers.location).toBeUndefined();
    // The ID Token of the same sign-in is a hint.
    expect((await browser.open(logoutPath({ id_token_hint: tokens.body.id_token, post_logout_redirect_uri: 'https://signed.example/bye' }))).status).toBe(200);
  });

  it('refuses, on its own page, a hint with a bad signature, an unregistered or near-miss redirect, or a client mismatch', async () => {
    const { browser, idToken } = await signedInWithIdToken();
    const [header, payload, signature] = idToken.split('.');
    const tampered = `${header}.${Buffer.from(JSON.stringify({ ...decodeJwt(idToken), sub: 'someone-else' })).toString('base64url')}.${signature}`;
    const cases: Record<string, string>[] = [
      { id_token_hint: tampered, post_logout_redirect_uri: afterLogout },
      { id_token_hint: 'not-a-jwt' },
      { id_token_hint: idToken, post_logout_redirect_uri: `${afterLogout}/` },
      { id_token_hint: idToken, post_logout_redirect_uri: 'https://evil.example/' },
      { post_logout_redirect_uri: afterLogout },
      { id_token_hint: idToken, client_id: other.id },
      { client_id: 'no-such-client' },
    ];
    for (const params of cases) {
      const res = await browser.open(logoutPath(params));
      expect(res.status, JSON.stringify(params)).toBe(400);
      expect(res.headers.location).toBeUndefined();
    }
    expect(payload).toBeTruthy();
  });

  it('does not sign out without the CSRF token, nor when the user chooses to stay', async () => {
    const { browser } = await signedInWithIdToken();
    const page = await browser.open(logoutPath({ client_id: client.id }));
    const forged = await browser.submit(formAction(page.text), { ...formFields(page.text), csrf_token: 'forged', decision: 'logout' });
    expect(forged.status).toBe(403);
    const stay = await browser.submit(formAction(page.text), { ...formFields(page.text), decision: 'stay' });
    expect(stay.status).toBe(200);
    expect(stay.text).toContain('still signed in');
    const still = await browser.open(authorizePath(authorizeParams(client, { scope: 'openid', prompt: 'none' })));
    expect(redirectParams(still).get('code')).toBeTruthy();
  });

  it('answers a second Sign out (a double click, Back and again) as signed out, with the redirect and state, not a form has expired page', async () => {
    const { browser } = await signedInWithIdToken();
    const page = await browser.open(logoutPath({ client_id: client.id, post_logout_redirect_uri: afterLogout, state: 'once' }));
    const fields = { ...formFields(page.text), decision: 'logout' };
    expect((await browser.submit(formAction(page.text), fields)).headers.location).toBe(`${afterLogout}?state=once`);
    const again = await browser.submit(formAction(page.text), fields);
    expect(again.status).toBe(303);
    expect(again.headers.location).toBe(`${afterLogout}?state=once`);
    // Its fields are checked as /logout checks them: an unregistered URI is still refused on our page.
    const tampered = await browser.submit(formAction(page.text), { ...fields, post_logout_redirect_uri: 'https://evil.example/' });
    expect(tampered.status).toBe(400);
    expect(tampered.headers.location).toBeUndefined();
  });

  it('answers a form POST with a 303 to the same request as a GET, so the SameSite=Lax session cookie comes along', async () => {
    const { browser, idToken } = await signedInWithIdToken();
    const fields = { id_token_hint: idToken, post_logout_redirect_uri: afterLogout, state: 'a b&c' };
    const posted = await browser.agent.post('/logout').type('form').send(fields).redirects(0);
    expect(posted.status).toBe(303);
    expect(posted.headers['cache-control']).toBe('no-store');
    const location = new URL(posted.headers.location!);
    expect(location.pathname).toBe('/logout');
    expect(Object.fromEntries(location.searchParams)).toEqual(fields);
    const page = await browser.open(`${location.pathname}${location.search}`);
    expect(page.text).toContain('Sign out?');
  });

  it('just redirects (with state) when nobody is signed in', async () => {
    const res = await request(context().app).get(logoutPath({ client_id: client.id, post_logout_redirect_uri: afterLogout, state: 's' })).redirects(0);
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe(`${afterLogout}?state=s`);
  });

  it('returns to exactly the registered URI when no state was sent, with no empty query added (§3)', async () => {
    const withQuery = 'https://rp.example/signed-out?tenant=a';
    const registered = await buildClient(context().runtime, { redirectUris: ['https://rp.example/cb'], oidc: { postLogoutRedirectUris: [afterLogout, withQuery] } });
    for (const uri of [afterLogout, withQuery]) {
      const res = await request(context().app).get(logoutPath({ client_id: registered.id, post_logout_redirect_uri: uri })).redirects(0);
      expect(res.status).toBe(303);
      expect(res.headers.location).toBe(uri);
    }
    const { browser, idToken } = await signedInWithIdToken();
    const page = await browser.open(logoutPath({ id_token_hint: idToken, post_logout_redirect_uri: afterLogout }));
    const done = await browser.submit(formAction(page.text), { ...formFields(page.text), decision: 'logout' });
    expect(done.status).toBe(303);
    expect(done.headers.location).toBe(afterLogout);
  });

  describe('back-channel logout', () => {
    it('signs logout tokens with typ logout+jwt, the event, the client as aud, the subject and no nonce', async () => {
      const oauth = createOAuthContext(context().runtime);
      const registered = await context().runtime.clients.find(client.id);
      const token = await logoutToken(oauth, registered!, user.id);
      expect(decodeProtectedHeader(token).typ).toBe('logout+jwt');
      const claims = decodeJwt(token);
      expect(claims).toMatchObject({ iss: context().config.issuer, aud: client.id, sub: String(user.id), events: { 'http://schemas.openid.net/event/backchannel-logout': {} } });
      expect(claims.jti).toBeTypeOf('string');
      expect(claims.nonce).toBeUndefined();
    });

    it('signs a client’s logout tokens with its ID Token algorithm: RS256 when it registered RS256, else ES256 (§2.4)', async () => {
      const { runtime } = context();
      const oauth = createOAuthContext(runtime);
      const jwks = createLocalJWKSet(await runtime.keys.jwks());
      const rsClient = await buildClient(runtime, { redirectUris: ['https://rs-logout.example/cb'], oidc: { idTokenSignedResponseAlg: 'RS256' } });
      for (const [id, alg] of [[rsClient.id, 'RS256'], [client.id, 'ES256']] as const) {
        const registered = await runtime.clients.find(id);
        const token = await logoutToken(oauth, registered!, user.id);
        const { protectedHeader, payload } = await jwtVerify(token, jwks, { issuer: context().config.issuer, audience: id, algorithms: [alg], typ: 'logout+jwt' });
        expect(protectedHeader.kid).toBe((await runtime.keys.signingKey(alg)).kid);
        expect(payload.sub).toBe(String(user.id));
      }
      // The background notification reads the algorithm from its own query of the client row.
      const receiver = await startLogoutReceiver();
      try {
        const target = await buildClient(runtime, {
          redirectUris: ['https://rs-notify.example/cb'],
          oidc: { backchannelLogoutUri: `${receiver.url}/bc`, idTokenSignedResponseAlg: 'RS256' },
        });
        await new ConsentStore(runtime.db).grant(user.id, target.id, ['openid']);
        await notifyBackchannelLogout({ ...oauth, backchannelLogoutAllowPrivate: true }, user.id);
        const received = receiver.received.find((entry) => entry.path === '/bc');
        expect(received).toBeDefined();
        expect(decodeProtectedHeader(received!.token).alg).toBe('RS256');
        await jwtVerify(received!.token, jwks, { audience: target.id, algorithms: ['RS256'] });
      } finally {
        receiver.close();
      }
    });

    it('counts each failed delivery as the security event backchannel_logout_failed (fieldgate_security_events_total)', async () => {
      const { runtime } = context();
      const [someone, target] = await Promise.all([
        buildUser(runtime),
        buildClient(runtime, { redirectUris: ['https://refused.example/cb'], oidc: { backchannelLogoutUri: 'http://127.0.0.1:9/bc' } }),
      ]);
      await new ConsentStore(runtime.db).grant(someone.id, target.id, ['openid']);
      const failures = async () => (await securityEventCounter.get()).values.find((v) => v.labels.event === 'backchannel_logout_failed')?.value ?? 0;
      const before = await failures();
      // A loopback receiver without the private-network opt-in is refused before any connection.
      await notifyBackchannelLogout({ ...createOAuthContext(runtime), backchannelLogoutAllowPrivate: false }, someone.id);
      expect(await failures()).toBe(before + 1);
    });

    it('POSTs the logout token as a form, and refuses private addresses unless allowed', async () => {
      const receiver = await startLogoutReceiver();
      try {
        const token = 'a.b.c';
        expect(await postLogoutToken(`${receiver.url}/bc`, token, { allowPrivate: true })).toBe(200);
        expect(receiver.received).toEqual([{ path: '/bc', token }]);
        // Without the private-network opt-in, the same address is refused before any connection.
        await expect(postLogoutToken(`${receiver.url}/bc`, token, { allowPrivate: false })).rejects.toThrow(/not a public address/);
        expect(receiver.received).toHaveLength(1);
      } finally {
        receiver.close();
      }
    });
  });
});
