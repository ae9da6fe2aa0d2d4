/**
 * A real browser: Debian's Chromium driven by playwright-core opens the
 * /authorize URL, signs in, allows, and lands on the client's redirect URI with a code; a
 * second client is denied and gets error=access_denied. The client is a separate origin (its
 * own little server), so the CSP form-action / redirect chain is exercised as in production.
 * Screenshots of the login and consent pages go to test-output/.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { BrowserContext, Page } from 'playwright-core';
import { launchChromium, screenshotPath, type Chromium } from '../support/browser.js';
import { DATABASE_KINDS } from '../support/databases.js';
import { authorizeParams, authorizePath, buildClient, buildUser, type TestClient, type TestUser } from '../support/oauth.js';
import { freePort, startTestServer, type RunningTestServer } from '../support/e2e-server.js';

/** The third-party application: a separate origin whose callback page just says "back". */
async function startClientApp(): Promise<{ origin: string; close(): Promise<void> }> {
  const port = await freePort();
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>Client</title><p>back at the client</p>');
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

for (const kind of DATABASE_KINDS) {
  describe(`Chromium signs in and consents [${kind}]`, () => {
    let server: RunningTestServer;
    let clientApp: Awaited<ReturnType<typeof startClientApp>>;
    let chromium: Chromium;
    let browser: BrowserContext;
    let user: TestUser;
    const cspViolations: string[] = [];

    beforeAll(async () => {
      [server, clientApp] = await Promise.all([startTestServer(kind), startClientApp()]);
      user = await buildUser(server.context.runtime, { username: `alice-${kind}`, password: 'correct horse battery staple' });
      chromium = await launchChromium();
      browser = chromium.context;
    });

    afterAll(async () => {
      await chromium?.close();
      await Promise.all([server?.close(), clientApp?.close()]);
    });

    async function newPage(): Promise<Page> {
      const page = await browser.newPage();
      page.on('console', (message) => {
        if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
      });
      return page;
    }

    async function registerClient(name: string): Promise<TestClient> {
      return buildClient(server.context.runtime, { name, redirectUris: [`${clientApp.origin}/callback`] });
    }

    it('opens /authorize, signs in, allows, and lands on the redirect URI with a code', async () => {
      const client = await registerClient('Photo Printing Co.');
      const params = authorizeParams(client, { scope: 'products:read orders:read', state: 'state-from-the-client' });
      const page = await newPage();

      await page.goto(`${server.baseUrl}${authorizePath(params)}`);
      expect(await page.locator('h1').textContent()).toBe('Sign in');
      await page.screenshot({ path: screenshotPath(`login-page-${kind}.png`), fullPage: true });

      await page.fill('input[name="username"]', user.username);
      await page.fill('input[name="password"]', user.password);
      await Promise.all([page.waitForURL((url) => url.pathname === '/authorize'), page.click('button[type="submit"]')]);

      expect(await page.locator('h1').textContent()).toContain('Photo Printing Co.');
      const scopes = await page.locator('ul.scopes li').allTextContents();
      expect(scopes).toEqual(['See the product catalogue', 'See your orders']);
      await page.screenshot({ path: screenshotPath(`consent-page-${kind}.png`), fullPage: true });

      await Promise.all([page.waitForURL((url) => url.origin === clientApp.origin), page.click('button[value="allow"]')]);
      const landed = new URL(page.url());
      expect(landed.pathname).toBe('/callback');
      expect(landed.searchParams.get('code')).toMatch(/^[0-9a-z]+\.[A-Za-z0-9_-]+$/); // a sealed code
      expect(landed.searchParams.get('state')).toBe('state-from-the-client');
      expect(landed.searchParams.get('iss')).toBe(server.baseUrl);
      expect(await page.textContent('p')).toBe('back at the client');

      // Signed in and consented: a second request goes straight back with a new code.
      await page.goto(`${server.baseUrl}${authorizePath(authorizeParams(client, { scope: 'products:read' }))}`);
      await page.waitForURL((url) => url.origin === clientApp.origin);
      expect(new URL(page.url()).searchParams.get('code')).not.toBe(landed.searchParams.get('code'));
      await page.close();
    });

    it('Deny lands on the redirect URI with error=access_denied', async () => {
      const client = await registerClient('Nosy Analytics');
      const page = await newPage();
      await page.goto(`${server.baseUrl}${authorizePath(authorizeParams(client, { state: 'deny-state' }))}`);
      if ((await page.locator('h1').textContent()) === 'Sign in') {
        await page.fill('input[name="username"]', user.username);
        await page.fill('input[name="password"]', user.password);
        await Promise.all([page.waitForURL((url) => url.pathname === '/authorize'), page.click('button[type="submit"]')]);
      }
      expect(await page.locator('h1').textContent()).toContain('Nosy Analytics');
      await Promise.all([page.waitForURL((url) => url.origin === clientApp.origin), page.click('button[value="deny"]')]);
      const landed = new URL(page.url());
      expect(landed.searchParams.get('error')).toBe('access_denied');
      expect(landed.searchParams.get('state')).toBe('deny-state');
      expect(landed.searchParams.has('code')).toBe(false);
      await page.close();
    });

    it('shows a wrong password as an error on the login page', async () => {
      const client = await registerClient('Another App');
      const other = await launchChromium();
      try {
        const page = await other.context.newPage();
        await page.goto(`${server.baseUrl}${authorizePath(authorizeParams(client))}`);
        await page.fill('input[name="username"]', user.username);
        await page.fill('input[name="password"]', 'wrong password');
        await Promise.all([page.waitForLoadState(), page.click('button[type="submit"]')]);
        expect(await page.locator('[role="alert"]').textContent()).toBe('The username or password is incorrect.');
        expect(await page.inputValue('input[name="username"]')).toBe(user.username);
      } finally {
        await other.close();
      }
    });

    it('raised no Content-Security-Policy violations (the page style and form redirects are allowed)', () => {
      expect(cspViolations).toEqual([]);
    });
  });
}
