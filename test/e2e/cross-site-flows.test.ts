/**
 * What only a real browser shows: the relying party is on another site (localhost, while the issuer is 127.0.0.1), so
 * Chromium applies SameSite to every cookie as in production. Two sign-in pages open at once (two tabs, two apps) must
 * both work, and an authorization or logout request sent as a form POST (OIDC Core §3.1.2.1, RP-Initiated Logout §2)
 * must find the signed-in session.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { BrowserContext, Page } from 'playwright-core';
import { launchChromium, type Chromium } from '../support/browser.js';
import { DATABASE_KINDS } from '../support/databases.js';
import { authorizeParams, authorizePath, buildClient, buildUser, type TestClient, type TestUser } from '../support/oauth.js';
import { freePort, startTestServer, type RunningTestServer } from '../support/e2e-server.js';

/**
 * The relying party on another site: `/start` links to, `/post` posts a form to, and `/popup` opens a popup at the URL in
 * its `to` parameter; its other pages hand their URL to the window that opened them, as a popup sign-in's callback does.
 */
async function startRelyingParty(): Promise<{ origin: string; close(): Promise<void> }> {
  const port = await freePort();
  const escape = (value: string) => value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const to = url.searchParams.get('to') ?? '';
    res.writeHead(200, { 'content-type': 'text/html' });
    if (url.pathname === '/start') {
      res.end(`<!doctype html><title>RP</title><a id="go" href="${escape(to)}">Sign in</a>`);
    } else if (url.pathname === '/post') {
      const target = new URL(to);
      const fields = [...target.searchParams].map(([name, value]) => `<input type="hidden" name="${escape(name)}" value="${escape(value)}">`).join('');
      res.end(`<!doctype html><title>RP</title><form method="post" action="${escape(target.origin + target.pathname)}">${fields}<button id="go">Sign in</button></form>`);
    } else if (url.pathname === '/popup') {
      res.end(`<!doctype html><title>RP</title><button id="go">Sign in</button><script>
addEventListener('message', (event) => { if (event.origin === location.origin) window.received = event.data; });
document.getElementById('go').onclick = () => window.open(${JSON.stringify(to).replace(/</g, '\\u003c')}, 'signin', 'popup,width=500,height=600');
</script>`);
    } else {
      res.end('<!doctype html><title>Client</title><p>back at the client</p><script>if (window.opener) window.opener.postMessage(location.href, location.origin);</script>');
    }
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { origin: `http://localhost:${port}`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

for (const kind of DATABASE_KINDS) {
  describe(`Chromium with a relying party on another site [${kind}]`, () => {
    let server: RunningTestServer;
    let rp: Awaited<ReturnType<typeof startRelyingParty>>;
    let chromium: Chromium;
    let browser: BrowserContext;
    let user: TestUser;

    beforeAll(async () => {
      [server, rp] = await Promise.all([startTestServer(kind), startRelyingParty()]);
      user = await buildUser(server.context.runtime, { username: `bob-${kind}`, password: 'correct horse battery staple' });
      chromium = await launchChromium();
      browser = chromium.context;
    });

    afterAll(async () => {
      await chromium?.close();
      await Promise.all([server?.close(), rp?.close()]);
    });

    const registerClient = (name: string): Promise<TestClient> => buildClient(server.context.runtime, { name, redirectUris: [`${rp.origin}/callback`] });

    /** Follows the relying party's link (a cross-site navigation) to `authorizeUrl`. */
    async function openFromRelyingParty(authorizeUrl: string): Promise<Page> {
      const page = await browser.newPage();
      await page.goto(`${rp.origin}/start?${new URLSearchParams({ to: authorizeUrl }).toString()}`);
      await Promise.all([page.waitForURL((url) => url.pathname === '/authorize'), page.click('#go')]);
      return page;
    }

    /** Signs `user` in on `page` if it shows the sign-in form (an earlier test may have signed this browser in). */
    async function signInIfAsked(page: Page): Promise<void> {
      if ((await page.locator('h1').textContent()) !== 'Sign in') return;
      await page.fill('input[name="username"]', user.username);
      await page.fill('input[name="password"]', user.password);
      await Promise.all([page.waitForURL((url) => url.pathname === '/authorize'), page.click('button[type="submit"]')]);
    }

    it('signs in on the first of two sign-in pages opened from relying parties, not a form has expired page', async () => {
      const [photos, prints] = await Promise.all([registerClient('Photos'), registerClient('Prints')]);
      const first = await openFromRelyingParty(`${server.baseUrl}${authorizePath(authorizeParams(photos))}`);
      const second = await openFromRelyingParty(`${server.baseUrl}${authorizePath(authorizeParams(prints))}`);
      expect(await second.locator('h1').textContent()).toBe('Sign in');

      await first.fill('input[name="username"]', user.username);
      await first.fill('input[name="password"]', user.password);
      await Promise.all([first.waitForLoadState(), first.click('button[type="submit"]')]);
      expect(await first.locator('h1').textContent()).toContain('Photos');
      await Promise.all([first.close(), second.close()]);
    });

    it('hands the code back to the window that opened the sign-in popup (oidc-client-ts signinPopup, MSAL loginPopup)', async () => {
      const client = await registerClient('Popup');
      const opener = await browser.newPage();
      await opener.goto(`${rp.origin}/popup?${new URLSearchParams({ to: `${server.baseUrl}${authorizePath(authorizeParams(client, { state: 'popped' }))}` }).toString()}`);
      const [popup] = await Promise.all([opener.waitForEvent('popup'), opener.click('#go')]);
      await popup.waitForURL((url) => url.pathname === '/authorize');
      await signInIfAsked(popup);
      await Promise.all([popup.waitForURL((url) => url.origin === rp.origin), popup.click('button[value="allow"]')]);

      const received = await opener.waitForFunction(() => (window as unknown as { received?: string }).received, undefined, { timeout: 10_000 });
      const answer = new URL(String(await received.jsonValue())).searchParams;
      expect(answer.get('code')).toBeTruthy();
      expect(answer.get('state')).toBe('popped');
      await Promise.all([popup.close(), opener.close()]);
    });

    it('answers an authorization request posted as a form by a relying party with the signed-in user’s code (prompt=none)', async () => {
      const client = await registerClient('Posted');
      const page = await openFromRelyingParty(`${server.baseUrl}${authorizePath(authorizeParams(client, { scope: 'openid' }))}`);
      await signInIfAsked(page);
      await Promise.all([page.waitForURL((url) => url.origin === rp.origin), page.click('button[value="allow"]')]);

      const params = authorizeParams(client, { scope: 'openid', prompt: 'none', state: 'posted' });
      await page.goto(`${rp.origin}/post?${new URLSearchParams({ to: `${server.baseUrl}${authorizePath(params)}` }).toString()}`);
      await Promise.all([page.waitForURL((url) => url.origin === rp.origin && url.pathname === '/callback'), page.click('#go')]);
      const answer = new URL(page.url()).searchParams;
      expect(answer.get('error')).toBeNull();
      expect(answer.get('code')).toBeTruthy();
      expect(answer.get('state')).toBe('posted');
      await page.close();
    });

    it('asks the signed-in user to confirm a logout the relying party posted as a form, instead of sending them back still signed in', async () => {
      const afterLogout = `${rp.origin}/signed-out`;
      const client = await buildClient(server.context.runtime, { name: 'Logout', redirectUris: [`${rp.origin}/callback`], oidc: { postLogoutRedirectUris: [afterLogout] } });
      const page = await openFromRelyingParty(`${server.baseUrl}${authorizePath(authorizeParams(client))}`);
      await signInIfAsked(page);
      await Promise.all([page.waitForURL((url) => url.origin === rp.origin), page.click('button[value="allow"]')]);

      const logout = `${server.baseUrl}/logout?${new URLSearchParams({ client_id: client.id, post_logout_redirect_uri: afterLogout, state: 'bye' }).toString()}`;
      await page.goto(`${rp.origin}/post?${new URLSearchParams({ to: logout }).toString()}`);
      await Promise.all([page.waitForURL((url) => url.pathname === '/logout' || url.origin === rp.origin), page.click('#go')]);
      expect(new URL(page.url()).pathname).toBe('/logout');
      expect(await page.locator('h1').textContent()).toBe('Sign out?');
      await Promise.all([page.waitForURL((url) => url.origin === rp.origin), page.click('button[value="logout"]')]);
      expect(page.url()).toBe(`${afterLogout}?state=bye`);
      await page.close();
    });
  });
}
