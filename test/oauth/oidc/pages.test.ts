/**
 * What the sign-in pages show users: "Not you? Switch account", the app's policy and terms
 * links when registered, a link to the account page, and the deployment's brand (escaped, with
 * its colour and logo allowed by the page's CSP and nothing more).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { brandPalette } from '../../../src/oauth/browser/pages/layout.js';
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
      expect(page.text).toContain(':root{--brand:#c026d3;');
      expect(page.text).toContain('<img src="https://cdn.acme.example/logo.svg" alt="">');
      const csp = page.headers['content-security-policy'] ?? '';
      expect(csp).toContain('img-src https://cdn.acme.example;');
      expect(csp.match(/'sha256-/g)).toHaveLength(2);
    });
  },
  { BRAND_NAME: 'Acme <Sign-in>', BRAND_COLOR: '#c026d3', BRAND_LOGO_URL: 'https://cdn.acme.example/logo.svg' },
);

/** WCAG 2.2 contrast ratio of two #rrggbb colours. */
function contrast(a: string, b: string): number {
  const luminance = (hex: string) => {
    const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255).map((c) => (c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4)) as [number, number, number];
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const [light, dark] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (light + 0.05) / (dark + 0.05);
}

describe('any BRAND_COLOR keeps the pages readable (WCAG 1.4.3, 1.4.11)', () => {
  it.each(['#1d4ed8', '#c026d3', '#fde047', '#ffffff', '#000000', '#0f0', '#7dd3fc'])('%s: button labels and links reach 4.5:1', (color) => {
    const palette = brandPalette(color);
    expect(contrast(palette.brand, palette.onBrand)).toBeGreaterThanOrEqual(4.5);
    expect(contrast(palette.text, '#ffffff')).toBeGreaterThanOrEqual(4.5);
  });

  it('keeps a brand colour that already reads on white as it is', () => {
    expect(brandPalette('#1d4ed8')).toEqual({ brand: '#1d4ed8', onBrand: '#ffffff', text: '#1d4ed8' });
    expect(brandPalette('#fde047')).toMatchObject({ brand: '#fde047', onBrand: '#111827' });
  });
});
