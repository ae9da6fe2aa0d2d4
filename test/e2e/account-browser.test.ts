/**
 * A real browser, keyboard only, on a 375 px wide screen: Chromium (playwright-core) signs in
 * to an OpenID client (Tab/Enter), allows on the consent page, lands at the client with a
 * code, opens "Connected apps", revokes the app — and the app's refresh then fails. Screenshots
 * of each page go to test-output/.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { DATABASE_KINDS } from '../support/databases.js';
import { authorizeParams, authorizePath, basic, buildClient, buildUser, type TestUser } from '../support/oauth.js';
import { freePort, startTestServer, type RunningTestServer } from '../support/e2e-server.js';

const CHROMIUM = '/usr/bin/chromium';
const OUTPUT_DIR = path.resolve('test-output');
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];

async function startClientApp(): Promise<{ origin: string; close(): Promise<void> }> {
  const port = await freePort();
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>Client</title><p>back at the client</p>');
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { origin: `http://127.0.0.1:${port}`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** Presses Tab until the focused element's text (or value) matches, as a keyboard user would. */
async function tabTo(page: Page, label: RegExp): Promise<void> {
  for (let i = 0; i < 30; i++) {
    await page.keyboard.press('Tab');
    const focused = await page.evaluate(() => {
      const el = document.activeElement as HTMLElement | null;
      return el ? `${el.getAttribute('aria-label') ?? ''} ${el.textContent ?? ''}`.trim() : '';
    });
    if (label.test(focused)) return;
  }
  throw new Error(`could not reach ${label} with Tab`);
}

for (const kind of DATABASE_KINDS) {
  describe(`Chromium: sign in, consent, connected apps, revoke [${kind}]`, () => {
    let server: RunningTestServer;
    let clientApp: Awaited<ReturnType<typeof startClientApp>>;
    let browser: BrowserContext;
    let userDataDir: string;
    let user: TestUser;

    beforeAll(async () => {
      mkdirSync(OUTPUT_DIR, { recursive: true });
      userDataDir = mkdtempSync(path.join(os.tmpdir(), 'fieldgate-chromium-'));
      [server, clientApp] = await Promise.all([startTestServer(kind), startClientApp()]);
      user = await buildUser(server.context.runtime, { username: `grace-${kind}`, password: 'correct horse battery staple' });
      browser = await chromium.launchPersistentContext(userDataDir, {
        executablePath: CHROMIUM,
        args: ARGS,
        headless: true,
        viewport: { width: 375, height: 740 },
      });
    });

    afterAll(async () => {
      await browser?.close();
      await Promise.all([server?.close(), clientApp?.close()]);
      if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
    });

    const fitsWidth = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);

    it('goes from sign-in to revoke with the keyboard only, and the app can no longer refresh', async () => {
      const client = await buildClient(server.context.runtime, { name: 'Garden Planner', redirectUris: [`${clientApp.origin}/callback`] });
      const params = authorizeParams(client, { scope: 'openid offline_access products:read', state: 'kb' });
      const page = await browser.newPage();

      await page.goto(`${server.baseUrl}${authorizePath(params)}`);
      expect(await fitsWidth(page)).toBe(true);
      await page.screenshot({ path: path.join(OUTPUT_DIR, `oidc-login-375-${kind}.png`), fullPage: true });
      // The username field has autofocus (applied at a rendering update, which a busy machine may hold past `load`);
      // Tab moves to the password, Enter submits.
      await page.waitForFunction(() => document.activeElement?.getAttribute('name') === 'username');
      await page.keyboard.type(user.username);
      await page.keyboard.press('Tab');
      await page.keyboard.type(user.password);
      await Promise.all([page.waitForURL(/\/authorize\?/), page.keyboard.press('Enter')]);

      await page.getByRole('button', { name: 'Allow' }).waitFor();
      expect(await fitsWidth(page)).toBe(true);
      await page.screenshot({ path: path.join(OUTPUT_DIR, `oidc-consent-375-${kind}.png`), fullPage: true });
      await tabTo(page, /^Allow$/);
      await Promise.all([page.waitForURL(`${clientApp.origin}/callback?**`), page.keyboard.press('Enter')]);
      const code = new URL(page.url()).searchParams.get('code')!;
      expect(code).toBeTruthy();

      const tokenResponse = await fetch(`${server.baseUrl}/token`, {
        method: 'POST',
        headers: { authorization: basic(client.id, client.secret!), 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: client.redirectUri, code_verifier: params.verifier }),
      });
      const tokens = (await tokenResponse.json()) as { refresh_token: string; id_token: string };
      expect(tokens.id_token).toBeTypeOf('string');
      expect(tokens.refresh_token).toBeTypeOf('string');

      await page.goto(`${server.baseUrl}/account`);
      await page.getByRole('heading', { name: 'Connected apps' }).waitFor();
      await page.getByRole('heading', { name: 'Garden Planner' }).waitFor();
      expect(await fitsWidth(page)).toBe(true);
      await page.screenshot({ path: path.join(OUTPUT_DIR, `oidc-account-375-${kind}.png`), fullPage: true });
      await tabTo(page, /Revoke access for Garden Planner/);
      await Promise.all([page.waitForURL(/notice=revoked/), page.keyboard.press('Enter')]);
      await page.getByRole('status').filter({ hasText: 'Access revoked' }).waitFor();
      expect(await page.getByRole('heading', { name: 'Garden Planner' }).count()).toBe(0);
      await page.screenshot({ path: path.join(OUTPUT_DIR, `oidc-account-revoked-375-${kind}.png`), fullPage: true });

      const refreshed = await fetch(`${server.baseUrl}/token`, {
        method: 'POST',
        headers: { authorization: basic(client.id, client.secret!), 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token }),
      });
      expect(refreshed.status).toBe(400);
      expect(((await refreshed.json()) as { error: string }).error).toBe('invalid_grant');
    });
  });
}
