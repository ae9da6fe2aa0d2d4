/**
 * An id_token_hint read while the database is out of reach (the embedded one is closed under the running app, and the
 * signing keys are due for their reload): the answer is "try again shortly", never a refusal that blames the hint —
 * neither the 400 page of /logout nor an invalid_request sent back to the client from a silent /authorize.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import request from 'supertest';
import { createTestRuntime, type TestRuntime } from '../../support/runtime.js';
import { authorizeParams, authorizePath, Browser, buildClient, buildUser, codeFlowTokens, type TestClient } from '../../support/oauth.js';
import { DATABASE_RETRY_AFTER_SECONDS } from '../../../src/db/errors.js';
import { POLICY } from '../../../src/policy.js';

describe('an id_token_hint while the database is out of reach', () => {
  const afterLogout = 'https://rp.example/signed-out';
  let context: TestRuntime;
  let client: TestClient;
  let browser: Browser;
  let idToken: string;

  beforeAll(async () => {
    context = await createTestRuntime('pglite');
    client = await buildClient(context.runtime, { redirectUris: ['https://rp.example/cb'], oidc: { postLogoutRedirectUris: [afterLogout] } });
    browser = new Browser(context.app);
    const tokens = await codeFlowTokens(context.app, browser, client, await buildUser(context.runtime), { scope: 'openid' });
    idToken = tokens.body.id_token as string;
    await context.runtime.database.close();
    // The keys held in memory are now due for a reload, which needs the database.
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 2 * POLICY.signingKeyReloadMs.value);
  });
  afterAll(async () => {
    vi.useRealTimers();
    await context?.close().catch(() => {});
  });

  const retryLater = (res: request.Response) => {
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe(String(DATABASE_RETRY_AFTER_SECONDS));
    expect(res.text).toContain('Try again in a moment');
  };

  it('answers /logout with the 503 page, not "not an ID Token issued by this server"', async () => {
    retryLater(await request(context.app).get(`/logout?${new URLSearchParams({ id_token_hint: idToken, post_logout_redirect_uri: afterLogout })}`));
  });

  it('answers /logout naming a client it must look up with the 503 page, not a 500', async () => {
    retryLater(await request(context.app).get('/logout?client_id=not-cached-anywhere'));
  });

  it('answers a silent /authorize with the 503 page, not invalid_request at the redirect URI', async () => {
    const res = await browser.open(authorizePath(authorizeParams(client, { scope: 'openid', prompt: 'none', id_token_hint: idToken })));
    expect(res.headers.location).toBeUndefined();
    retryLater(res);
  });
});
