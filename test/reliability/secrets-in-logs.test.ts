/**
 * What the service lets out. `secrets-at-rest.test.ts` runs the code flow against a server process; this suite
 * covers every other secret the service handles — registration secrets and registration access tokens, device and
 * user codes, DPoP proofs, ID Tokens sent back as `id_token_hint`, logout tokens, client assertions, page tokens,
 * session cookies and CSRF tokens — and forged ones sent to every face, at LOG_LEVEL=trace, then searches the log
 * for each. And the command line names a mistyped option without the value typed after it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { randomBytes } from 'node:crypto';
import { describeEachDatabase } from '../support/runtime.js';
import { runCli } from '../support/processes.js';
import { buildProduct } from '../support/factories.js';
import {
  authorizeParams,
  authorizePath,
  basic,
  Browser,
  buildClient,
  buildUser,
  codeFlowTokens,
  formAction,
  formFields,
  pathOf,
  redirectParams,
  tokenRequest,
} from '../support/oauth.js';
import { assertion, signingKey } from '../support/client-assertions.js';
import { dpopKey, dpopProof } from '../support/dpop.js';
import { startLogoutReceiver, type LogoutReceiver } from '../support/logout-receiver.js';
import { DEVICE_CODE_GRANT_TYPE } from '../../src/oauth/stores/clients.js';
import { CLIENT_ASSERTION_TYPE } from '../../src/oauth/client-assertion.js';
import { RegistrationTokenStore } from '../../src/oauth/stores/registration-tokens.js';

/** The forms a secret takes in a careless log line: as sent, URL-encoded, and a JWT's signature alone. */
function spellings(secret: string): string[] {
  const forms = new Set([secret, encodeURIComponent(secret), Buffer.from(secret).toString('base64')]);
  if (/^[\w-]+\.[\w-]+\.[\w-]+$/.test(secret)) forms.add(secret.split('.')[2]!);
  return [...forms].filter((form) => form.length >= 16);
}

const forged = () => `eyJhbGciOiJFUzI1NiJ9.${randomBytes(24).toString('base64url')}.${randomBytes(32).toString('base64url')}`;

describeEachDatabase(
  'no secret in the logs, whatever the face',
  (context) => {
    let receiver: LogoutReceiver;
    beforeAll(async () => {
      receiver = await startLogoutReceiver();
    });
    afterAll(() => receiver.close());

    it('writes none of the secrets of registration, device, DPoP, OpenID logout, assertion and paging flows, at trace level', async () => {
      const { app, runtime, logs, config } = context();
      /** name → value of every secret the run handled. */
      const secrets = new Map<string, string>();
      const keep = (name: string, value: unknown) => {
        expect(typeof value, name).toBe('string');
        secrets.set(name, value as string);
        return value as string;
      };
      const user = await buildUser(runtime);
      keep('password', user.password);
      await buildProduct(runtime.db);
      await buildProduct(runtime.db);

      // OpenID code flow with a back-channel logout receiver: ID Token, then /userinfo, a page token, /logout with the hint.
      const rp = await buildClient(runtime, {
        redirectUris: ['https://rp.example/cb'],
        oidc: { postLogoutRedirectUris: ['https://rp.example/out'], backchannelLogoutUri: `${receiver.url}/bc` },
      });
      keep('client secret', rp.secret);
      const browser = new Browser(app);
      const hinted = authorizeParams(rp, { scope: 'openid', login_hint: keep('login hint', 'hint-that-is-private') });
      const loginPage = await browser.open(authorizePath(hinted));
      keep('login CSRF token', formFields(loginPage.text).csrf_token);
      const openid = await codeFlowTokens(app, browser, rp, user, { scope: 'openid offline_access products:read' });
      expect(openid.status).toBe(200);
      keep('ID Token', openid.body.id_token);
      keep('OpenID access token', openid.body.access_token);
      keep('OpenID refresh token', openid.body.refresh_token);
      const sessionCookie = ([] as string[]).concat(loginPage.headers['set-cookie'] ?? []).find((c) => c.startsWith('fieldgate-session='));
      keep('session cookie', sessionCookie?.split(';')[0]!.slice('fieldgate-session='.length));
      const asUser = (path: string) => request(app).get(path).set('Authorization', `Bearer ${openid.body.access_token}`);
      expect((await asUser('/userinfo')).status).toBe(200);
      const page = await asUser('/products?page_size=1');
      expect(page.status).toBe(200);
      const pageToken = keep('page token', page.headers['next-page-token']);
      expect((await asUser(`/products?page_size=1&page_token=${encodeURIComponent(pageToken)}`)).status).toBe(200);
      const hint = { id_token_hint: openid.body.id_token, post_logout_redirect_uri: 'https://rp.example/out', state: 'st' };
      const confirm = await browser.open(`/logout?${new URLSearchParams(hint)}`);
      expect(confirm.status).toBe(200);
      keep('logout CSRF token', formFields(confirm.text).csrf_token);
      expect((await browser.submit(formAction(confirm.text), { ...formFields(confirm.text), decision: 'logout' })).status).toBe(303);
      await expect.poll(() => receiver.received.length).toBeGreaterThan(0);
      keep('logout token', receiver.received[0]!.token);

      // Dynamic registration (RFC 7591/7592): the secret and the registration access token, right and wrong.
      const registered = await request(app)
        .post('/register')
        .set('Content-Type', 'application/json')
        .send(JSON.stringify({ redirect_uris: ['https://reg.example/cb'], client_name: 'Registered' }));
      expect(registered.status).toBe(201);
      keep('registered client secret', registered.body.client_secret);
      keep('registration access token', registered.body.registration_access_token);
      const management = (token: string) => request(app).get(`/register/${registered.body.client_id}`).set('Authorization', `Bearer ${token}`);
      expect((await management(registered.body.registration_access_token)).status).toBe(200);
      expect((await management(`x${registered.body.registration_access_token}`)).status).toBe(401);
      keep('initial access token', (await new RegistrationTokenStore(runtime.db).create({ label: 'probe' })).token);

      // Device flow (RFC 8628): the device code, the user code in verification_uri_complete, the tokens.
      const tv = await buildClient(runtime, {
        name: 'TV',
        redirectUris: [],
        isPublic: true,
        grantTypes: [DEVICE_CODE_GRANT_TYPE, 'refresh_token'],
        scope: 'products:read',
      });
      const started = await request(app).post('/device_authorization').type('form').send({ client_id: tv.id });
      keep('device code', started.body.device_code);
      keep('user code', started.body.user_code);
      const device = new Browser(app);
      const verification = await device.open(pathOf(started.body.verification_uri_complete));
      let step = await device.open(pathOf((await device.signIn(verification, user.username, user.password)).headers.location!));
      step = await device.submit(formAction(step.text), formFields(step.text));
      step = await device.submit(formAction(step.text), { ...formFields(step.text), decision: 'allow' });
      const deviceTokens = await tokenRequest(app, { grant_type: DEVICE_CODE_GRANT_TYPE, device_code: started.body.device_code }, tv);
      expect(deviceTokens.status).toBe(200);
      keep('device access token', deviceTokens.body.access_token);
      keep('device refresh token', deviceTokens.body.refresh_token);

      // DPoP (RFC 9449) with a nonce round, and private_key_jwt (RFC 7523) at /token, /introspect and /revoke.
      const key = await signingKey();
      const keyClient = await buildClient(runtime, { tokenEndpointAuthMethod: 'private_key_jwt', jwks: { keys: [key.publicJwk] } });
      const params = authorizeParams(keyClient);
      const code = keep('code', redirectParams(await new Browser(app).authorize(params, user)).get('code'));
      keep('code verifier', params.verifier);
      const holder = await dpopKey();
      const htu = `${config.issuer}/token`;
      const withAssertion = async () => ({
        client_assertion_type: CLIENT_ASSERTION_TYPE,
        client_assertion: keep(`client assertion ${secrets.size}`, await assertion(keyClient.id, key)),
      });
      const exchange = async (nonce?: string) => {
        const proof = keep(`DPoP proof ${secrets.size}`, await dpopProof(holder, { htu, ...(nonce === undefined ? {} : { nonce }) }));
        const redemption = { grant_type: 'authorization_code', code, redirect_uri: keyClient.redirectUri, code_verifier: params.verifier };
        return request(app).post('/token').set('DPoP', proof).type('form').send({ ...redemption, ...(await withAssertion()) });
      };
      let bound = await exchange();
      if (bound.status === 400 && bound.headers['dpop-nonce']) bound = await exchange(bound.headers['dpop-nonce']);
      expect(bound.status).toBe(200);
      keep('DPoP-bound access token', bound.body.access_token);
      const resourceProof = await dpopProof(holder, { htm: 'GET', htu: `${config.issuer}/products`, accessToken: bound.body.access_token });
      keep('resource DPoP proof', resourceProof);
      expect((await request(app).get('/products').set('Authorization', `DPoP ${bound.body.access_token}`).set('DPoP', resourceProof)).status).toBe(200);
      await request(app).post('/introspect').type('form').send({ token: bound.body.access_token, ...(await withAssertion()) });
      await request(app).post('/revoke').type('form').send({ token: bound.body.access_token, ...(await withAssertion()) });

      // Forged and wrong secrets, at every face that takes one.
      const junk = keep('forged token', forged());
      for (const path of ['/products', '/orders', '/userinfo']) await request(app).get(path).set('Authorization', `Bearer ${junk}`);
      await request(app).post('/graphql').set('Authorization', `DPoP ${junk}`).set('DPoP', junk).send({ query: '{ __typename }' });
      await request(app).get(`/logout?id_token_hint=${junk}`);
      await request(app).get(`/device?user_code=${keep('wrong user code', 'WXYZ-ABCD-EFGH-IJKL')}`);
      await tokenRequest(app, { grant_type: 'refresh_token', refresh_token: junk }, rp);
      const wrongVerifier = keep('wrong verifier', randomBytes(32).toString('base64url'));
      await tokenRequest(app, { grant_type: 'authorization_code', code: junk, redirect_uri: rp.redirectUri, code_verifier: wrongVerifier }, rp);
      await tokenRequest(app, { grant_type: DEVICE_CODE_GRANT_TYPE, device_code: junk }, tv);
      const wrongSecret = keep('wrong secret', randomBytes(24).toString('base64url'));
      await request(app).post('/token').set('Authorization', basic(rp.id, wrongSecret)).type('form').send({ grant_type: 'client_credentials' });
      await request(app).post('/token').type('form').send({ grant_type: 'client_credentials', client_assertion_type: CLIENT_ASSERTION_TYPE, client_assertion: junk });
      await request(app).post('/introspect').set('Authorization', basic(rp.id, rp.secret!)).type('form').send({ token: junk });
      await request(app).post('/revoke').set('Authorization', basic(rp.id, rp.secret!)).type('form').send({ token: junk });
      await asUser(`/products?page_token=${junk}`);
      await request(app).get('/demo/callback').query({ code: junk, state: 'x' });
      await request(app).post('/register').set('Content-Type', 'application/json').send(`{"client_secret":"${junk}"`);

      // The log is real: every request's line and the security events of the run are in it.
      const text = logs.text;
      const events = new Set(logs.records().map((record) => record.event));
      const expected = ['login_succeeded', 'consent_granted', 'code_redeemed', 'logout', 'client_registered', 'device_code_issued', 'device_code_approved'];
      for (const event of [...expected, 'device_code_redeemed', 'client_authentication_failed']) expect(events, event).toContain(event);
      expect(text).toContain('"path":"/register/');
      expect(text).toContain('"path":"/device"');

      const found = [...secrets].flatMap(([name, value]) => spellings(value).filter((spelling) => text.includes(spelling)).map(() => name));
      expect(found).toEqual([]);
    });
  },
  { LOG_LEVEL: 'trace', REGISTRATION: 'open', BACKCHANNEL_LOGOUT_ALLOW_PRIVATE: 'true' },
);

describe('the command line names a mistake without the secret typed with it', () => {
  const PASSWORD = 'correct-horse-battery-staple';

  it('names an unknown option without its value (--password=… for --password-stdin)', async () => {
    const result = await runCli(['user', 'create', '--username', 'alice', `--password=${PASSWORD}`], { DATA_DIR: 'memory://' });
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe('fieldgate: user create: unknown option --password; did you mean --password-stdin?');
  });

  it('refuses a stray argument without quoting it (a password typed after --password-stdin)', async () => {
    const result = await runCli(['user', 'create', '--username', 'alice', '--password-stdin', PASSWORD], { DATA_DIR: 'memory://' });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/user create takes no arguments/);
    expect(result.stderr).not.toContain(PASSWORD);
  });
});
