/**
 * The account pages: Connected apps (scopes, last use) and Revoke (refresh tokens at once,
 * access tokens through the revocation check), Sign out everywhere (a per-user session epoch
 * voids every stateless session cookie), change password, and CSRF on every form.
 */
import { beforeAll, expect, it } from 'vitest';
import request from 'supertest';
import { describeEachDatabase } from '../../support/runtime.js';
import { authorizeParams, authorizePath, basic, Browser, codeFlowTokens, buildClient, buildUser, formFields, pathOf, redirectParams, type TestClient, type TestUser } from '../../support/oauth.js';

/** The attributes of the `<input>` named `name` on a page (a bare attribute maps to ''). */
function inputAttributes(page: string, name: string): Record<string, string> {
  const tag = new RegExp(`<input\\b[^>]*\\bname="${name}"[^>]*>`).exec(page)?.[0];
  if (!tag) throw new Error(`no input named ${name}`);
  return Object.fromEntries([...tag.slice(6, -1).matchAll(/([\w-]+)(?:="([^"]*)")?/g)].map((match) => [match[1]!, match[2] ?? '']));
}

const pageTitle = (page: string) => /<title>([^<]*)<\/title>/.exec(page)?.[1];

describeEachDatabase('account pages', (context) => {
  let client: TestClient;

  beforeAll(async () => {
    client = await buildClient(context().runtime, { name: 'Shop <App>' });
  });

  /** Signs `user` in to the client and returns the browser and the tokens of the code exchange. */
  async function connect(user: TestUser) {
    const browser = new Browser(context().app);
    const tokens = await codeFlowTokens(context().app, browser, client, user, { scope: 'openid offline_access products:read' });
    expect(tokens.status).toBe(200);
    return { browser, tokens: tokens.body as { access_token: string; refresh_token: string } };
  }

  const refresh = (refreshToken: string) =>
    request(context().app).post('/token').set('Authorization', basic(client.id, client.secret!)).type('form').send({ grant_type: 'refresh_token', refresh_token: refreshToken });

  /** The form on the account page whose action ends with `path`. */
  function form(html: string, path: string): Record<string, string> {
    const match = new RegExp(`<form method="post" action="[^"]*${path}">([\\s\\S]*?)</form>`).exec(html);
    if (!match) throw new Error(`no form for ${path}`);
    return formFields(`<form>${match[1]}</form>`);
  }

  it('lists the connected app with its scopes and last use, escaped', async () => {
    const user = await buildUser(context().runtime);
    const { browser } = await connect(user);
    const page = await browser.open('/account');
    expect(page.status).toBe(200);
    expect(page.text).toContain('Connected apps');
    expect(page.text).toContain('Shop &lt;App&gt;');
    expect(page.text).toContain('See the product catalogue');
    expect(page.text).toMatch(/Last used: <time datetime="/);
    expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    // No app opens the account page: it keeps no window that opened it.
    expect(page.headers['cross-origin-opener-policy']).toBe('same-origin');
  });

  it('shows a sign-in form to a signed-out visitor and signs them in', async () => {
    const user = await buildUser(context().runtime);
    const browser = new Browser(context().app);
    const page = await browser.open('/account');
    expect(page.text).toContain('name="password"');
    const bad = await browser.submit(`${context().config.issuer}/account/login`, { ...formFields(page.text), username: user.username, password: 'wrong-password' });
    expect(bad.status).toBe(401);
    const ok = await browser.submit(`${context().config.issuer}/account/login`, { ...formFields(page.text), username: user.username, password: user.password });
    expect(ok.status).toBe(303);
    expect((await browser.open(pathOf(ok.headers.location!))).text).toContain('Connected apps');
  });

  it('sends a stale copy of the sign-in form, from a browser signed in since, to the account page', async () => {
    const user = await buildUser(context().runtime);
    const browser = new Browser(context().app);
    const page = await browser.open('/account');
    const fields = { ...formFields(page.text), username: user.username, password: user.password };
    expect((await browser.submit(`${context().config.issuer}/account/login`, fields)).status).toBe(303);
    const again = await browser.submit(`${context().config.issuer}/account/login`, fields);
    expect(again.status).toBe(303);
    expect(again.headers.location).toBe(`${context().config.issuer}/account`);
    expect((await browser.open('/account')).text).toContain('Connected apps');
  });

  it('Revoke ends the app: its refresh token fails at once and its access token is refused', async () => {
    const user = await buildUser(context().runtime);
    const { browser, tokens } = await connect(user);
    const page = await browser.open('/account');
    const res = await browser.submit(`${context().config.issuer}/account/revoke`, form(page.text, '/account/revoke'));
    expect(res.status).toBe(303);
    const after = await browser.open(pathOf(res.headers.location!));
    expect(after.text).toContain('Access revoked');
    expect(after.text).not.toContain('Shop &lt;App&gt;');
    expect((await refresh(tokens.refresh_token)).body.error).toBe('invalid_grant');
    const userinfo = await request(context().app).get('/userinfo').set('Authorization', `Bearer ${tokens.access_token}`);
    expect(userinfo.status).toBe(401);
    expect(userinfo.headers['www-authenticate']).toContain('invalid_token');
    // The next authorization asks for consent again.
    const again = await browser.open(authorizePath(authorizeParams(client, { scope: 'openid products:read' })));
    expect(again.text).toContain('name="decision"');
  });

  it('refuses every account form without the CSRF token', async () => {
    const user = await buildUser(context().runtime);
    const { browser, tokens } = await connect(user);
    const issuer = context().config.issuer;
    for (const path of ['/account/revoke', '/account/sign-out-everywhere', '/account/password']) {
      const res = await browser.submit(`${issuer}${path}`, { csrf_token: 'forged', client_id: client.id, current_password: user.password, new_password: 'a-new-password' });
      expect(res.status, path).toBe(403);
    }
    expect((await refresh(tokens.refresh_token)).status).toBe(200);
  });

  it('Sign out everywhere voids every session of the user, in every browser', async () => {
    const user = await buildUser(context().runtime);
    const { browser: first } = await connect(user);
    const { browser: second } = await connect(user);
    const page = await first.open('/account');
    const res = await first.submit(`${context().config.issuer}/account/sign-out-everywhere`, form(page.text, '/account/sign-out-everywhere'));
    expect(res.status).toBe(303);
    for (const browser of [first, second]) {
      const silent = await browser.open(authorizePath(authorizeParams(client, { scope: 'openid products:read', prompt: 'none' })));
      expect(redirectParams(silent).get('error')).toBe('login_required');
      expect((await browser.open('/account')).text).toContain('Sign in to your account');
    }
  });

  it('the change-password form: a username for password managers, current-password and new-password, labelled by id', async () => {
    const { browser } = await connect(await buildUser(context().runtime));
    const page = await browser.open('/account');
    expect(inputAttributes(page.text, 'username')).toMatchObject({ type: 'text', autocomplete: 'username', hidden: '', readonly: '' });
    expect(inputAttributes(page.text, 'current_password')).toMatchObject({ id: 'current_password', type: 'password', autocomplete: 'current-password' });
    expect(inputAttributes(page.text, 'new_password')).toMatchObject({ id: 'new_password', type: 'password', autocomplete: 'new-password', minlength: '8' });
    expect(page.text).not.toMatch(/<input[^>]*aria-invalid/);
  });

  it('a refused password change names the field to fix: in the title, announced, tied to it and focused', async () => {
    const user = await buildUser(context().runtime);
    const { browser } = await connect(user);
    const issuer = context().config.issuer;
    const page = await browser.open('/account');
    const wrong = await browser.submit(`${issuer}/account/password`, { ...form(page.text, '/account/password'), current_password: 'nope-nope', new_password: 'a-brand-new-password' });
    const wrongPage = await browser.open(pathOf(wrong.headers.location!));
    expect(pageTitle(wrongPage.text)).toBe('Password not changed · Fieldgate');
    expect(wrongPage.text).toContain('<p class="alert" role="alert" id="form-error">The current password is incorrect.</p>');
    expect(inputAttributes(wrongPage.text, 'current_password')).toMatchObject({ 'aria-invalid': 'true', 'aria-describedby': 'form-error', autofocus: '' });
    expect(inputAttributes(wrongPage.text, 'new_password')).not.toHaveProperty('aria-invalid');
    const short = await browser.submit(`${issuer}/account/password`, { ...form(page.text, '/account/password'), current_password: user.password, new_password: 'short' });
    const shortPage = await browser.open(pathOf(short.headers.location!));
    expect(inputAttributes(shortPage.text, 'new_password')).toMatchObject({ 'aria-invalid': 'true', 'aria-describedby': 'form-error', autofocus: '' });
    expect(inputAttributes(shortPage.text, 'current_password')).not.toHaveProperty('aria-invalid');
    // A notice name that is not one of ours (even an Object.prototype key) shows nothing.
    expect((await browser.open('/account?notice=constructor')).text).not.toContain('role="alert"');
  });

  it('changes the password only with the current one, keeps this browser signed in and ends the rest', async () => {
    const user = await buildUser(context().runtime);
    const { browser, tokens } = await connect(user);
    const { browser: other } = await connect(user);
    const issuer = context().config.issuer;
    let page = await browser.open('/account');
    const wrong = await browser.submit(`${issuer}/account/password`, { ...form(page.text, '/account/password'), current_password: 'nope-nope', new_password: 'a-brand-new-password' });
    expect((await browser.open(pathOf(wrong.headers.location!))).text).toContain('current password is incorrect');
    const short = await browser.submit(`${issuer}/account/password`, { ...form(page.text, '/account/password'), current_password: user.password, new_password: 'short' });
    expect((await browser.open(pathOf(short.headers.location!))).text).toContain('must be 8 to');
    page = await browser.open('/account');
    const ok = await browser.submit(`${issuer}/account/password`, { ...form(page.text, '/account/password'), current_password: user.password, new_password: 'a-brand-new-password' });
    expect((await browser.open(pathOf(ok.headers.location!))).text).toContain('Password changed');
    expect(await context().runtime.users.authenticate(user.username, 'a-brand-new-password')).toBeTruthy();
    expect((await refresh(tokens.refresh_token)).body.error).toBe('invalid_grant');
    expect((await other.open('/account')).text).toContain('Sign in to your account');
  });

  it('revoking the same app from many tabs at once is harmless', async () => {
    const user = await buildUser(context().runtime);
    const { browser } = await connect(user);
    const page = await browser.open('/account');
    const fields = form(page.text, '/account/revoke');
    const results = await Promise.all(Array.from({ length: 10 }, () => browser.submit(`${context().config.issuer}/account/revoke`, fields)));
    expect(results.map((r) => r.status)).toEqual(Array(10).fill(303));
  });
});
