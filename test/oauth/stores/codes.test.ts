/**
 * The code flow's two statements (read the session's user and consent at /authorize, redeem at
 * /token) are built once with placeholders: every flow must send the same text, whatever its
 * values, and still get its own answers back. The session checks (epoch, signed out) ride in both:
 * the code is sealed, so /authorize writes nothing, and /token checks the session again.
 */
import { beforeAll, expect, it } from 'vitest';
import { describeEachDatabase } from '../../support/runtime.js';
import { captureSql } from '../../support/sql.js';
import { authorizeParams, Browser, buildTokenCast, redirectParams, tokenRequest, type TestClient, type TestUser } from '../../support/oauth.js';

describeEachDatabase('authorization code statements', (context) => {
  let client: TestClient;
  let user: TestUser;
  let browser: Browser;

  beforeAll(async () => {
    ({ client, user } = await buildTokenCast(context().runtime));
    browser = new Browser(context().app);
    // Sign in and consent once, so the flows below go straight through issueIfConsented.
    await browser.authorize(authorizeParams(client, { scope: 'products:read orders:read' }), user);
  });

  /** One flow with an established session and consent; returns the statements it sent and its tokens. */
  async function flow(scope: string, nonce?: string) {
    const params = authorizeParams(client, { scope, ...(nonce ? { nonce } : {}) });
    let tokens: { status: number; body: { scope?: string; refresh_token?: string } } | undefined;
    const authorizeUrl = `/authorize?${new URLSearchParams(params as Record<string, string>)}`;
    // The client is cached for CLIENT_CACHE_MS: a request just before makes sure it still is, however slow the machine.
    expect((await browser.open(authorizeUrl)).status).toBe(302);
    const statements = await captureSql(context().runtime, async () => {
      const res = await browser.open(authorizeUrl);
      expect(res.status).toBe(302);
      const code = redirectParams(res).get('code')!;
      tokens = await tokenRequest(context().app, { grant_type: 'authorization_code', code, redirect_uri: client.redirectUri, code_verifier: params.verifier }, client);
    });
    return { statements, tokens: tokens! };
  }

  it('sends the same statement texts for flows with different values, and answers each with its own', async () => {
    const first = await flow('products:read');
    const second = await flow('orders:read products:read', 'n-0S6_WzA2Mj');
    expect(first.tokens.status).toBe(200);
    expect(second.tokens.status).toBe(200);
    expect(first.tokens.body.scope).toBe('products:read');
    expect(second.tokens.body.scope).toBe('orders:read products:read');
    expect(first.tokens.body.refresh_token).not.toBe(second.tokens.body.refresh_token);

    const issue = (statements: string[]) => statements.filter((text) => text.startsWith('select u.id, u.username, c.scope'));
    const redeem = (statements: string[]) => statements.filter((text) => text.includes('with authorizing as'));
    expect(issue(first.statements)).toHaveLength(1);
    expect(redeem(first.statements)).toHaveLength(1);
    expect(issue(second.statements)).toEqual(issue(first.statements));
    expect(redeem(second.statements)).toEqual(redeem(first.statements));
    // Values travel as parameters, never in the text.
    expect(issue(first.statements)[0]).not.toContain('products:read');
  });

  it('checks the session epoch and sign-out in both statements, and writes only at /token: a warm flow is two statements', async () => {
    const { statements } = await flow('products:read');
    // /authorize reads, /token redeems; the client, keys and revocation answers come from caches.
    expect(statements).toHaveLength(2);
    expect(statements[0]).toMatch(/^select u\.id, u\.username, c\.scope/);
    expect(statements[0]).not.toMatch(/\b(insert|update|delete)\b/i);
    expect(statements[1]).toContain('with authorizing as');
    for (const text of statements) {
      expect(text).toContain('u.session_epoch = $');
      expect(text).toMatch(/not exists \(select 1 from "ended_sessions" where "ended_sessions"\."sid" = \$\d+\)/);
    }
  });
});
