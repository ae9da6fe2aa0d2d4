/**
 * The consent page: what it shows, Allow and Deny,
 * remembered consent, CSRF on the consent form, and the security events.
 */
import { afterEach, beforeAll, expect, it, vi } from 'vitest';
import request from 'supertest';
import { and, eq } from 'drizzle-orm';
import { consents } from '../../../src/db/schema.js';
import { SCOPES } from '../../../src/oauth/scopes.js';
import { ConsentStore } from '../../../src/oauth/stores/consents.js';
import { describeEachDatabase } from '../../support/runtime.js';
import {
  authorizeParams,
  authorizePath,
  Browser,
  buildClient,
  buildUser,
  formAction,
  formFields,
  pathOf,
  redirectParams,
  securityEvents,
  type TestClient,
} from '../../support/oauth.js';

describeEachDatabase('consent page', (context) => {
  let client: TestClient;

  beforeAll(async () => {
    client = await buildClient(context().runtime, { name: 'Shop "Helper" <b>' });
  });

  /** Signs a new user in and returns the consent page for `params`. */
  async function consentPageFor(params = authorizeParams(client)) {
    const user = await buildUser(context().runtime);
    const browser = new Browser(context().app);
    const login = await browser.open(authorizePath(params));
    const afterLogin = await browser.signIn(login, user.username, user.password);
    const page = await browser.open(pathOf(afterLogin.headers.location!));
    return { browser, page, user, params };
  }

  it('names the client, lists the requested scopes in plain words, and offers Allow and Deny', async () => {
    const { page, user } = await consentPageFor(authorizeParams(client, { scope: 'orders:read orders:write' }));
    expect(page.status).toBe(200);
    expect(page.text).toContain('Shop &quot;Helper&quot; &lt;b&gt;');
    expect(page.text).toContain(SCOPES['orders:read']);
    expect(page.text).toContain(SCOPES['orders:write']);
    expect(page.text).not.toContain(SCOPES['products:read']);
    expect(page.text).toContain(user.username);
    expect(page.text).toMatch(/<button[^>]*value="allow"[^>]*>Allow<\/button>/);
    expect(page.text).toMatch(/<button[^>]*value="deny"[^>]*>Deny<\/button>/);
    expect(formFields(page.text).csrf_token).toBeTruthy();
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(page.headers['referrer-policy']).toBe('no-referrer');
  });

  it('Allow answers 303 back to /authorize, which then redirects 302 to the client with a code', async () => {
    const { browser, page, params } = await consentPageFor();
    const allowed = await browser.decide(page, 'allow');
    expect(allowed.status).toBe(303);
    expect(allowed.headers.location).toMatch(new RegExp(`^${context().config.issuer}/authorize\\?`));
    const res = await browser.open(pathOf(allowed.headers.location!));
    expect(res.status).toBe(302);
    expect(redirectParams(res).get('code')).toBeTruthy();
    expect(redirectParams(res).get('state')).toBe(params.state);
  });

  it('Deny redirects (303, answering the POST) with access_denied, the state and iss — and no code', async () => {
    const { browser, page, params } = await consentPageFor();
    const res = await browser.decide(page, 'deny');
    expect(res.status).toBe(303);
    expect(res.headers.location!.startsWith(`${client.redirectUri}?`)).toBe(true);
    const query = redirectParams(res);
    expect(query.get('error')).toBe('access_denied');
    expect(query.get('error_description')).toBeTruthy();
    expect(query.get('state')).toBe(params.state);
    expect(query.get('iss')).toBe(context().config.issuer);
    expect(query.has('code')).toBe(false);
  });

  it('does not ask again for scopes already allowed, but asks for new ones', async () => {
    const { runtime, app } = context();
    const user = await buildUser(runtime);
    const browser = new Browser(app);
    await browser.authorize(authorizeParams(client, { scope: 'products:read' }), user);
    const [row] = await runtime.db.select().from(consents).where(and(eq(consents.userId, user.id), eq(consents.clientId, client.id)));
    expect(row?.scope).toBe('products:read');

    const same = await browser.open(authorizePath(authorizeParams(client, { scope: 'products:read' })));
    expect(same.status).toBe(302);

    const more = await browser.open(authorizePath(authorizeParams(client, { scope: 'products:read orders:read' })));
    expect(more.status).toBe(200);
    expect(more.text).toContain('name="decision"');
    await browser.decide(more, 'allow');
    const [updated] = await runtime.db.select().from(consents).where(and(eq(consents.userId, user.id), eq(consents.clientId, client.id)));
    expect(updated?.scope).toBe('orders:read products:read');
  });

  it('refuses the consent form without the CSRF token: no consent, no code (CSRF attack)', async () => {
    const { runtime } = context();
    const { browser, page, user } = await consentPageFor();
    const fields = formFields(page.text);
    const res = await browser.submit(formAction(page.text), { authorization_request: fields.authorization_request!, decision: 'allow' });
    expect(res.status).toBe(403);
    expect(res.headers.location).toBeUndefined();
    const rows = await runtime.db.select().from(consents).where(eq(consents.userId, user.id));
    expect(rows).toHaveLength(0);
  });

  it("refuses a CSRF token taken from another session (an attacker's own page)", async () => {
    const attacker = await consentPageFor();
    const victim = await consentPageFor();
    const res = await victim.browser.submit(formAction(victim.page.text), {
      ...formFields(victim.page.text),
      csrf_token: formFields(attacker.page.text).csrf_token!,
      decision: 'allow',
    });
    expect(res.status).toBe(403);
  });

  it('refuses the token of the pre-login form after sign-in (the session id changed)', async () => {
    const user = await buildUser(context().runtime);
    const browser = new Browser(context().app);
    const login = await browser.open(authorizePath(authorizeParams(client)));
    const loginToken = formFields(login.text).csrf_token!;
    const afterLogin = await browser.signIn(login, user.username, user.password);
    const page = await browser.open(pathOf(afterLogin.headers.location!));
    const res = await browser.submit(formAction(page.text), { ...formFields(page.text), csrf_token: loginToken, decision: 'allow' });
    expect(res.status).toBe(403);
  });

  it('re-validates the carried request: a tampered redirect_uri is refused on our own page', async () => {
    const { browser, page } = await consentPageFor();
    const fields = formFields(page.text);
    const tampered = new URLSearchParams(fields.authorization_request);
    tampered.set('redirect_uri', 'https://attacker.example/cb');
    const res = await browser.submit(formAction(page.text), { ...fields, authorization_request: tampered.toString(), decision: 'deny' });
    expect(res.status).toBe(400);
    expect(res.headers.location).toBeUndefined();
  });

  it('a decision other than allow or deny is a 400 page', async () => {
    const { browser, page } = await consentPageFor();
    const res = await browser.submit(formAction(page.text), { ...formFields(page.text), decision: 'maybe' });
    expect(res.status).toBe(400);
  });

  it('logs consent granted and denied with client and user ids', async () => {
    const granted = await consentPageFor();
    const allowed = await granted.browser.decide(granted.page, 'allow');
    await granted.browser.open(pathOf(allowed.headers.location!));
    const denied = await consentPageFor();
    await denied.browser.decide(denied.page, 'deny');
    const events = securityEvents(context().logs.lines);
    expect(events).toContainEqual(expect.objectContaining({ event: 'consent_granted', clientId: client.id, userId: granted.user.id }));
    expect(events).toContainEqual(expect.objectContaining({ event: 'consent_denied', clientId: client.id, userId: denied.user.id }));
    expect(events).toContainEqual(expect.objectContaining({ event: 'code_issued', clientId: client.id, userId: granted.user.id }));
  });
});

describeEachDatabase(
  'consent page of a self-registered client',
  (context) => {
    afterEach(() => {
      vi.restoreAllMocks();
    });

    /** A client registered at /register (RFC 7591): the consent form itself issues its code. */
    async function registeredClient(): Promise<TestClient> {
      const redirectUri = 'https://self-registered.example/cb';
      const res = await request(context().app)
        .post('/register')
        .send({ redirect_uris: [redirectUri], token_endpoint_auth_method: 'none', client_name: 'Agent' });
      expect(res.status).toBe(201);
      return { id: res.body.client_id, secret: undefined, redirectUri, redirectUris: [redirectUri], name: 'Agent', isPublic: true };
    }

    it('issues the code from the consent form', async () => {
      const client = await registeredClient();
      const user = await buildUser(context().runtime);
      const res = await new Browser(context().app).authorize(authorizeParams(client), user);
      expect(res.headers.location).toMatch(/^https:\/\/self-registered\.example\/cb\?code=/);
    });

    it('issues no code when the session ends between the form’s session check and the code (a sign-out racing Allow)', async () => {
      const client = await registeredClient();
      const user = await buildUser(context().runtime);
      const browser = new Browser(context().app);
      const login = await browser.open(authorizePath(authorizeParams(client)));
      const consent = await browser.open(pathOf((await browser.signIn(login, user.username, user.password)).headers.location!));
      expect(consent.text).toContain('name="decision"');
      // "Sign out everywhere" in another tab commits while this Allow is between its steps.
      const grant = ConsentStore.prototype.grant;
      vi.spyOn(ConsentStore.prototype, 'grant').mockImplementation(async function (this: ConsentStore, ...args) {
        await context().runtime.users.endSessions(user.id);
        return grant.apply(this, args);
      });
      const allowed = await browser.decide(consent, 'allow');
      expect(allowed.status).toBe(303);
      expect(allowed.headers.location).toMatch(new RegExp(`^${context().config.issuer}/authorize\\?`));
      expect((await browser.open(pathOf(allowed.headers.location!))).text).toContain('name="password"');
      expect(securityEvents(context().logs.lines, 'code_issued').filter((event) => event.userId === user.id)).toEqual([]);
    });
  },
  { REGISTRATION: 'open', REGISTRATION_RATE_LIMIT: '10000' },
);
