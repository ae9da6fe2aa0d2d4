/**
 * The /device verification pages (RFC 8628 §3.3), driven over HTTP like a browser: sign in
 * (and come back with the code), enter the code in any case with or without the dash or other
 * punctuation (§6.1), see the client and scopes, Allow or Deny — every form behind the session's
 * CSRF token — and the throttle on code guessing (§5.1), per user and per IP, holding under
 * concurrent guesses.
 */
import { beforeAll, expect, it } from 'vitest';
import request from 'supertest';
import { and, eq, sql } from 'drizzle-orm';
import { consents, deviceCodes } from '../../../src/db/schema.js';
import { sha256 } from '../../../src/crypto/secrets.js';
import { DEVICE_CODE_GRANT_TYPE } from '../../../src/oauth/stores/clients.js';
import { DEFAULT_DEVICE_CODE_THROTTLE_POLICY } from '../../../src/oauth/browser/device.js';
import { describeEachDatabase } from '../../support/runtime.js';
import { Browser, buildClient, buildUser, formAction, formFields, pathOf, tokenRequest, type TestClient, type TestUser } from '../../support/oauth.js';

const USER_LIMIT = DEFAULT_DEVICE_CODE_THROTTLE_POLICY.user.maxFailures;

let ipSequence = 0;
const freshIp = () => `198.51.100.${++ipSequence}`;

/** The attributes of the `<input>` named `name` on a page (a bare attribute maps to ''). */
function inputAttributes(page: string, name: string): Record<string, string> {
  const tag = new RegExp(`<input\\b[^>]*\\bname="${name}"[^>]*>`).exec(page)?.[0];
  if (!tag) throw new Error(`no input named ${name}`);
  return Object.fromEntries([...tag.slice(6, -1).matchAll(/([\w-]+)(?:="([^"]*)")?/g)].map((match) => [match[1]!, match[2] ?? '']));
}

const pageTitle = (page: string) => /<title>([^<]*)<\/title>/.exec(page)?.[1];

describeEachDatabase(
  'the /device verification pages',
  (context) => {
    let tv: TestClient;

    beforeAll(async () => {
      tv = await buildClient(context().runtime, {
        name: 'Living Room <TV>',
        redirectUris: [],
        isPublic: true,
        grantTypes: [DEVICE_CODE_GRANT_TYPE, 'refresh_token'],
        scope: 'products:read orders:read',
      });
    });

    async function startDevice(): Promise<{ device_code: string; user_code: string; verification_uri_complete: string }> {
      const res = await request(context().app).post('/device_authorization').type('form').send({ client_id: tv.id });
      expect(res.status).toBe(200);
      return res.body;
    }

    const poll = (deviceCode: string) => tokenRequest(context().app, { grant_type: DEVICE_CODE_GRANT_TYPE, device_code: deviceCode }, tv);

    function newBrowser(ip = freshIp()): Browser {
      const browser = new Browser(context().app);
      browser.agent.set('X-Forwarded-For', ip);
      return browser;
    }

    async function signedIn(user: TestUser, ip?: string): Promise<Browser> {
      const browser = newBrowser(ip);
      const page = await browser.open('/device');
      expect(page.status).toBe(200);
      const res = await browser.signIn(page, user.username, user.password);
      expect(res.status).toBe(303);
      return browser;
    }

    async function enterCode(browser: Browser, userCode: string) {
      const page = await browser.open('/device');
      expect(page.text).toContain('name="user_code"');
      return browser.submit(formAction(page.text), { ...formFields(page.text), user_code: userCode });
    }

    it('asks for the code as a one-time code in capitals (autocomplete, inputmode, autocapitalize), labelled and focused', async () => {
      const browser = await signedIn(await buildUser(context().runtime));
      const page = await browser.open('/device');
      expect(pageTitle(page.text)).toBe('Connect a device · Fieldgate');
      expect(inputAttributes(page.text, 'user_code')).toMatchObject({
        id: 'user_code',
        autocomplete: 'one-time-code',
        inputmode: 'text',
        autocapitalize: 'characters',
        spellcheck: 'false',
        required: '',
        autofocus: '',
      });
      expect(page.text).toContain('<label for="user_code">');
    });

    it('a wrong code: "Code not accepted" in the title, the error announced and tied to the focused field', async () => {
      const browser = await signedIn(await buildUser(context().runtime));
      const res = await enterCode(browser, 'BCDF-GHJK');
      expect(res.status).toBe(400);
      expect(pageTitle(res.text)).toBe('Code not accepted · Fieldgate');
      expect(res.text).toMatch(/<p class="alert" role="alert" id="form-error">That code is not valid/);
      expect(inputAttributes(res.text, 'user_code')).toMatchObject({ 'aria-invalid': 'true', 'aria-describedby': 'form-error', autofocus: '', value: 'BCDF-GHJK' });
    });

    it('the device sign-in form: autocomplete for password managers, and a wrong password tied to its fields', async () => {
      const user = await buildUser(context().runtime);
      const browser = newBrowser();
      const page = await browser.open('/device');
      expect(inputAttributes(page.text, 'username')).toMatchObject({ autocomplete: 'username' });
      expect(inputAttributes(page.text, 'password')).toMatchObject({ autocomplete: 'current-password' });
      const failed = await browser.signIn(page, user.username, 'not-the-password');
      expect(pageTitle(failed.text)).toBe('Sign-in failed · Fieldgate');
      expect(inputAttributes(failed.text, 'password')).toMatchObject({ 'aria-invalid': 'true', 'aria-describedby': 'form-error', autofocus: '' });
    });

    it('signs a signed-out user in first and comes back with the code from verification_uri_complete', async () => {
      const user = await buildUser(context().runtime);
      const started = await startDevice();
      const browser = newBrowser();
      const page = await browser.open(pathOf(started.verification_uri_complete));
      expect(page.status).toBe(200);
      expect(page.headers['cache-control']).toBe('no-store');
      expect(page.headers['content-security-policy']).toMatch(/form-action 'self'/);
      expect(page.text).toContain('name="password"');
      expect(formFields(page.text).user_code).toBe(started.user_code);

      const signIn = await browser.signIn(page, user.username, user.password);
      expect(signIn.status).toBe(303);
      expect(signIn.headers.location).toBe(`${context().config.issuer}/device?user_code=${started.user_code}`);
      const codeForm = await browser.open(pathOf(signIn.headers.location!));
      expect(codeForm.text).toContain(user.username);
      expect(formFields(codeForm.text).user_code).toBe(started.user_code);
    });

    it('sends a stale copy of the sign-in form, from a browser signed in since, on to the code form with its code', async () => {
      const user = await buildUser(context().runtime);
      const started = await startDevice();
      const browser = newBrowser();
      const first = await browser.open(pathOf(started.verification_uri_complete));
      expect((await browser.signIn(first, user.username, user.password)).status).toBe(303);
      const again = await browser.signIn(first, user.username, user.password);
      expect(again.status).toBe(303);
      expect(again.headers.location).toBe(`${context().config.issuer}/device?user_code=${started.user_code}`);
      expect((await browser.open(pathOf(again.headers.location!))).text).toContain(user.username);
    });

    it('shows the sign-in form again for wrong credentials, keeping the code', async () => {
      const browser = newBrowser();
      const page = await browser.open('/device?user_code=BCDF-GHJK');
      const res = await browser.signIn(page, 'nobody-here', 'wrong password');
      expect(res.status).toBe(401);
      expect(res.text).toContain('The username or password is incorrect.');
      expect(formFields(res.text).user_code).toBe('BCDF-GHJK');
    });

    it('takes the code in any case, without the dash, shows client and scopes escaped, and Allow lets the device poll tokens', async () => {
      const { runtime } = context();
      const user = await buildUser(runtime);
      const browser = await signedIn(user);
      const started = await startDevice();
      const consent = await enterCode(browser, ` ${started.user_code.replace('-', '').toLowerCase()} `);
      expect(consent.status).toBe(200);
      expect(consent.text).toContain('Living Room &lt;TV&gt;');
      expect(consent.text).not.toContain('<TV>');
      expect(consent.text).toContain(started.user_code);
      expect(consent.text).toContain('See the product catalogue');
      expect(consent.text).toContain('See your orders');

      expect((await poll(started.device_code)).body.error).toBe('authorization_pending');
      const done = await browser.decide(consent, 'allow');
      expect(done.status).toBe(200);
      expect(done.text).toContain('Device connected');

      await runtime.db.update(deviceCodes).set({ lastPolledAt: null }).where(eq(deviceCodes.deviceCodeHash, sha256(started.device_code)));
      const tokens = await poll(started.device_code);
      expect(tokens.status).toBe(200);
      expect(tokens.body.scope).toBe('products:read orders:read');
      expect((await runtime.accessTokens.verify(tokens.body.access_token)).userId).toBe(user.id);
      const [consentRow] = await runtime.db.select().from(consents).where(and(eq(consents.userId, user.id), eq(consents.clientId, tv.id)));
      expect(consentRow?.scope.split(' ').sort()).toEqual(['orders:read', 'products:read']);
    });

    it('ignores the spaces and punctuation a phone or a paste puts in the code, and full-width letters (RFC 8628 §6.1)', async () => {
      const browser = await signedIn(await buildUser(context().runtime));
      const started = await startDevice();
      const [head, tail] = started.user_code.split('-') as [string, string];
      const fullWidth = (text: string) => [...text].map((char) => String.fromCodePoint(char.codePointAt(0)! + 0xfee0)).join('');
      const variants = [
        `${head}\u2013${tail}`, // en dash
        `${head}\u2010${tail}`, // hyphen
        `${head}.${tail}`,
        `${head}_${tail}`,
        `${head}\u00a0${tail}`, // no-break space
        `\u200b${head}\u200b${tail}`, // zero-width spaces from a paste
        fullWidth(`${head}-${tail}`),
      ];
      for (const typed of variants) {
        const consent = await enterCode(browser, typed);
        expect(consent.status, JSON.stringify(typed)).toBe(200);
        expect(formFields(consent.text).user_code).toBe(started.user_code);
      }
      // A letter or digit outside the code's alphabet is no punctuation: the code is not valid.
      expect((await enterCode(browser, `${head}-${tail.slice(0, 3)}A`)).status).toBe(400);
    });

    it('Deny makes the device hear access_denied', async () => {
      const browser = await signedIn(await buildUser(context().runtime));
      const started = await startDevice();
      const consent = await enterCode(browser, started.user_code);
      const done = await browser.decide(consent, 'deny');
      expect(done.status).toBe(200);
      expect(done.text).toContain('Access denied');
      expect((await poll(started.device_code)).body.error).toBe('access_denied');
    });

    it('refuses every form without the CSRF token of this session (403), and decides nothing', async () => {
      const user = await buildUser(context().runtime);
      const browser = await signedIn(user);
      const attacker = await signedIn(await buildUser(context().runtime));
      const started = await startDevice();
      const consent = await enterCode(browser, started.user_code);
      const fields = formFields(consent.text);

      const missing = await browser.submit(formAction(consent.text), { ...fields, csrf_token: '', decision: 'allow' });
      expect(missing.status).toBe(403);
      expect(missing.text).toContain('This form has expired');
      const foreignToken = formFields((await attacker.open('/device')).text).csrf_token!;
      const forged = await browser.submit(formAction(consent.text), { ...fields, csrf_token: foreignToken, decision: 'allow' });
      expect(forged.status).toBe(403);
      // A cross-site post carries the victim's cookies but cannot know the token.
      const crossSite = await browser.submit(`${context().config.issuer}/device/consent`, { user_code: started.user_code, client_id: tv.id, decision: 'allow' });
      expect(crossSite.status).toBe(403);
      expect((await browser.submit(`${context().config.issuer}/device`, { user_code: started.user_code })).status).toBe(403);
      // A sign-in form without its token, from a browser already signed in, signs nobody in: it only goes back to /device.
      const login = await browser.submit(`${context().config.issuer}/device/login`, { username: user.username, password: user.password });
      expect(login.status).toBe(303);
      expect(login.headers.location).toBe(`${context().config.issuer}/device`);
      expect(login.headers['set-cookie']?.toString() ?? '').not.toContain('fieldgate-session=');

      expect((await poll(started.device_code)).body.error).toBe('authorization_pending');
    });

    it('says a wrong, malformed, expired or already used code is not valid (400), escaping what was typed', async () => {
      const { runtime } = context();
      const browser = await signedIn(await buildUser(runtime));
      const wrong = await enterCode(browser, 'BCDF-GHJK');
      expect(wrong.status).toBe(400);
      expect(wrong.text).toContain('That code is not valid, or it has expired.');
      const hostile = await enterCode(browser, '"><script>alert(1)</script>');
      expect(hostile.status).toBe(400);
      expect(hostile.text).not.toContain('<script>alert');

      const expired = await startDevice();
      await runtime.db.update(deviceCodes).set({ expiresAt: sql`now() - interval '1 second'` }).where(eq(deviceCodes.deviceCodeHash, sha256(expired.device_code)));
      expect((await enterCode(browser, expired.user_code)).status).toBe(400);

      const used = await startDevice();
      await browser.decide(await enterCode(browser, used.user_code), 'allow');
      expect((await enterCode(browser, used.user_code)).status).toBe(400);
    });

    it('decides only for the client the user was shown', async () => {
      const browser = await signedIn(await buildUser(context().runtime));
      const started = await startDevice();
      const consent = await enterCode(browser, started.user_code);
      const res = await browser.submit(formAction(consent.text), { ...formFields(consent.text), client_id: 'another-client', decision: 'allow' });
      expect(res.status).toBe(400);
      expect((await poll(started.device_code)).body.error).toBe('authorization_pending');
    });

    it(`locks a user out after ${USER_LIMIT} codes tried in the window (429 with Retry-After), real codes included`, async () => {
      const user = await buildUser(context().runtime);
      const browser = await signedIn(user);
      for (let i = 0; i < USER_LIMIT; i++) expect((await enterCode(browser, 'BCDF-GHJK')).status).toBe(400);
      const started = await startDevice();
      const locked = await enterCode(browser, started.user_code);
      expect(locked.status).toBe(429);
      expect(Number(locked.headers['retry-after'])).toBeGreaterThan(0);
      expect(locked.text).toContain('Too many codes were tried');
      // The same user from another address is still locked; another user is not.
      expect((await enterCode(await signedIn(user), started.user_code)).status).toBe(429);
      expect((await enterCode(await signedIn(await buildUser(context().runtime)), started.user_code)).status).toBe(200);
    });

    it('does not count real codes against the user', async () => {
      const browser = await signedIn(await buildUser(context().runtime));
      for (let i = 0; i < USER_LIMIT + 2; i++) {
        const started = await startDevice();
        expect((await enterCode(browser, started.user_code)).status).toBe(200);
      }
    });

    it('checks no more than the per-user limit of 40 concurrent guesses by one user', async () => {
      const browser = await signedIn(await buildUser(context().runtime));
      const page = await browser.open('/device');
      const fields = formFields(page.text);
      const guesses = await Promise.all(
        Array.from({ length: 40 }, (_, i) => browser.submit(formAction(page.text), { ...fields, user_code: `BCDF-${'GHJKLMNPQRSTVWXZ'.slice(i % 12, (i % 12) + 4)}` })),
      );
      expect(guesses.filter((res) => res.status === 400).length).toBeLessThanOrEqual(USER_LIMIT);
      expect(guesses.filter((res) => res.status === 429).length).toBeGreaterThanOrEqual(40 - USER_LIMIT);
    });

    it('locks an IP trying codes for many accounts', async () => {
      const ip = freshIp();
      const limit = DEFAULT_DEVICE_CODE_THROTTLE_POLICY.ip.maxFailures;
      const users = await Promise.all(Array.from({ length: Math.ceil(limit / USER_LIMIT) + 1 }, () => buildUser(context().runtime)));
      let tried = 0;
      let lockedAt: number | undefined;
      for (const user of users) {
        const browser = await signedIn(user, ip);
        for (let i = 0; i < USER_LIMIT && lockedAt === undefined; i++) {
          const res = await enterCode(browser, 'BCDF-GHJK');
          tried++;
          if (res.status === 429) lockedAt = tried;
        }
      }
      expect(lockedAt).toBe(limit + 1);
    });

    it('shows the sign-in form once the account is gone, and answers other methods with 405', async () => {
      const { runtime } = context();
      const user = await buildUser(runtime);
      const browser = await signedIn(user);
      await runtime.users.delete(user.username);
      expect((await browser.open('/device')).text).toContain('name="password"');
      const put = await request(context().app).put('/device');
      expect(put.status).toBe(405);
      expect(put.headers.allow).toBe('GET, HEAD, POST');
      expect((await request(context().app).get('/device/consent')).status).toBe(405);
    });
  },
  { TRUST_PROXY: 'loopback' },
);
