/**
 * The OpenID `sid` (Back-Channel Logout 1.0 §2.4, Front-Channel Logout 1.0 §3): ID Tokens carry one per browser session
 * and client, refreshed ID Tokens keep it, and when that session signs out every client's logout token carries the same
 * value, so the client ends that session only; "Sign out everywhere" names none, except to clients that require one.
 */
import { startLogoutReceiver, type LogoutReceiver } from '../../support/logout-receiver.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { createLocalJWKSet, decodeJwt, jwtVerify } from 'jose';
import { describeEachDatabase } from '../../support/runtime.js';
import { SessionIds } from '../../../src/oauth/oidc/session-id.js';
import { basic, Browser, buildClient, buildUser, codeFlowTokens, formAction, formFields, formFor, type TestClient, type TestUser } from '../../support/oauth.js';

const SID = /^[A-Za-z0-9_-]{43}$/;

describeEachDatabase(
  'OpenID session ids',
  (context) => {
    let receiver: LogoutReceiver;
    let receiverUrl: string;
    let withSession: TestClient;
    let withoutSession: TestClient;
    let user: TestUser;

    beforeAll(async () => {
      receiver = await startLogoutReceiver();
      receiverUrl = receiver.url;
      const { runtime } = context();
      [withSession, withoutSession, user] = await Promise.all([
        buildClient(runtime, { redirectUris: ['https://sid.example/cb'], oidc: { backchannelLogoutUri: `${receiverUrl}/with`, backchannelLogoutSessionRequired: true, subjectType: 'pairwise' } }),
        buildClient(runtime, { redirectUris: ['https://nosid.example/cb'], oidc: { backchannelLogoutUri: `${receiverUrl}/without` } }),
        buildUser(runtime),
      ]);
    });

    afterAll(() => {
      receiver?.close();
    });

    async function codeFlow(browser: Browser, client: TestClient) {
      const token = await codeFlowTokens(context().app, browser, client, user, { scope: 'openid offline_access' });
      expect(token.status).toBe(200);
      return token.body as { id_token: string; refresh_token: string };
    }

    async function signOut(browser: Browser) {
      const page = await browser.open(`/logout?client_id=${withSession.id}`);
      const done = await browser.submit(formAction(page.text), { ...formFields(page.text), decision: 'logout' });
      expect(done.status).toBe(200);
    }

    it('puts a per-client sid in ID Tokens, keeps it on refresh, and changes it with a new sign-in', async () => {
      const browser = new Browser(context().app);
      const first = await codeFlow(browser, withSession);
      const sid = decodeJwt(first.id_token).sid as string;
      expect(sid).toMatch(SID);
      // Another code in the same session: the same sid; another client: another one (no correlation through sid).
      expect(decodeJwt((await codeFlow(browser, withSession)).id_token).sid).toBe(sid);
      const otherSid = decodeJwt((await codeFlow(browser, withoutSession)).id_token).sid;
      expect(otherSid).toMatch(SID);
      expect(otherSid).not.toBe(sid);
      // It is not the cookie's own session id.
      const cookies = (browser.agent as unknown as { jar: { getCookies(access: object): { name: string; value: string }[] } }).jar.getCookies({ domain: '127.0.0.1', path: '/', secure: false, script: false });
      const session = cookies.find((c) => c.name === 'fieldgate-session');
      const cookieSid = JSON.parse(Buffer.from(decodeURIComponent(session!.value).slice(2).split('.')[0]!, 'base64url').toString()).sid as string;
      expect(cookieSid).toMatch(/^[A-Za-z0-9_-]{22}$/);
      expect(sid).not.toContain(cookieSid);

      const refreshed = await request(context().app)
        .post('/token')
        .set('Authorization', basic(withSession.id, withSession.secret!))
        .type('form')
        .send({ grant_type: 'refresh_token', refresh_token: first.refresh_token });
      expect(decodeJwt(refreshed.body.id_token).sid).toBe(sid);

      await signOut(browser);
      const again = await codeFlow(browser, withSession);
      expect(decodeJwt(again.id_token).sid).toMatch(SID);
      expect(decodeJwt(again.id_token).sid).not.toBe(sid);
    });

    it('gives every one of 10 concurrent codes of one session the same sid', async () => {
      const browser = new Browser(context().app);
      const sid = decodeJwt((await codeFlow(browser, withSession)).id_token).sid;
      const tokens = await Promise.all(Array.from({ length: 10 }, () => codeFlow(browser, withSession)));
      for (const token of tokens) expect(decodeJwt(token.id_token).sid).toBe(sid);
    });

    /** The logout tokens the two clients received once both arrived, verified. */
    async function logoutTokens() {
      await expect.poll(() => receiver.received.length, { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
      const jwks = createLocalJWKSet((await request(context().app).get('/.well-known/jwks.json')).body);
      const byPath = Object.fromEntries(receiver.received.map((entry) => [entry.path, entry.token]));
      const verify = async (path: string, client: TestClient) =>
        (await jwtVerify(byPath[path]!, jwks, { issuer: context().config.issuer, audience: client.id, typ: 'logout+jwt' })).payload;
      return { required: await verify('/with', withSession), optional: await verify('/without', withoutSession) };
    }

    it('sends every client the sid of its ID Tokens of the session that signed out, so it ends that session only (§2.4)', async () => {
      const browser = new Browser(context().app);
      const sid = decodeJwt((await codeFlow(browser, withSession)).id_token).sid;
      const idToken = (await codeFlow(browser, withSession)).id_token;
      const otherSid = decodeJwt((await codeFlow(browser, withoutSession)).id_token).sid;
      receiver.received.length = 0;
      await signOut(browser);
      const { required, optional } = await logoutTokens();
      expect(required.sid).toBe(sid);
      expect(required.sub).toBe(decodeJwt(idToken).sub);
      // Without a sid the client would end the user's sessions on every device; it did not require one, but may get it.
      expect(optional.sid).toBe(otherSid);
      expect(optional.sub).toBe(String(user.id));
    });

    it('tells only the clients that took part in the session that ended; “Sign out everywhere” tells every allowed one', async () => {
      const elsewhere = await buildClient(context().runtime, { redirectUris: ['https://elsewhere.example/cb'], oidc: { backchannelLogoutUri: `${receiverUrl}/elsewhere` } });
      // The user allowed `elsewhere` in another browser; this one signs in to the two others only.
      const other = new Browser(context().app);
      await codeFlow(other, elsewhere);
      const browser = new Browser(context().app);
      await codeFlow(browser, withSession);
      await codeFlow(browser, withoutSession);
      receiver.received.length = 0;
      await signOut(browser);
      await logoutTokens();
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(receiver.received.map((entry) => entry.path).sort()).toEqual(['/with', '/without']);

      receiver.received.length = 0;
      const form = formFor((await other.open('/account')).text, '/account/sign-out-everywhere');
      expect((await other.submit(form.action, form.fields)).status).toBe(303);
      await expect.poll(() => receiver.received.map((entry) => entry.path).sort(), { timeout: 10_000 }).toEqual(['/elsewhere', '/with', '/without']);
      const [everywhere] = receiver.received.filter((entry) => entry.path === '/elsewhere');
      expect(decodeJwt(everywhere!.token).sid).toBeUndefined();
    });

    it('after “Sign out everywhere”, sends no sid (all sessions) except to a client that requires one', async () => {
      const browser = new Browser(context().app);
      const sid = decodeJwt((await codeFlow(browser, withSession)).id_token).sid;
      await codeFlow(browser, withoutSession);
      receiver.received.length = 0;
      const form = formFor((await browser.open('/account')).text, '/account/sign-out-everywhere');
      expect((await browser.submit(form.action, form.fields)).status).toBe(303);
      const { required, optional } = await logoutTokens();
      expect(required.sid).toBe(sid);
      expect(optional.sid).toBeUndefined();
      expect(optional.sub).toBe(String(user.id));
    });

    it('after a password change on /account, tells every allowed client as Sign out everywhere does', async () => {
      const changer = await buildUser(context().runtime);
      const browser = new Browser(context().app);
      const flow = async (client: TestClient) => (await codeFlowTokens(context().app, browser, client, changer, { scope: 'openid' })).body as { id_token: string };
      const sid = decodeJwt((await flow(withSession)).id_token).sid;
      await flow(withoutSession);
      receiver.received.length = 0;
      const form = formFor((await browser.open('/account')).text, '/account/password');
      const changed = await browser.submit(form.action, { ...form.fields, current_password: changer.password, new_password: 'a-changed-password' });
      expect(changed.headers.location).toContain('notice=password');
      const { required, optional } = await logoutTokens();
      expect(required.sid).toBe(sid);
      expect(optional.sid).toBeUndefined();
      expect(optional.sub).toBe(String(changer.id));
    });

    it('advertises backchannel_logout_session_supported and sid among the claims', async () => {
      const res = await request(context().app).get('/.well-known/openid-configuration');
      expect(res.body.backchannel_logout_session_supported).toBe(true);
      expect(res.body.claims_supported).toContain('sid');
    });

    it('lets the store set and clear backchannel_logout_session_required', async () => {
      const { runtime } = context();
      const client = await buildClient(runtime, { oidc: { backchannelLogoutSessionRequired: true } });
      expect((await runtime.clients.list()).find((c) => c.client_id === client.id)?.backchannel_logout_session_required).toBe(true);
      expect((await runtime.clients.update(client.id, { oidc: { backchannelLogoutSessionRequired: false } }))?.backchannel_logout_session_required).toBeUndefined();
    });
  },
  { BACKCHANNEL_LOGOUT_ALLOW_PRIVATE: 'true' },
);

describe('OpenID sid of a browser session', () => {
  const ids = new SessionIds('session secret');

  it('is the same for every authorization of one client in one browser session', () => {
    expect(ids.forClient('client-a', 'browser-1')).toBe(ids.forClient('client-a', 'browser-1'));
  });

  it('differs per client and per browser session, and reveals neither id', () => {
    const sid = ids.forClient('client-a', 'browser-1');
    expect(ids.forClient('client-b', 'browser-1')).not.toBe(sid);
    expect(ids.forClient('client-a', 'browser-2')).not.toBe(sid);
    expect(sid).not.toContain('browser-1');
    expect(sid).not.toContain('client-a');
  });

  it('depends on the session secret', () => {
    expect(new SessionIds('another secret').forClient('client-a', 'browser-1')).not.toBe(ids.forClient('client-a', 'browser-1'));
  });

  it('is what a fresh instance computes (another instance, or after a restart)', () => {
    expect(new SessionIds('session secret').forClient('client-a', 'browser-1')).toBe(ids.forClient('client-a', 'browser-1'));
  });
});
