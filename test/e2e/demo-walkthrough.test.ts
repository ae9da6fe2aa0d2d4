/**
 * The README demo walkthrough, as a newcomer does it: open the printed
 * /authorize link, sign in as demo/demo, allow, land on /demo/callback, and run the curl
 * command shown there (with CLIENT_SECRET set to the printed secret) to get tokens.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { demoAuthorizeLink } from '../../src/demo/authorize-link.js';
import { DEMO_PASSWORD, DEMO_USERNAME, seedDemo } from '../../src/demo/seed.js';
import { DATABASE_KINDS } from '../support/databases.js';
import { Browser, pathOf } from '../support/oauth.js';
import { startTestServer, type RunningTestServer } from '../support/e2e-server.js';

const run = promisify(execFile);

function unescapeHtml(value: string): string {
  return value.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}

for (const kind of DATABASE_KINDS) {
  describe(`demo walkthrough [${kind}]`, () => {
    let server: RunningTestServer;
    let secret: string;

    beforeAll(async () => {
      server = await startTestServer(kind, { DEMO: 'true' });
      secret = (await seedDemo(server.context.runtime)).client.client_secret;
    });

    afterAll(async () => {
      await server?.close();
    });

    it('printed link → sign in as demo → allow → the printed curl command returns tokens', async () => {
      const link = demoAuthorizeLink(server.baseUrl);
      const browser = new Browser(server.baseUrl);
      const landing = await browser.authorize(Object.fromEntries(new URL(link).searchParams), {
        id: 0,
        username: DEMO_USERNAME,
        password: DEMO_PASSWORD,
      });
      expect(landing.status).toBe(302);
      expect(landing.headers.location!.startsWith(`${server.baseUrl}/demo/callback?`)).toBe(true);

      const callback = await browser.open(pathOf(landing.headers.location!));
      expect(callback.status).toBe(200);
      const curl = unescapeHtml(/<pre id="curl">([\s\S]*?)<\/pre>/.exec(callback.text)![1]!);
      expect(curl).toMatch(/^curl /);

      const { stdout } = await run('bash', ['-c', curl], { env: { ...process.env, CLIENT_SECRET: secret }, timeout: 20_000 });
      const tokens = JSON.parse(stdout) as Record<string, unknown>;
      expect(tokens).toMatchObject({ token_type: 'Bearer', scope: 'products:read orders:read orders:write' });
      expect(typeof tokens.access_token).toBe('string');
      expect(typeof tokens.refresh_token).toBe('string');
    });
  });
}
