/**
 * Security events: every step of a whole flow — login, consent, code
 * issued and redeemed, refresh, reuse, revocation — is one structured record with the event
 * name, client id, user id and request id, and no secret ever reaches the log.
 */
import { expect, it } from 'vitest';
import request from 'supertest';
import { describeEachDatabase } from '../support/runtime.js';
import { authorizeParams, basic, Browser, buildClient, buildUser, formFields, redirectParams, securityEvents, tokenRequest } from '../support/oauth.js';

describeEachDatabase('security events', (context) => {
  it('are logged for a whole flow with ids, never with secrets', async () => {
    const { runtime, app, logs } = context();
    const client = await buildClient(runtime);
    const user = await buildUser(runtime);
    const browser = new Browser(app);

    const params = authorizeParams(client);
    const loginPage = await browser.open(`/authorize?${new URLSearchParams(params as Record<string, string>).toString()}`);
    const csrfToken = formFields(loginPage.text).csrf_token!;
    const landing = await browser.authorize(params, user);
    const code = redirectParams(landing).get('code')!;
    const tokens = await tokenRequest(app, { grant_type: 'authorization_code', code, redirect_uri: client.redirectUri, code_verifier: params.verifier }, client);
    await tokenRequest(app, { grant_type: 'authorization_code', code, redirect_uri: client.redirectUri, code_verifier: params.verifier }, client);
    const second = await buildUser(runtime);
    const secondParams = authorizeParams(client);
    const secondCode = redirectParams(await new Browser(app).authorize(secondParams, second)).get('code')!;
    const fresh = await tokenRequest(app, { grant_type: 'authorization_code', code: secondCode, redirect_uri: client.redirectUri, code_verifier: secondParams.verifier }, client);
    const rotated = await tokenRequest(app, { grant_type: 'refresh_token', refresh_token: fresh.body.refresh_token }, client);
    await tokenRequest(app, { grant_type: 'refresh_token', refresh_token: fresh.body.refresh_token }, client);
    const third = await buildUser(runtime);
    const thirdParams = authorizeParams(client);
    const thirdCode = redirectParams(await new Browser(app).authorize(thirdParams, third)).get('code')!;
    const thirdTokens = await tokenRequest(app, { grant_type: 'authorization_code', code: thirdCode, redirect_uri: client.redirectUri, code_verifier: thirdParams.verifier }, client);
    await request(app).post('/revoke').set('Authorization', basic(client.id, client.secret!)).type('form').send({ token: thirdTokens.body.refresh_token });

    const events = securityEvents(logs.lines).filter((e) => e.clientId === client.id);
    const names = new Set(events.map((e) => e.event));
    for (const name of [
      'login_succeeded',
      'consent_granted',
      'code_issued',
      'code_redeemed',
      'code_replayed',
      'refresh_token_rotated',
      'refresh_token_reuse_detected',
      'token_revoked',
    ]) {
      expect(names, name).toContain(name);
    }
    for (const event of events) {
      expect(typeof event.reqId).toBe('string');
      expect(typeof event.userId).toBe('number');
    }

    const secrets = [
      user.password,
      second.password,
      third.password,
      client.secret!,
      code,
      params.verifier,
      csrfToken,
      tokens.body.access_token,
      tokens.body.refresh_token,
      fresh.body.refresh_token,
      rotated.body.refresh_token,
      rotated.body.access_token,
      thirdTokens.body.refresh_token,
    ];
    for (const secret of secrets) expect(logs.text).not.toContain(secret);
  });
});
