/**
 * The browser session cookie: signed, so a forged or edited cookie is no session;
 * bounded in time by its own expiry, whatever the browser keeps.
 */
import { afterEach, beforeAll, expect, it, vi } from 'vitest';
import { createHmac } from 'node:crypto';
import request from 'supertest';
import { SESSION_TTL_SECONDS } from '../../../src/oauth/browser/session.js';
import { describeEachDatabase } from '../../support/runtime.js';
import { authorizeParams, authorizePath, Browser, buildClient, buildUser, type TestClient, type TestUser } from '../../support/oauth.js';

/** A cookie value in cookie-parser's signed format: `s:<value>.<base64 HMAC-SHA-256>`. */
function signed(value: string, secret: string): string {
  const mac = createHmac('sha256', secret).update(value).digest('base64').replace(/=+$/, '');
  return encodeURIComponent(`s:${value}.${mac}`);
}

function sessionValue(session: object): string {
  return Buffer.from(JSON.stringify(session)).toString('base64url');
}

describeEachDatabase('browser session', (context) => {
  let client: TestClient;
  let user: TestUser;

  beforeAll(async () => {
    client = await buildClient(context().runtime);
    user = await buildUser(context().runtime);
    // Consent given once, so a valid session for `user` goes straight to the client.
    await new Browser(context().app).authorize(authorizeParams(client), user);
  });

  const now = () => Math.floor(Date.now() / 1000);
  const open = (cookie: string) =>
    request(context().app).get(authorizePath(authorizeParams(client))).set('Cookie', `fieldgate-session=${cookie}`).redirects(0);

  it('a correctly signed session for the user is accepted (control)', async () => {
    const cookie = signed(sessionValue({ sid: 'abc', userId: user.id, authTime: now(), expiresAt: now() + 60 }), context().runtime.sessionSecret);
    expect((await open(cookie)).status).toBe(302);
  });

  it('a session forged without the key is ignored: the login page is shown', async () => {
    const cookie = signed(sessionValue({ sid: 'abc', userId: user.id, authTime: now(), expiresAt: now() + 60 }), 'guessed-key');
    const res = await open(cookie);
    expect(res.status).toBe(200);
    expect(res.text).toContain('name="password"');
  });

  it('an unsigned session is ignored', async () => {
    const res = await open(encodeURIComponent(sessionValue({ sid: 'abc', userId: user.id, expiresAt: now() + 60 })));
    expect(res.status).toBe(200);
  });

  it('an expired session is ignored even if the browser still sends it', async () => {
    const cookie = signed(sessionValue({ sid: 'abc', userId: user.id, authTime: now() - 2 * SESSION_TTL_SECONDS, expiresAt: now() - 1 }), context().runtime.sessionSecret);
    const res = await open(cookie);
    expect(res.status).toBe(200);
    expect(res.text).toContain('name="password"');
  });

  it('garbage in the cookie is no session, not an error', async () => {
    const cookie = signed('not-json', context().runtime.sessionSecret);
    expect((await open(cookie)).status).toBe(200);
  });

  it('a session whose account was deleted reads as signed out', async () => {
    const gone = await buildUser(context().runtime);
    const cookie = signed(sessionValue({ sid: 'x', userId: 987654, authTime: now(), expiresAt: now() + 60 }), context().runtime.sessionSecret);
    expect(gone.id).not.toBe(987654);
    expect((await open(cookie)).status).toBe(200);
  });

  afterEach(() => vi.useRealTimers());

  it('a session accepted before is refused once it expires, by the clock of each request', async () => {
    const cookie = signed(sessionValue({ sid: 'expiring', userId: user.id, authTime: now(), expiresAt: now() + 30 }), context().runtime.sessionSecret);
    expect((await open(cookie)).status).toBe(302);
    expect((await open(cookie)).status).toBe(302);
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 31_000 });
    const res = await open(cookie);
    expect(res.status).toBe(200);
    expect(res.text).toContain('name="password"');
  });

  it('the signature of a session accepted before does not carry over to another value', async () => {
    const secret = context().runtime.sessionSecret;
    const value = sessionValue({ sid: 'kept', userId: user.id, authTime: now(), expiresAt: now() + 60 });
    const cookie = signed(value, secret);
    expect((await open(cookie)).status).toBe(302);
    const mac = decodeURIComponent(cookie).split('.').pop()!;
    const other = sessionValue({ sid: 'kept', userId: user.id + 1, authTime: now(), expiresAt: now() + 60 });
    expect((await open(encodeURIComponent(`s:${other}.${mac}`))).status).toBe(200);
    // Nor does the value without its signature, or with the prefix alone.
    expect((await open(encodeURIComponent(value))).status).toBe(200);
    expect((await open(encodeURIComponent(`s:${value}`))).status).toBe(200);
    expect((await open(cookie)).status).toBe(302);
  });
});
