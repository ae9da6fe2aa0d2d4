/**
 * What the sign-in pages show users: "Not you? Switch account", the app's policy and terms
 * links when registered, a link to the account page, and the deployment's brand (escaped, with
 * its colour and logo allowed by the page's CSP and nothing more).
 */
import { beforeAll, expect, it } from 'vitest';
import { describeEachDatabase } from '../../support/runtime.js';
import { authorizeParams, authorizePath, Browser, buildClient, buildUser, pathOf, type TestClient, type TestUser } from '../../support/oauth.js';
import { formFields } from '../../support/oauth.js';

describeEachDatabase(
  'sign-in page details',
  (context) => {
    let client: TestClient;
    let user: TestUser;

    beforeAll(async () => {
      client = await buildClient(context().runtime, {
        redirectUris: ['https://shop.example/cb'],
        oidc: { policyUri: 'https://shop.example/privacy', tosUri: 'https://shop.example/terms' },
      });
      user = await buildUser(context().runtime);
    });

    async function consentPage(browser: Browser) {
      let res = await browser.open(authorizePath(authorizeParams(client, { scope: 'openid products:read' })));
      res = await browser.signIn(res, user.username, user.password);
      return browser.open(pathOf(res.headers.location!));
    }

    it('shows the policy and terms links, the account link and "Not you? Switch account" on the consent page', async () => {
      const page = await consentPage(new Browser(context().app));
      expect(page.text).toContain('href="https://shop.example/privacy"');
      expect(page.text).toContain('href="https://shop.example/terms"');
      expect(page.text).toContain(`href="${context().config.issuer}/account"`);
      expect(page.text).toContain('Switch account');
    });

    it('"Switch account" signs out and shows the login page for the same request', async () => {
      const browser = new Browser(context().app);
      const page = await consentPage(browser);
      const form = /<form method="post" action="([^"]*switch-account)"[^>]*>([\s\S]*?)<\/form>/.exec(page.text)!;
      const res = await browser.submit(form[1]!, formFields(`<form>${form[2]}</form>`));
      expect(res.status).toBe(303);
      const login = await browser.open(pathOf(res.headers.location!));
      expect(login.text).toContain('name="password"');
      expect(login.text).toContain(client.name);
    });

    it('carries the configured brand: name (escaped), colour by CSP hash, logo origin in img-src', async () => {
      const page = await new Browser(context().app).open(authorizePath(authorizeParams(client)));
      expect(page.text).toContain('Acme &lt;Sign-in&gt;');
      expect(page.text).toContain(':root{--brand:#c026d3}');
      expect(page.text).toContain('<img src="https://cdn.acme.example/logo.svg" alt="">');
      const csp = page.headers['content-security-policy'] ?? '';
      expect(csp).toContain('img-src https://cdn.acme.example;');
      expect(csp.match(/'sha256-/g)).toHaveLength(2);
    });
  },
  { BRAND_NAME: 'Acme <Sign-in>', BRAND_COLOR: '#c026d3', BRAND_LOGO_URL: 'https://cdn.acme.example/logo.svg' },
);
