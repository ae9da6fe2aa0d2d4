/**
 * How identifiers are compared, through the real app: redirect URIs at /register, /authorize and /token (RFC 9700 §4.1.3
 * simple string comparison; RFC 8252 §7.3 any port for a loopback IP literal), client IDs that are metadata document URLs
 * (their normalized spelling, a document naming exactly itself), pairwise sectors (OIDC Core §8.1), usernames at the sign-in
 * page, and scope strings (RFC 6749 §3.3). Every spelling either means the registered thing or gets a clear error; an
 * untrusted redirect URI is never redirected to.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { decodeJwt } from 'jose';
import { describeEachDatabase } from '../support/runtime.js';
import {
  authorizeParams,
  authorizePath,
  Browser,
  buildClient,
  buildUser,
  obtainTokens,
  redirectParams,
  tokenRequest,
  type TestClient,
  type TestUser,
} from '../support/oauth.js';

function refusedOnOurPage(res: request.Response): void {
  expect(res.status, res.text.slice(0, 300)).toBe(400);
  expect(res.headers.location).toBeUndefined();
  expect(res.text).toMatch(/not one this application registered/);
}

describeEachDatabase(
  'identifier matching',
  (context) => {
    const register = (body: Record<string, unknown>) => request(context().app).post('/register').set('Content-Type', 'application/json').send(JSON.stringify(body));
    const registerUris = (redirectUris: string[], extra: Record<string, unknown> = {}) =>
      register({ redirect_uris: redirectUris, token_endpoint_auth_method: 'none', ...extra });
    const selfRegistered = (id: string, redirectUris: string[]): TestClient => ({ id, secret: undefined, redirectUri: redirectUris[0]!, redirectUris, name: 'Self', isPublic: true });

    let web: TestClient;
    let native: TestClient;
    let user: TestUser;

    beforeAll(async () => {
      const { runtime } = context();
      web = await buildClient(runtime, { redirectUris: ['https://good.example/cb', 'https://good.example/a%7Eb', 'https://good.example/q?x=1'] });
      native = await buildClient(runtime, { isPublic: true, redirectUris: ['http://127.0.0.1/cb', 'http://[::1]/cb', 'http://localhost/cb'] });
      user = await buildUser(runtime, { username: 'alice.identifiers' });
    });

    // --- redirect_uri at /authorize --------------------------------------------------------------------------------------

    it.each([
      ['an uppercase scheme', 'HTTPS://good.example/cb'],
      ['an uppercase host', 'https://GOOD.example/cb'],
      ['an uppercase path', 'https://good.example/CB'],
      ['a trailing slash', 'https://good.example/cb/'],
      ['the default port made explicit', 'https://good.example:443/cb'],
      ['a dot segment that resolves to the registered path', 'https://good.example/x/../cb'],
      ['a dot segment after the registered path', 'https://good.example/cb/../evil'],
      ['~ where %7E was registered', 'https://good.example/a~b'],
      ['%7e where %7E was registered', 'https://good.example/a%7eb'],
      ['an encoded slash', 'https://good.example%2Fcb'],
      ['a fragment', 'https://good.example/cb#x'],
      ['an extra query parameter', 'https://good.example/q?x=1&y=2'],
      ['a query where none was registered', 'https://good.example/cb?x=1'],
      ['userinfo naming the registered host', 'https://good.example@evil.example/cb'],
      ['userinfo before the registered host', 'https://x@good.example/cb'],
      ['surrounding spaces', ' https://good.example/cb '],
    ])('refuses %s on its own page, never redirecting', async (_name, redirectUri) => {
      refusedOnOurPage(await request(context().app).get(authorizePath(authorizeParams(web, { redirect_uri: redirectUri }))).redirects(0));
    });

    it.each([
      ['127.1', 'http://127.1:5000/cb'],
      ['0x7f.1', 'http://0x7f.1:5000/cb'],
      ['2130706433', 'http://2130706433:5000/cb'],
      ['the long form of [::1]', 'http://[0:0:0:0:0:0:0:1]:5000/cb'],
      ['an uppercase scheme', 'HTTP://127.0.0.1:5000/cb'],
      ['a trailing slash', 'http://127.0.0.1:5000/cb/'],
      ['an extra query', 'http://[::1]:5000/cb?x'],
      ['a backslash path', 'http://127.0.0.1:5000\\cb'],
      ['localhost on another port (only IP literals are relaxed)', 'http://localhost:5000/cb'],
      ['LOCALHOST', 'http://LOCALHOST/cb'],
    ])('compares a loopback redirect URI exactly but for the port: refuses %s', async (_name, redirectUri) => {
      refusedOnOurPage(await request(context().app).get(authorizePath(authorizeParams(native, { redirect_uri: redirectUri }))).redirects(0));
    });

    it('accepts the registered spellings, and any port on a loopback IP literal registered without one', async () => {
      for (const [client, redirectUri] of [
        [web, 'https://good.example/a%7Eb'],
        [web, 'https://good.example/q?x=1'],
        [native, 'http://127.0.0.1:51000/cb'],
        [native, 'http://[::1]:51000/cb'],
        [native, 'http://localhost/cb'],
      ] as const) {
        const res = await new Browser(context().app).authorize(authorizeParams(client, { redirect_uri: redirectUri }), user);
        expect(res.status).toBe(302);
        expect(res.headers.location!.startsWith(`${redirectUri}${redirectUri.includes('?') ? '&' : '?'}code=`)).toBe(true);
      }
    });

    it('a private-use scheme is compared exactly: com.example.app:/cb is not com.example.app://cb nor COM.EXAMPLE.APP:/cb', async () => {
      const res = await registerUris(['com.example.app:/cb'], { scope: 'products:read' });
      expect(res.status, res.text).toBe(201);
      const app = selfRegistered(res.body.client_id, ['com.example.app:/cb']);
      for (const redirectUri of ['com.example.app://cb', 'COM.EXAMPLE.APP:/cb', 'com.example.app:cb']) {
        refusedOnOurPage(await request(context().app).get(authorizePath(authorizeParams(app, { redirect_uri: redirectUri }))).redirects(0));
      }
      const ok = await new Browser(context().app).authorize(authorizeParams(app, { scope: 'products:read' }), user);
      expect(ok.headers.location).toMatch(/^com\.example\.app:\/cb\?code=/);
    });

    it('without redirect_uri: the one registered URI is used; with several registered the request is refused on our page', async () => {
      const one = await buildClient(context().runtime, { redirectUris: ['https://only.example/cb'] });
      const res = await new Browser(context().app).authorize(authorizeParams(one, { redirect_uri: undefined }), user);
      expect(res.headers.location).toMatch(/^https:\/\/only\.example\/cb\?code=/);
      const several = await request(context().app).get(authorizePath(authorizeParams(web, { redirect_uri: undefined }))).redirects(0);
      expect(several.status).toBe(400);
      expect(several.headers.location).toBeUndefined();
      expect(several.text).toMatch(/more than one/);
    });

    it('the token request must repeat the redirect_uri exactly: another spelling is invalid_grant', async () => {
      for (const spelling of ['https://good.example/a~b', 'https://good.example/a%7eb', 'https://GOOD.example/a%7Eb', 'https://good.example:443/a%7Eb']) {
        const params = authorizeParams(web, { redirect_uri: 'https://good.example/a%7Eb' });
        const code = redirectParams(await new Browser(context().app).authorize(params, user)).get('code')!;
        const res = await tokenRequest(context().app, { grant_type: 'authorization_code', code, redirect_uri: spelling, code_verifier: params.verifier }, web);
        expect(res.status).toBe(400);
        expect(res.body.error).toBe('invalid_grant');
      }
    });

    // --- redirect_uris at /register ------------------------------------------------------------------------------------

    it.each([
      ['http on a public host', 'http://good.example/cb'],
      ['a fragment', 'https://good.example/cb#x'],
      ['an empty fragment', 'https://good.example/cb#'],
      ['credentials', 'https://good@evil.example/cb'],
      ['an IDN host not in punycode', 'https://bücher.example/cb'],
      ['a name that merely starts with localhost', 'http://localhost.evil.example/cb'],
      ['an IPv4-mapped loopback', 'http://[::ffff:127.0.0.1]/cb'],
    ])('/register refuses %s with invalid_redirect_uri', async (_name, uri) => {
      const res = await registerUris([uri]);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_redirect_uri');
    });

    // Fixed: "https://@evil.example/cb" has userinfo, though empty; it was stored and redirected to as it was.
    it.each([['https://@evil.example/cb'], ['https://:@evil.example/cb'], ['com.example.app://@cb.example/cb']])(
      '/register refuses the empty userinfo of %s (no credentials, however spelled)',
      async (uri) => {
        const res = await registerUris([uri]);
        expect(res.status, res.text).toBe(400);
        expect(res.body).toMatchObject({ error: 'invalid_redirect_uri', error_description: expect.stringContaining('credentials') });
        const logout = await registerUris(['https://rp.example/cb'], { post_logout_redirect_uris: [uri.replace('com.example.app', 'https')] });
        expect(logout.body.error).toBe('invalid_client_metadata');
      },
    );

    // Fixed: these name a loopback IP, so /register took them as loopback redirect URIs, but /authorize relaxes the port
    // only of http://127.x.y.z and http://[::1] written so (RFC 8252 §7.3): the app registered a URI it could not use on
    // the port it was given. Now a clear invalid_redirect_uri at registration.
    it.each([
      ['http://127.1/cb'],
      ['http://0x7f.1/cb'],
      ['http://2130706433/cb'],
      ['http://127.0.0.01/cb'],
      ['http://[0:0:0:0:0:0:0:1]/cb'],
      ['http://[0::1]/cb'],
      ['HTTP://127.0.0.1/cb'],
      ['http:127.0.0.1/cb'],
      ['http://127.0.0.1:/cb'],
      ['http://127.0.0.1%2e/cb'],
      ['http://127.0.0.1\\cb'],
    ])('/register refuses the loopback IP literal spelled %s, whose port /authorize could not relax', async (uri) => {
      const res = await registerUris([uri]);
      expect(res.status, res.text).toBe(400);
      expect(res.body).toMatchObject({ error: 'invalid_redirect_uri', error_description: expect.stringContaining('127.0.0.1') });
    });

    it('/register keeps a loopback redirect URI written as RFC 8252 §7.3 writes it, and /authorize then takes any port', async () => {
      for (const uri of ['http://127.0.0.1/cb', 'http://127.0.0.1:8080/cb', 'http://[::1]/cb', 'http://127.0.0.2?x=1', 'http://localhost:3000/cb']) {
        const res = await registerUris([uri], { scope: 'products:read' });
        expect(res.status, `${uri}: ${res.text}`).toBe(201);
        expect(res.body.redirect_uris).toEqual([uri]);
      }
      const res = await registerUris(['http://127.0.0.1/cb'], { scope: 'products:read' });
      const client = selfRegistered(res.body.client_id, ['http://127.0.0.1/cb']);
      const ok = await new Browser(context().app).authorize(authorizeParams(client, { redirect_uri: 'http://127.0.0.1:49152/cb', scope: 'products:read' }), user);
      expect(ok.headers.location).toMatch(/^http:\/\/127\.0\.0\.1:49152\/cb\?code=/);
    });

    it('an IDN host is registered in its punycode form, and its Unicode spelling is another redirect URI', async () => {
      expect((await registerUris(['https://bücher.example/cb'])).body.error).toBe('invalid_redirect_uri');
      const res = await registerUris(['https://xn--bcher-kva.example/cb'], { scope: 'products:read' });
      expect(res.status, res.text).toBe(201);
      const client = selfRegistered(res.body.client_id, ['https://xn--bcher-kva.example/cb']);
      for (const redirectUri of ['https://bücher.example/cb', 'https://XN--BCHER-KVA.example/cb']) {
        refusedOnOurPage(await request(context().app).get(authorizePath(authorizeParams(client, { redirect_uri: redirectUri, scope: 'products:read' }))).redirects(0));
      }
    });

    it('/register stores the redirect URI as sent and /authorize compares against exactly that string', async () => {
      const registered = ['https://good.example/a%7eb', 'https://good.example/cb?', 'https://*.example.com/cb'];
      const res = await registerUris(registered, { scope: 'products:read' });
      expect(res.status, res.text).toBe(201);
      expect(res.body.redirect_uris).toEqual(registered);
      const client = selfRegistered(res.body.client_id, registered);
      // A "*" is a character, not a wildcard.
      for (const redirectUri of ['https://good.example/a%7Eb', 'https://good.example/cb', 'https://app.example.com/cb']) {
        refusedOnOurPage(await request(context().app).get(authorizePath(authorizeParams(client, { redirect_uri: redirectUri, scope: 'products:read' }))).redirects(0));
      }
    });

    // --- pairwise sectors ------------------------------------------------------------------------------------------------

    // Fixed: the sector of a pairwise client is its redirect URIs' host (OIDC Core §8.1). A private-use scheme has none and
    // every native app shares the loopback host, so any self-registered app could claim the same sector as another one and
    // be given the same pairwise `sub` for a user: the correlation pairwise is there to prevent.
    it.each([[['com.photos.app:/cb']], [['http://127.0.0.1/cb']], [['http://[::1]/cb']], [['http://localhost/cb']], [['http://127.0.0.1/cb', 'http://[::1]/cb']]])(
      '/register refuses pairwise over %j, a sector anyone can claim',
      async (redirectUris) => {
        const res = await registerUris(redirectUris, { subject_type: 'pairwise', scope: 'openid' });
        expect(res.status, res.text).toBe(400);
        expect(res.body).toMatchObject({ error: 'invalid_client_metadata', error_description: expect.stringContaining('subject_type') });
      },
    );

    it('pairwise over an https host still gives one user different subs on different hosts', async () => {
      const subOf = async (redirectUri: string) => {
        const res = await registerUris([redirectUri], { subject_type: 'pairwise', scope: 'openid' });
        expect(res.status, res.text).toBe(201);
        const tokens = (await obtainTokens(context().app, context().runtime, selfRegistered(res.body.client_id, [redirectUri]), user, { scope: 'openid' })) as { id_token?: string };
        return decodeJwt(tokens.id_token!).sub;
      };
      expect(await subOf('https://photos.example/cb')).not.toBe(await subOf('https://prints.example/cb'));
    });

    // --- client IDs that are metadata document URLs ----------------------------------------------------------------------

    describe('client ID metadata documents', () => {
      let server: http.Server;
      let base: string;
      const served = new Map<string, unknown>();

      beforeAll(async () => {
        server = http.createServer((req, res) => {
          const body = served.get(req.url!);
          if (body === undefined) res.writeHead(404).end();
          else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
        });
        // A port the system picks: a fixed one in the ephemeral range can be taken by another suite's connection.
        await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
        base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      });

      afterAll(async () => {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      });

      const documentAt = (path: string, clientId: string) =>
        served.set(path, { client_id: clientId, client_name: 'Doc Agent', redirect_uris: ['http://127.0.0.1/callback'], token_endpoint_auth_method: 'none', scope: 'products:read' });
      const authorizeAs = (clientId: string) =>
        request(context().app).get(authorizePath({ response_type: 'code', client_id: clientId, redirect_uri: 'http://127.0.0.1:5000/callback', scope: 'products:read', code_challenge: 'a'.repeat(43), code_challenge_method: 'S256' })).redirects(0);

      it('refuses, on its own page, a client_id URL not in its normalized form (one client, one spelling)', async () => {
        const port = new URL(base).port;
        documentAt('/c/agent.json', `${base}/c/agent.json`);
        expect((await authorizeAs(`${base}/c/agent.json`)).status).toBe(200);
        for (const spelling of [`HTTP://127.0.0.1:${port}/c/agent.json`, `http://127.1:${port}/c/agent.json`, `${base}/c/./agent.json`, `${base}/x/../c/agent.json`, `${base}/c/agent.json#f`, `http://u@127.0.0.1:${port}/c/agent.json`]) {
          const res = await authorizeAs(spelling);
          expect(res.status, spelling).toBe(400);
          expect(res.headers.location).toBeUndefined();
        }
      });

      it('a document must name exactly the URL it was fetched from: a trailing slash or another percent-encoding is another client', async () => {
        documentAt('/d/agent/', `${base}/d/agent`);
        documentAt('/d/a%7Eb', `${base}/d/a~b`);
        for (const clientId of [`${base}/d/agent/`, `${base}/d/a%7Eb`]) {
          const res = await authorizeAs(clientId);
          expect(res.status, clientId).toBe(400);
          expect(res.headers.location).toBeUndefined();
          expect(res.text).toMatch(/client_id equal to its own URL/);
        }
      });
    });

    // --- usernames ---------------------------------------------------------------------------------------------------------

    it.each([
      ['another case', 'Alice.Identifiers'],
      ['fullwidth letters', 'ａｌｉｃｅ.identifiers'],
      ['a zero-width space', 'alice.identifiers\u200b'],
      ['a dotless i', 'alıce.identifiers'],
      ['a dotted capital I', 'alİce.identifiers'],
      ['a Cyrillic a', '\u0430lice.identifiers'],
    ])('a username spelled with %s is not the account', async (_name, username) => {
      const browser = new Browser(context().app);
      const page = await browser.open(authorizePath(authorizeParams(web)));
      const res = await browser.signIn(page, username, user.password);
      expect(res.status).toBe(401);
      expect(res.text).toMatch(/username or password is incorrect/);
    });

    it('a username with surrounding whitespace is the account, as `user create` trims it', async () => {
      const browser = new Browser(context().app);
      const page = await browser.open(authorizePath(authorizeParams(web)));
      const res = await browser.signIn(page, `  ${user.username}\t`, user.password);
      expect(res.status).toBe(303);
    });

    it('user creation refuses what the sign-in page could not match: non-ASCII, invisible characters', async () => {
      for (const username of ['ａｌｉｃｅ', 'alıce', 'e\u0301mile', 'a\u200bb']) {
        await expect(context().runtime.users.create(username, 'long enough password')).rejects.toThrow(/letters, digits/);
      }
    });

    // --- scope strings -----------------------------------------------------------------------------------------------------

    it.each([
      ['a tab', 'products:read\topenid'],
      ['a newline', 'products:read\nopenid'],
      ['a no-break space', 'products:read\u00a0openid'],
      ['a plus', 'products:read+openid'],
      ['a comma', 'products:read,openid'],
      ['another case', 'PRODUCTS:READ'],
    ])('a scope string with %s is invalid_scope, sent to the registered redirect URI', async (_name, scope) => {
      const res = await request(context().app).get(authorizePath(authorizeParams(web, { scope, state: 's' }))).redirects(0);
      expect(res.status).toBe(302);
      const params = redirectParams(res);
      expect(params.get('error')).toBe('invalid_scope');
      expect(params.get('state')).toBe('s');
      expect(res.headers.location!.startsWith('https://good.example/cb?')).toBe(true);
    });

    it('a repeated scope and extra spaces are read as the set of scopes named', async () => {
      const params = authorizeParams(web, { scope: ' products:read  products:read ' });
      const res = await new Browser(context().app).authorize(params, user);
      const code = redirectParams(res).get('code')!;
      const tokens = await tokenRequest(context().app, { grant_type: 'authorization_code', code, redirect_uri: web.redirectUri, code_verifier: params.verifier }, web);
      expect(tokens.status).toBe(200);
      expect(tokens.body.scope).toBe('products:read');
    });
  },
  { REGISTRATION: 'open', REGISTRATION_RATE_LIMIT: '10000', CIMD_ALLOW_PRIVATE: 'true' },
);
