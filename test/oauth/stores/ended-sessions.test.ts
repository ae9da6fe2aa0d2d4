/**
 * Signed-out sessions stay signed out (RP-Initiated Logout 1.0 §2, Back-Channel Logout 1.0 §2): the session cookie is
 * stateless, so a copy kept from before a sign-out (stolen, or another tab's saved jar) must be refused wherever a
 * signed-in session is used — /authorize with and without prompt=none, the consent form, /account, /logout, /device —
 * on every instance sharing the database, while the browser can sign in afresh.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import request from 'supertest';
import { count, eq } from 'drizzle-orm';
import { decodeJwt } from 'jose';
import { endedSessions } from '../../../src/db/schema.js';
import { EndedSessionStore } from '../../../src/oauth/stores/ended-sessions.js';
import { createApp } from '../../../src/app.js';
import { createLogger } from '../../../src/logger.js';
import { openRuntime } from '../../../src/runtime.js';
import { describeEachDatabase } from '../../support/runtime.js';
import { startLogoutReceiver, type LogoutReceiver } from '../../support/logout-receiver.js';
import {
  authorizeParams,
  authorizePath,
  Browser,
  buildClient,
  buildUser,
  formAction,
  formFields,
  formFor,
  pathOf,
  redirectParams,
  securityEvents,
  tokenRequest,
  type AuthorizeParams,
  type TestClient,
  type TestUser,
} from '../../support/oauth.js';
import type { Express } from 'express';

/** The cookies `browser` holds now, as a Cookie header: the copy an attacker or another tab keeps. */
function cookiesOf(browser: Browser): string {
  return browser.agent.jar.getCookies({ domain: '127.0.0.1', path: '/', secure: false, script: false }).toValueString();
}

describeEachDatabase(
  'ended sessions',
  (context) => {
    let client: TestClient;
    let user: TestUser;
    let receiver: LogoutReceiver;

    beforeAll(async () => {
      receiver = await startLogoutReceiver();
      client = await buildClient(context().runtime, { redirectUris: ['https://rp.example/cb'], oidc: { backchannelLogoutUri: `${receiver.url}/bc` } });
      user = await buildUser(context().runtime);
    });

    afterAll(() => receiver?.close());

    const params = (overrides: AuthorizeParams = {}) => authorizeParams(client, { scope: 'openid products:read', ...overrides });

    /** A browser signed in as `who` that has allowed the client, which redeemed its code: it took part in the session. */
    async function signedIn(who: TestUser = user): Promise<Browser> {
      const browser = new Browser(context().app);
      const request = params();
      const res = await browser.authorize(request, who);
      const code = redirectParams(res).get('code');
      expect(code).toBeTruthy();
      const tokens = await tokenRequest(context().app, { grant_type: 'authorization_code', code: code!, redirect_uri: client.redirectUri, code_verifier: request.verifier }, client);
      expect(tokens.status).toBe(200);
      return browser;
    }

    async function logOut(browser: Browser) {
      const page = await browser.open(`/logout?client_id=${client.id}`);
      expect(page.text).toContain('Sign out?');
      const done = await browser.submit(formAction(page.text), { ...formFields(page.text), decision: 'logout' });
      expect(done.status).toBe(200);
      expect(done.text).toContain('You are signed out');
      return done;
    }

    const withCookies = (cookies: string, path: string, app: Express = context().app) => request(app).get(path).set('Cookie', cookies).redirects(0);
    const silently = (cookies: string, app?: Express) => withCookies(cookies, authorizePath(params({ prompt: 'none' })), app);

    it('refuses a copy of the cookie kept from before RP-initiated logout: login_required with prompt=none, the login page without', async () => {
      const browser = await signedIn();
      const copy = cookiesOf(browser);
      // Control: the copy is as good as the original while the session lasts.
      expect(redirectParams(await silently(copy)).get('code')).toBeTruthy();

      await logOut(browser);
      const silent = await silently(copy);
      expect(silent.status).toBe(302);
      expect(redirectParams(silent).get('error')).toBe('login_required');
      expect(redirectParams(silent).get('code')).toBeNull();
      for (const prompt of [undefined, 'consent']) {
        const page = await withCookies(copy, authorizePath(params(prompt ? { prompt } : {})));
        expect(page.status, prompt).toBe(200);
        expect(page.text, prompt).toContain('name="password"');
      }
    });

    it('treats the copy as signed out on /account, /logout, /device and the consent form too', async () => {
      const browser = await signedIn();
      // A consent page shown before the logout, its form kept with the copy of the cookies.
      const consent = await browser.open(authorizePath(params({ prompt: 'consent' })));
      expect(consent.text).toContain('name="decision"');
      const copy = cookiesOf(browser);
      // Control: the account page knows the copy.
      expect((await withCookies(copy, '/account')).text).toContain('Connected apps');

      await logOut(browser);
      expect((await withCookies(copy, '/account')).text).toContain('Sign in to your account');
      const logoutPage = await withCookies(copy, `/logout?client_id=${client.id}`);
      expect(logoutPage.text).not.toContain('Sign out?');
      expect(logoutPage.text).toContain('You are signed out');
      expect((await withCookies(copy, '/device')).text).toContain('name="password"');
      // Deny from a signed-in session is access_denied at the client; from a signed-out one, back to /authorize.
      const decided = await request(context().app).post(pathOf(formAction(consent.text))).set('Cookie', copy).type('form').send({ ...formFields(consent.text), decision: 'deny' });
      expect(decided.status).toBe(303);
      expect(decided.headers.location).toMatch(new RegExp(`^${context().config.issuer}/authorize\\?`));
    });

    it('refuses at /token a code the session issued before it was logged out, and tells no client it never reached', async () => {
      const someone = await buildUser(context().runtime);
      const browser = new Browser(context().app);
      const request = params();
      const code = redirectParams(await browser.authorize(request, someone)).get('code')!;
      await logOut(browser);
      const tokens = await tokenRequest(context().app, { grant_type: 'authorization_code', code, redirect_uri: client.redirectUri, code_verifier: request.verifier }, client);
      expect([tokens.status, tokens.body]).toEqual([400, { error: 'invalid_grant', error_description: 'the authorization behind this code has been revoked' }]);
      await logoutTokensFor(someone, 0);
    });

    it('lets the same browser sign in afresh after logout', async () => {
      const browser = await signedIn();
      await logOut(browser);
      expect(redirectParams(await browser.open(authorizePath(params({ prompt: 'none' })))).get('error')).toBe('login_required');
      const res = await browser.authorize(params(), user);
      expect(redirectParams(res).get('code')).toBeTruthy();
      expect(redirectParams(await browser.open(authorizePath(params({ prompt: 'none' })))).get('code')).toBeTruthy();
      expect((await browser.open('/account')).text).toContain('Connected apps');
    });

    it('ends one session once when it is logged out twice at the same moment: both succeed, the client is told once', async () => {
      const someone = await buildUser(context().runtime);
      const browser = await signedIn(someone);
      const copy = cookiesOf(browser);
      const page = await browser.open(`/logout?client_id=${client.id}`);
      const fields = { ...formFields(page.text), decision: 'logout' };
      receiver.received.length = 0;
      const answers = await Promise.all([browser.submit(formAction(page.text), fields), browser.submit(formAction(page.text), fields)]);
      expect(answers.map((res) => res.status)).toEqual([200, 200]);
      for (const res of answers) expect(res.text).toContain('You are signed out');
      expect(securityEvents(context().logs.lines, 'logout').filter((event) => event.userId === someone.id)).toHaveLength(1);
      await expect.poll(() => receiver.received.length, { timeout: 10_000 }).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(receiver.received).toHaveLength(1);
      expect(decodeJwt(receiver.received[0]!.token).sub).toBe(String(someone.id));
      expect(redirectParams(await silently(copy)).get('error')).toBe('login_required');
    });

    /** The back-channel logout tokens the client received for `who`, once `count` arrived; none expected with 0. */
    async function logoutTokensFor(who: TestUser, count: number) {
      const forUser = () => receiver.received.map((entry) => decodeJwt(entry.token)).filter((claims) => claims.sub === String(who.id));
      if (count > 0) await expect.poll(() => forUser().length, { timeout: 10_000 }).toBe(count);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(forUser()).toHaveLength(count);
      return forUser();
    }

    it('ends the session that “Switch account” leaves, and tells its clients', async () => {
      const who = await buildUser(context().runtime);
      const browser = await signedIn(who);
      const consent = await browser.open(authorizePath(params({ prompt: 'consent' })));
      const copy = cookiesOf(browser);
      const form = formFor(consent.text, 'switch-account');
      const switched = await browser.submit(form.action, form.fields);
      expect(switched.status).toBe(303);
      expect(switched.headers.location).toMatch(new RegExp(`^${context().config.issuer}/authorize\\?`));
      expect(redirectParams(await silently(copy)).get('error')).toBe('login_required');
      const [token] = await logoutTokensFor(who, 1);
      expect(token!.events).toEqual({ 'http://schemas.openid.net/event/backchannel-logout': {} });
      expect(securityEvents(context().logs.lines, 'logout').filter((event) => event.userId === who.id)).toEqual([
        expect.objectContaining({ reason: 'switch_account', clientId: client.id }),
      ]);
    });

    it('ends the session another account replaces at sign-in and tells its clients, but not one the same user signs in over again', async () => {
      const [first, other] = await Promise.all([buildUser(context().runtime), buildUser(context().runtime)]);
      const browser = await signedIn(first);
      const previousUser = cookiesOf(browser);
      const res = await browser.authorize(params({ prompt: 'login' }), other);
      expect(redirectParams(res).get('code')).toBeTruthy();
      expect(redirectParams(await silently(previousUser)).get('error')).toBe('login_required');
      await logoutTokensFor(first, 1);

      // prompt=login by the same user: nobody signed out, so the earlier cookie still works and no client is told.
      const sameUser = cookiesOf(browser);
      expect(redirectParams(await browser.authorize(params({ prompt: 'login' }), other)).get('code')).toBeTruthy();
      expect(redirectParams(await silently(sameUser)).get('code')).toBeTruthy();
      await logoutTokensFor(other, 0);
    });

    it('tells the clients when another account signs in over a session on /account or /device', async () => {
      for (const [page, login] of [['/account', '/account/login'], ['/device', '/device/login']] as const) {
        const [first, other] = await Promise.all([buildUser(context().runtime), buildUser(context().runtime)]);
        const browser = await signedIn(first);
        // A signed-in page shows no sign-in form, but its CSRF token is the session's, good for the sign-in form too
        // (another tab, or the next user of a shared computer).
        const { csrf_token } = formFields((await browser.open(page)).text);
        expect(csrf_token, page).toBeTruthy();
        const answer = await browser.submit(`${context().config.issuer}${login}`, { csrf_token: csrf_token!, username: other.username, password: other.password });
        expect(answer.status, page).toBe(303);
        await logoutTokensFor(first, 1);
        expect((await browser.open(page)).text, page).toContain(other.username);
      }
    });

    it('tells the clients when “Sign out everywhere” ends the sessions: a token for the user, without a sid', async () => {
      const who = await buildUser(context().runtime);
      const browser = await signedIn(who);
      const page = await browser.open('/account');
      const form = formFor(page.text, '/account/sign-out-everywhere');
      expect((await browser.submit(form.action, form.fields)).status).toBe(303);
      const [token] = await logoutTokensFor(who, 1);
      expect(token!.sid).toBeUndefined();
    });

    it('keeps the session id when the same user signs in again, so a later logout also ends copies from before it', async () => {
      const who = await buildUser(context().runtime);
      const browser = await signedIn(who);
      const beforeReauthentication = cookiesOf(browser);
      for (const again of [params({ prompt: 'login' }), params({ max_age: '0' })]) {
        expect(redirectParams(await browser.authorize(again, who)).get('code')).toBeTruthy();
      }
      /** The session id inside the signed cookie (`s:<base64url JSON>.<signature>`). */
      const sid = (cookies: string): string => {
        const value = /(?:^|;\s*)fieldgate-session=([^;]+)/.exec(cookies)![1]!;
        return JSON.parse(Buffer.from(decodeURIComponent(value).replace(/^s:/, '').split('.')[0]!, 'base64url').toString()).sid;
      };
      expect(sid(cookiesOf(browser))).toBe(sid(beforeReauthentication));
      await logOut(browser);
      expect(redirectParams(await silently(beforeReauthentication)).get('error')).toBe('login_required');
      expect((await withCookies(beforeReauthentication, '/account')).text).toContain('Sign in to your account');

      // Signing in over the ended copy itself gives a new id, never the ended one (which would sign out at once).
      const replay = new Browser(context().app);
      replay.agent.jar.setCookies(beforeReauthentication.split('; ').map((cookie) => `${cookie}; Path=/`), '127.0.0.1', '/');
      expect(redirectParams(await replay.authorize(params(), who)).get('code')).toBeTruthy();
      expect(sid(cookiesOf(replay))).not.toBe(sid(beforeReauthentication));
      expect(redirectParams(await silently(cookiesOf(replay))).get('code')).toBeTruthy();
    });

    it('refuses a copy kept from before “Sign out everywhere” as well, /device included', async () => {
      const browser = await signedIn(await buildUser(context().runtime));
      const copy = cookiesOf(browser);
      const page = await browser.open('/account');
      const form = formFor(page.text, '/account/sign-out-everywhere');
      expect((await browser.submit(form.action, form.fields)).status).toBe(303);
      expect(redirectParams(await silently(copy)).get('error')).toBe('login_required');
      expect((await withCookies(copy, '/account')).text).toContain('Sign in to your account');
      expect((await withCookies(copy, '/device')).text).toContain('name="password"');
    });

    it('refuses a session logged out on one instance on another instance sharing the database', async () => {
      const { kind, testDatabase, config } = context();
      if (kind !== 'postgres') return; // PGlite is one process's database; a second instance needs PostgreSQL
      const second = await openRuntime(config, createLogger('silent'), await testDatabase.open());
      try {
        const otherApp = createApp(second);
        const browser = await signedIn();
        const copy = cookiesOf(browser);
        expect(redirectParams(await silently(copy, otherApp)).get('code')).toBeTruthy();
        await logOut(browser);
        expect(redirectParams(await silently(copy, otherApp)).get('error')).toBe('login_required');
        expect((await withCookies(copy, '/account', otherApp)).text).toContain('Sign in to your account');

        // And the other way round: logged out on the second instance, refused on the first.
        const elsewhere = new Browser(otherApp);
        expect(redirectParams(await elsewhere.authorize(params(), user)).get('code')).toBeTruthy();
        const elsewhereCopy = cookiesOf(elsewhere);
        await logOut(elsewhere);
        expect(redirectParams(await silently(elsewhereCopy)).get('error')).toBe('login_required');
      } finally {
        await second.close();
      }
    });

    it('records one session as ended once, however many times and however concurrently it is ended', async () => {
      const { runtime } = context();
      const ended = new EndedSessionStore(runtime.db);
      const expiresAt = Math.floor(Date.now() / 1000) + 3600;
      const results = await Promise.all(Array.from({ length: 20 }, () => ended.end('concurrent-sid', expiresAt)));
      expect(results.filter(Boolean)).toHaveLength(1);
      expect(await ended.end('concurrent-sid', expiresAt)).toBe(false);
      const [row] = await runtime.db.select({ n: count() }).from(endedSessions).where(eq(endedSessions.sid, 'concurrent-sid'));
      expect(row?.n).toBe(1);
    });
  },
  { BACKCHANNEL_LOGOUT_ALLOW_PRIVATE: 'true' },
);
