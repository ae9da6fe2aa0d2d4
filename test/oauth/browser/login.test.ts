/**
 * The login page and the browser session: form fields, CSRF, the session
 * cookie's flags, the 303 after the POST, no second sign-in, no account enumeration, page
 * security headers and escaping, and the security events.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { createTestRuntime, describeEachDatabase } from '../../support/runtime.js';
import { DATABASE_KINDS } from '../../support/databases.js';
import {
  authorizeParams,
  authorizePath,
  Browser,
  buildClient,
  buildUser,
  formAction,
  formFields,
  pathOf,
  securityEvents,
  type TestClient,
  type TestUser,
} from '../../support/oauth.js';

function setCookies(res: { headers: Record<string, unknown> }): string[] {
  const header = res.headers['set-cookie'];
  return Array.isArray(header) ? (header as string[]) : header ? [String(header)] : [];
}

function expectPageHeaders(res: request.Response): void {
  expect(res.headers['cache-control']).toBe('no-store');
  expect(res.headers['x-frame-options']).toBe('DENY');
  expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
  expect(res.headers['content-security-policy']).toContain("default-src 'none'");
  expect(res.headers['referrer-policy']).toBe('no-referrer');
  expect(res.headers['access-control-allow-origin']).toBeUndefined();
}

/** The attributes of the `<input>` named `name` on a page (a bare attribute maps to ''). */
function inputAttributes(page: string, name: string): Record<string, string> {
  const tag = new RegExp(`<input\\b[^>]*\\bname="${name}"[^>]*>`).exec(page)?.[0];
  if (!tag) throw new Error(`no input named ${name}`);
  return Object.fromEntries([...tag.slice(6, -1).matchAll(/([\w-]+)(?:="([^"]*)")?/g)].map((match) => [match[1]!, match[2] ?? '']));
}

const pageTitle = (page: string) => /<title>([^<]*)<\/title>/.exec(page)?.[1];

describeEachDatabase('login page', (context) => {
  let client: TestClient;
  let user: TestUser;

  beforeAll(async () => {
    client = await buildClient(context().runtime, { name: 'Acme <script>alert("x")</script> & Co' });
    user = await buildUser(context().runtime);
  });

  it('is an HTML form with username, password and a CSRF token, naming the client (escaped)', async () => {
    const res = await request(context().app).get(authorizePath(authorizeParams(client))).redirects(0);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    const fields = formFields(res.text);
    expect(Object.keys(fields)).toEqual(expect.arrayContaining(['username', 'password', 'csrf_token', 'authorization_request']));
    expect(fields.csrf_token).toMatch(/^[0-9a-f]+\.[0-9a-f]+$/);
    expect(res.text).toContain('Acme &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; Co');
    expect(res.text).not.toContain('<script>');
    expectPageHeaders(res);
    // An app may open sign-in in a popup and wait for the popup to come back to it: COOP same-origin would cut that link.
    expect(res.headers['cross-origin-opener-policy']).toBe('unsafe-none');
  });

  it('escapes attacker-controlled request parameters carried in the form', async () => {
    const res = await request(context().app)
      .get(authorizePath(authorizeParams(client, { state: '"><script>alert(1)</script>' })))
      .redirects(0);
    expect(res.text).not.toContain('<script>alert(1)');
    expect(formFields(res.text).authorization_request).toContain('state=%22%3E%3Cscript%3E');
  });

  it('sets a signed, HttpOnly, SameSite=Lax session cookie (not Secure on an http issuer)', async () => {
    const res = await request(context().app).get(authorizePath(authorizeParams(client))).redirects(0);
    const session = setCookies(res).find((c) => c.startsWith('fieldgate-session='));
    expect(session).toBeDefined();
    expect(session).toMatch(/HttpOnly/i);
    expect(session).toMatch(/SameSite=Lax/i);
    expect(session).not.toMatch(/;\s*Secure/i);
    expect(decodeURIComponent(session!.split(';')[0]!)).toMatch(/^fieldgate-session=s:/); // signed
  });

  it('signs in with 303 to /authorize, then the consent page; the session id changes at sign-in', async () => {
    const browser = new Browser(context().app);
    const page = await browser.open(authorizePath(authorizeParams(client)));
    const before = setCookies(page).find((c) => c.startsWith('fieldgate-session='))!.split(';')[0];
    const res = await browser.signIn(page, user.username, user.password);
    expect(res.status).toBe(303);
    expect(res.headers.location).toMatch(new RegExp(`^${context().config.issuer}/authorize\\?`));
    const after = setCookies(res).find((c) => c.startsWith('fieldgate-session='))!.split(';')[0];
    expect(after).not.toBe(before);
    const next = await browser.open(pathOf(res.headers.location!));
    expect(next.status).toBe(200);
    expect(next.text).toContain('name="decision"');
  });

  it('does not ask a signed-in user to sign in again', async () => {
    const browser = new Browser(context().app);
    await browser.authorize(authorizeParams(client), user);
    const again = await browser.open(authorizePath(authorizeParams(client)));
    expect(again.status).toBe(302); // consent given too: straight to the client with a code
    expect(new URL(again.headers.location!).searchParams.get('code')).toBeTruthy();
  });

  it('names its fields for password managers (autocomplete username, current-password), labelled by id, the username focused', async () => {
    const page = await new Browser(context().app).open(authorizePath(authorizeParams(client)));
    expect(pageTitle(page.text)).toBe('Sign in · Fieldgate');
    const username = inputAttributes(page.text, 'username');
    const password = inputAttributes(page.text, 'password');
    expect(username).toMatchObject({ id: 'username', autocomplete: 'username', autocapitalize: 'none', spellcheck: 'false', required: '', autofocus: '' });
    expect(password).toMatchObject({ id: 'password', type: 'password', autocomplete: 'current-password', required: '' });
    expect(password).not.toHaveProperty('autofocus');
    expect(page.text).toContain('<label for="username">');
    expect(page.text).toContain('<label for="password">');
    expect(page.text).toContain('<button type="submit">Sign in</button>'); // Enter submits the form
    expect(username).not.toHaveProperty('aria-invalid');
  });

  it('after a wrong password, says so in the title, announces the error and ties both fields to it, the password focused', async () => {
    const browser = new Browser(context().app);
    const page = await browser.open(authorizePath(authorizeParams(client)));
    const failed = await browser.signIn(page, user.username, 'not-the-password');
    expect(pageTitle(failed.text)).toBe('Sign-in failed · Fieldgate');
    expect(failed.text).toContain('<p class="alert" role="alert" id="form-error">The username or password is incorrect.</p>');
    const username = inputAttributes(failed.text, 'username');
    const password = inputAttributes(failed.text, 'password');
    expect(username).toMatchObject({ 'aria-invalid': 'true', 'aria-describedby': 'form-error', value: user.username });
    expect(username).not.toHaveProperty('autofocus');
    expect(password).toMatchObject({ 'aria-invalid': 'true', 'aria-describedby': 'form-error', autofocus: '' });
  });

  it('after an empty username, marks and focuses the username field', async () => {
    const browser = new Browser(context().app);
    const page = await browser.open(authorizePath(authorizeParams(client)));
    const failed = await browser.signIn(page, '', 'a-password');
    expect(failed.status).toBe(400);
    expect(inputAttributes(failed.text, 'username')).toMatchObject({ 'aria-invalid': 'true', 'aria-describedby': 'form-error', autofocus: '' });
    expect(inputAttributes(failed.text, 'password')).not.toHaveProperty('autofocus');
  });

  it('answers unknown user and wrong password with the same status and message', async () => {
    const browser = new Browser(context().app);
    const page = await browser.open(authorizePath(authorizeParams(client)));
    const wrongPassword = await browser.signIn(page, user.username, 'not-the-password');
    const unknownUser = await browser.signIn(page, 'nobody-by-this-name', 'not-the-password');
    expect(wrongPassword.status).toBe(401);
    expect(unknownUser.status).toBe(401);
    const message = (text: string) => /<p class="alert" role="alert"[^>]*>([^<]*)<\/p>/.exec(text)?.[1];
    expect(message(wrongPassword.text)).toBe('The username or password is incorrect.');
    expect(message(unknownUser.text)).toBe(message(wrongPassword.text));
    expect(wrongPassword.headers.location).toBeUndefined();
  });

  it('refuses a login POST without the CSRF token (403, no session)', async () => {
    const browser = new Browser(context().app);
    const page = await browser.open(authorizePath(authorizeParams(client)));
    const fields = formFields(page.text);
    const res = await browser.submit(formAction(page.text), { ...fields, csrf_token: '', username: user.username, password: user.password });
    expect(res.status).toBe(403);
    expect(res.headers.location).toBeUndefined();
    const forged = await browser.submit(formAction(page.text), {
      ...fields,
      csrf_token: fields.csrf_token!.replace(/^./, (c) => (c === 'a' ? 'b' : 'a')),
      username: user.username,
      password: user.password,
    });
    expect(forged.status).toBe(403);
  });

  describe('a stale copy of the form, from a browser signed in by now', () => {
    it('goes on with the request when another tab signed in first, instead of a form has expired page', async () => {
      const browser = new Browser(context().app);
      const params = authorizeParams(client, { scope: 'openid' });
      const first = await browser.open(authorizePath(params));
      const second = await browser.open(authorizePath(params));
      expect((await browser.signIn(first, user.username, user.password)).status).toBe(303);
      const res = await browser.signIn(second, user.username, user.password);
      expect(res.status).toBe(303);
      expect(res.headers['cache-control']).toBe('no-store');
      const location = new URL(res.headers.location!);
      expect(location.pathname).toBe('/authorize');
      expect(location.searchParams.get('state')).toBe(params.state);
      expect((await browser.open(pathOf(res.headers.location!))).text).toContain('name="decision"');
    });

    it('signs nobody in: a forged sign-in as another account leaves the signed-in user as they were', async () => {
      const [attacker, fresh] = await Promise.all([buildUser(context().runtime), buildClient(context().runtime)]);
      const browser = new Browser(context().app);
      const page = await browser.open(authorizePath(authorizeParams(fresh)));
      await browser.signIn(page, user.username, user.password);
      const forged = await browser.submit(formAction(page.text), { ...formFields(page.text), csrf_token: 'forged', username: attacker.username, password: attacker.password });
      expect(forged.status).toBe(303);
      expect(setCookies(forged).some((cookie) => cookie.startsWith('fieldgate-session='))).toBe(false);
      const consent = await browser.open(pathOf(forged.headers.location!));
      expect(consent.text).toContain(`Signed in as <strong>${user.username}</strong>`);
    });
  });

  it('refuses a login POST from a browser with no session cookie (login CSRF)', async () => {
    const page = await request(context().app).get(authorizePath(authorizeParams(client))).redirects(0);
    const res = await request(context().app)
      .post('/authorize/login')
      .type('form')
      .send({ ...formFields(page.text), username: user.username, password: user.password })
      .redirects(0);
    expect(res.status).toBe(403);
  });

  it('answers a non-form body with an HTML error page, not a stack trace', async () => {
    const res = await request(context().app).post('/authorize/login').send({ username: 'x' }).redirects(0);
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).not.toMatch(/at .*\.ts:\d+/);
  });

  it('refuses a login form body over the size limit with 413', async () => {
    const res = await request(context().app)
      .post('/authorize/login')
      .type('form')
      .send(`username=${'a'.repeat(20_000)}`)
      .redirects(0);
    expect(res.status).toBe(413);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
  });

  it('logs login success and failure as security events without secrets', async () => {
    const { logs } = context();
    const browser = new Browser(context().app);
    const page = await browser.open(authorizePath(authorizeParams(client)));
    await browser.signIn(page, user.username, 'wrong-password-123');
    const ok = await browser.signIn(page, user.username, user.password);
    const requestId = ok.headers['x-request-id'];
    const success = securityEvents(logs.lines, 'login_succeeded').find((e) => e.reqId === requestId);
    expect(success).toMatchObject({ event: 'login_succeeded', clientId: client.id, userId: user.id });
    const failures = securityEvents(logs.lines, 'login_failed');
    expect(failures.at(-1)).toMatchObject({ clientId: client.id, reason: 'bad_credentials' });
    expect(logs.text).not.toContain(user.password);
    expect(logs.text).not.toContain('wrong-password-123');
    expect(logs.text).not.toContain(formFields(page.text).csrf_token);
  });
});

describe('session cookie on an https issuer', () => {
  it.each(DATABASE_KINDS)('is Secure with the __Host- prefix [%s]', async (kind) => {
    const context = await createTestRuntime(kind, { ISSUER: 'https://auth.example' });
    try {
      const client = await buildClient(context.runtime);
      const res = await request(context.app).get(authorizePath(authorizeParams(client))).redirects(0);
      const cookies = setCookies(res);
      const session = cookies.find((c) => c.startsWith('__Host-fieldgate-session='));
      expect(session).toMatch(/;\s*Secure/i);
      expect(session).toMatch(/HttpOnly/i);
      expect(session).toMatch(/SameSite=Lax/i);
      expect(session).toMatch(/Path=\//);
      expect(cookies.find((c) => c.startsWith('__Host-fieldgate-csrf='))).toMatch(/;\s*Secure/i);
    } finally {
      await context.close();
    }
  });
});
