/**
 * The front door in a real browser (Chromium via playwright-core): open `/`, sign in through
 * the demo flow, exchange the code, run a query in GraphiQL with the token, and `GET /products`
 * from the API reference's "Try it out". Every asset comes from this origin, under the page
 * CSPs; a CSP violation or a request to another origin fails the test. Screenshots go to
 * test-output/.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserContext, Page } from 'playwright-core';
import { launchChromium, screenshotPath, type Chromium } from '../support/browser.js';
import { seedDemo, type DemoSeedResult } from '../../src/demo/seed.js';
import { startTestServer, type RunningTestServer } from '../support/e2e-server.js';

describe('the front door in Chromium', () => {
  let server: RunningTestServer;
  let chromium: Chromium;
  let browser: BrowserContext;
  let demo: DemoSeedResult;
  let accessToken: string;
  const problems: string[] = [];

  beforeAll(async () => {
    server = await startTestServer('pglite', { DEMO: 'true' });
    demo = await seedDemo(server.context.runtime);
    chromium = await launchChromium({ viewport: { width: 1280, height: 900 } });
    browser = chromium.context;
  });

  afterAll(async () => {
    await chromium?.close();
    await server?.close();
  });

  async function newPage(): Promise<Page> {
    const page = await browser.newPage();
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) problems.push(message.text());
    });
    page.on('request', (request) => {
      const url = new URL(request.url());
      if (!['blob:', 'data:'].includes(url.protocol) && url.origin !== server.baseUrl) problems.push(`request to ${request.url()}`);
    });
    return page;
  }

  it('opens /, signs in with the demo account and gets a token for the code', async () => {
    const page = await newPage();
    await page.goto(`${server.baseUrl}/`);
    expect(await page.locator('h1').textContent()).toBe('Welcome');
    expect(await page.locator('#api-reference').getAttribute('href')).toBe('/api-reference');
    expect(await page.locator('#graphiql').getAttribute('href')).toBe('/graphql');
    await page.screenshot({ path: screenshotPath('front-door-home.png'), fullPage: true });

    await Promise.all([page.waitForURL((url) => url.pathname === '/authorize'), page.click('#sign-in')]);
    await page.fill('input[name="username"]', 'demo');
    await page.fill('input[name="password"]', 'demo');
    await Promise.all([page.waitForURL((url) => url.pathname === '/authorize'), page.click('button[type="submit"]')]);
    await Promise.all([page.waitForURL((url) => url.pathname === '/demo/callback'), page.click('button[value="allow"]')]);
    const code = (await page.locator('#code').textContent())!;
    const curl = (await page.locator('#curl').textContent())!;
    expect(code).toMatch(/^[0-9a-z]+\.[A-Za-z0-9_-]+$/); // a sealed code
    expect(await page.locator('button[data-copy="curl"]').isVisible()).toBe(true);
    await page.screenshot({ path: screenshotPath('front-door-callback.png'), fullPage: true });

    // What the printed curl command does, with the demo client secret.
    const verifier = /code_verifier=(\S+)/.exec(curl)![1]!;
    const res = await fetch(`${server.baseUrl}/token`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`${demo.client.client_id}:${demo.client.client_secret}`).toString('base64')}` },
      body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: demo.client.redirect_uri, code_verifier: verifier }),
    });
    expect(res.status).toBe(200);
    accessToken = ((await res.json()) as { access_token: string }).access_token;
    await page.close();
  });

  it('runs a query in GraphiQL with the demo token', async () => {
    const page = await newPage();
    await page.goto(`${server.baseUrl}/graphql`);
    await page.locator('.graphiql-container').first().waitFor();
    const query = page.locator('.graphiql-query-editor .graphiql-editor').first();
    await query.waitFor();
    await query.click();
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.press('Delete');
    await page.keyboard.insertText('{ products(limit: 3) { id name priceCents } }');
    const headers = page.locator('.graphiql-editor-tool .graphiql-editor').last();
    await headers.waitFor();
    await headers.click();
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.press('Delete');
    await page.keyboard.insertText(JSON.stringify({ Authorization: `Bearer ${accessToken}` }));
    await page.screenshot({ path: screenshotPath('front-door-graphiql-headers.png') });
    await page.locator('.graphiql-execute-button').click();
    const response = page.locator('.graphiql-response');
    await expect.poll(async () => response.textContent(), { timeout: 30_000 }).toContain('priceCents');
    expect(await response.textContent()).not.toContain('UNAUTHENTICATED');
    await page.screenshot({ path: screenshotPath('front-door-graphiql.png') });
    await page.close();
  });

  it('runs GET /products from the API reference with the demo token', async () => {
    const page = await newPage();
    await page.goto(`${server.baseUrl}/api-reference`);
    await page.fill('#token', accessToken);
    const operation = page.locator('.opblock[id$="-listProducts"]');
    await operation.locator('.opblock-summary').click();
    await operation.locator('button.execute').click();
    const status = operation.locator('.live-responses-table .response .response-col_status').first();
    await expect.poll(async () => (await status.textContent())?.trim(), { timeout: 30_000 }).toBe('200');
    expect(await operation.locator('.live-responses-table .response .response-col_description').first().textContent()).toContain('"priceCents"');
    await page.screenshot({ path: screenshotPath('front-door-api-reference.png'), fullPage: true });
    await page.close();
  });

  it('loaded everything from this origin without a CSP violation', () => {
    expect(problems).toEqual([]);
  });
});
