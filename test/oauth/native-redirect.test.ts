/**
 * Native apps' loopback redirect URIs (RFC 8252 §7.3, RFC 9700 §4.1.3): a client registered
 * with `http://127.0.0.1/cb` or `http://[::1]/cb` may use any port at /authorize and /token,
 * because the app listens on whatever port the OS gives it. Only the port of a loopback IP
 * literal is relaxed; everything else is still compared exactly.
 */
import { beforeAll, expect, it } from 'vitest';
import request from 'supertest';
import { describeEachDatabase } from '../support/runtime.js';
import { authorizeParams, authorizePath, Browser, buildClient, buildUser, redirectParams, tokenRequest, type TestClient, type TestUser } from '../support/oauth.js';

describeEachDatabase('loopback redirect URIs of native apps', (context) => {
  let native: TestClient;
  let user: TestUser;

  beforeAll(async () => {
    native = await buildClient(context().runtime, {
      isPublic: true,
      redirectUris: ['http://127.0.0.1/cb', 'http://[::1]/cb', 'http://localhost:3000/cb'],
    });
    user = await buildUser(context().runtime);
  });

  it.each(['http://127.0.0.1:51234/cb', 'http://127.0.0.1:80/cb', 'http://[::1]:8080/cb', 'http://127.0.0.1/cb', 'http://127.0.0.1:05555/cb'])(
    'accepts %s at /authorize and /token',
    async (redirectUri) => {
      const params = authorizeParams(native, { redirect_uri: redirectUri });
      const res = await new Browser(context().app).authorize(params, user);
      expect(res.status).toBe(302);
      expect(res.headers.location!.startsWith(`${redirectUri}?`)).toBe(true);
      const code = redirectParams(res).get('code')!;
      const tokens = await tokenRequest(context().app, { grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: params.verifier }, native);
      expect(tokens.status).toBe(200);
    },
  );

  it('the token request must repeat the port the authorization request used', async () => {
    const params = authorizeParams(native, { redirect_uri: 'http://127.0.0.1:51234/cb' });
    const code = redirectParams(await new Browser(context().app).authorize(params, user)).get('code')!;
    const res = await tokenRequest(
      context().app,
      { grant_type: 'authorization_code', code, redirect_uri: 'http://127.0.0.1:51235/cb', code_verifier: params.verifier },
      native,
    );
    expect(res.body.error).toBe('invalid_grant');
  });

  it.each([
    ['another loopback address', 'http://127.0.0.2:5000/cb'],
    ['another path', 'http://127.0.0.1:5000/cb/other'],
    ['an extra query', 'http://127.0.0.1:5000/cb?x=1'],
    ['https instead of http', 'https://127.0.0.1:5000/cb'],
    ['a port out of range', 'http://127.0.0.1:99999/cb'],
    ['a name that starts like the literal', 'http://127.0.0.1.nip.io:5000/cb'],
    ['userinfo before the literal', 'http://127.0.0.1:5000@evil.example/cb'],
    ['localhost on another port (only IP literals are relaxed)', 'http://localhost:4000/cb'],
    ['port 0, which no app listens on', 'http://127.0.0.1:0/cb'],
    ['port 0 written with leading zeros', 'http://127.0.0.1:000/cb'],
    ['port 0 on the IPv6 loopback', 'http://[::1]:0/cb'],
  ])('refuses %s', async (_name, redirectUri) => {
    const res = await request(context().app).get(authorizePath(authorizeParams(native, { redirect_uri: redirectUri }))).redirects(0);
    expect(res.status).toBe(400);
    expect(res.headers.location).toBeUndefined();
    expect(res.text).toMatch(/not one this application registered/);
  });
});
