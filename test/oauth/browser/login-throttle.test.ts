/**
 * Login throttling: per account and per IP, counted in the database, with the
 * same answer for unknown and real accounts, and a clear message.
 */
import { beforeAll, beforeEach, expect, it } from 'vitest';
import { like, sql } from 'drizzle-orm';
import { createApp } from '../../../src/app.js';
import { createLogger } from '../../../src/logger.js';
import { openRuntime } from '../../../src/runtime.js';
import { loginThrottle } from '../../../src/db/schema.js';
import { DEFAULT_LOGIN_THROTTLE_POLICY, LoginThrottle } from '../../../src/oauth/browser/login-throttle.js';
import { describeEachDatabase } from '../../support/runtime.js';
import {
  authorizeParams,
  authorizePath,
  Browser,
  buildClient,
  buildUser,
  formAction as formActionOf,
  formFields as formFieldsOf,
  pathOf,
  securityEvents,
  type TestClient,
} from '../../support/oauth.js';

const ACCOUNT_LIMIT = DEFAULT_LOGIN_THROTTLE_POLICY.account.maxFailures;
const IP_LIMIT = DEFAULT_LOGIN_THROTTLE_POLICY.ip.maxFailures;
const LOCKED = /Too many failed sign-in attempts\. Try again in \d+ minutes?\./;

function alert(text: string): string | undefined {
  return /<p class="alert" role="alert"[^>]*>([^<]*)<\/p>/.exec(text)?.[1];
}

describeEachDatabase('login throttle per account', (context) => {
  let client: TestClient;

  beforeAll(async () => {
    client = await buildClient(context().runtime);
  });

  // Every request here comes from 127.0.0.1: keep this suite's failures from adding up to the IP lock.
  beforeEach(async () => {
    await context().runtime.db.delete(loginThrottle).where(like(loginThrottle.key, 'ip:%'));
  });

  async function failTimes(browser: Browser, username: string, times: number) {
    const page = await browser.open(authorizePath(authorizeParams(client)));
    const answers = [];
    for (let i = 0; i < times; i++) answers.push(await browser.signIn(page, username, `wrong-${i}`));
    return { page, answers };
  }

  it(`locks an account after ${ACCOUNT_LIMIT} failures, even against the right password`, async () => {
    const user = await buildUser(context().runtime);
    const browser = new Browser(context().app);
    const { page, answers } = await failTimes(browser, user.username, ACCOUNT_LIMIT);
    expect(answers.slice(0, -1).map((r) => r.status)).toEqual(Array(ACCOUNT_LIMIT - 1).fill(401));
    expect(answers.at(-1)!.status).toBe(429);
    expect(alert(answers.at(-1)!.text)).toMatch(LOCKED);
    // The title says what happened; no field is wrong, so none is marked invalid, but both point to the message.
    expect(/<title>([^<]*)<\/title>/.exec(answers.at(-1)!.text)?.[1]).toBe('Too many attempts · Fieldgate');
    expect(answers.at(-1)!.text).not.toMatch(/<input[^>]*aria-invalid/);
    expect(answers.at(-1)!.text).toContain('aria-describedby="form-error"');

    const right = await browser.signIn(page, user.username, user.password);
    expect(right.status).toBe(429);
    expect(alert(right.text)).toMatch(LOCKED);
    expect(Number(right.headers['retry-after'])).toBeGreaterThan(0);
    expect(right.headers.location).toBeUndefined();
  });

  it('treats an unknown account exactly like a real one (no enumeration through the lock)', async () => {
    const real = await buildUser(context().runtime);
    const realAnswers = (await failTimes(new Browser(context().app), real.username, ACCOUNT_LIMIT + 1)).answers;
    const ghostAnswers = (await failTimes(new Browser(context().app), `ghost-${real.username}`, ACCOUNT_LIMIT + 1)).answers;
    expect(ghostAnswers.map((r) => r.status)).toEqual(realAnswers.map((r) => r.status));
    expect(ghostAnswers.map((r) => alert(r.text))).toEqual(realAnswers.map((r) => alert(r.text)));
  });

  it('counts case variants of a name as one account', async () => {
    const user = await buildUser(context().runtime);
    const browser = new Browser(context().app);
    const page = await browser.open(authorizePath(authorizeParams(client)));
    for (let i = 0; i < ACCOUNT_LIMIT; i++) await browser.signIn(page, i % 2 ? user.username.toUpperCase() : user.username, 'wrong');
    expect((await browser.signIn(page, user.username, user.password)).status).toBe(429);
  });

  it('keeps the counters in the database, so another app instance sees the lock', async () => {
    const { runtime } = context();
    const user = await buildUser(runtime);
    await failTimes(new Browser(context().app), user.username, ACCOUNT_LIMIT);
    const otherInstance = new Browser(createApp(runtime));
    const page = await otherInstance.open(authorizePath(authorizeParams(client)));
    expect((await otherInstance.signIn(page, user.username, user.password)).status).toBe(429);
    const rows = await runtime.db.select().from(loginThrottle);
    expect(rows.some((row) => row.key.startsWith('account:') && row.lockedUntil !== null)).toBe(true);
    expect(JSON.stringify(rows)).not.toContain(user.username); // names are stored only as hashes
  });

  it('a success before the limit clears the account counter', async () => {
    const user = await buildUser(context().runtime);
    const browser = new Browser(context().app);
    const { page } = await failTimes(browser, user.username, ACCOUNT_LIMIT - 1);
    expect((await browser.signIn(page, user.username, user.password)).status).toBe(303);
    const fresh = new Browser(context().app);
    const { answers } = await failTimes(fresh, user.username, ACCOUNT_LIMIT - 1);
    expect(answers.every((r) => r.status === 401)).toBe(true);
  });

  it('logs throttled attempts as security events', async () => {
    const user = await buildUser(context().runtime);
    const browser = new Browser(context().app);
    const { page } = await failTimes(browser, user.username, ACCOUNT_LIMIT);
    await browser.signIn(page, user.username, user.password);
    expect(securityEvents(context().logs.lines, 'login_throttled').at(-1)).toMatchObject({ clientId: client.id, reason: 'locked' });
  });

  it('never announces a wait longer than the lock, though a concurrent attempt that began later set it', async () => {
    const rule = { maxFailures: 2, windowSeconds: 60, lockSeconds: 30 };
    const throttle = new LoginThrottle(context().runtime.db, { account: rule, ip: rule });
    const key = `probe:${Date.now()}`;
    // What an attempt sees after waiting on the row for one whose transaction began 5 s after its own: a lock that,
    // measured from this attempt's now(), lasts longer than the rule's.
    await context().runtime.db.insert(loginThrottle).values({ key, failures: 2, windowStartedAt: sql`now()`, lockedUntil: sql`now() + interval '35 seconds'` });
    expect(await throttle.count(key, rule)).toEqual({ allowed: false, retryAfter: 30 });
  });

  it('unlocks when the lock time has passed', async () => {
    const throttle = new LoginThrottle(context().runtime.db, {
      account: { maxFailures: 2, windowSeconds: 60, lockSeconds: 1 },
      ip: { maxFailures: 1000, windowSeconds: 60, lockSeconds: 1 },
    });
    const name = `short-lock-${Date.now()}`;
    expect(await throttle.recordFailure(name, '192.0.2.9')).toEqual({ locked: false });
    expect((await throttle.recordFailure(name, '192.0.2.9')).locked).toBe(true);
    expect((await throttle.check(name, '192.0.2.9')).locked).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect(await throttle.check(name, '192.0.2.9')).toEqual({ locked: false });
    // The counter starts afresh after the lock: one more failure does not lock again.
    expect(await throttle.recordFailure(name, '192.0.2.9')).toEqual({ locked: false });
  });
});

describeEachDatabase('login throttle per IP', (context) => {
  it(`locks an IP after ${IP_LIMIT} failures across many accounts; other IPs are unaffected`, async () => {
    const { runtime, app } = context();
    const client = await buildClient(runtime);
    const user = await buildUser(runtime);
    const browser = new Browser(app);
    const page = await browser.open(authorizePath(authorizeParams(client)));
    const statuses: number[] = [];
    for (let i = 0; i < IP_LIMIT; i++) statuses.push((await browser.signIn(page, `spray-${i}`, 'Winter2024!')).status);
    expect(statuses.slice(0, IP_LIMIT - 1).every((s) => s === 401)).toBe(true);
    expect(statuses.at(-1)).toBe(429);

    const right = await browser.signIn(page, user.username, user.password);
    expect(right.status).toBe(429);
    expect(alert(right.text)).toMatch(LOCKED);

    // The same account from another address still signs in (the account itself is not locked).
    const throttle = new LoginThrottle(runtime.db);
    expect(await throttle.check(user.username, '198.51.100.7')).toEqual({ locked: false });
  });
});

describeEachDatabase(
  'login throttle per IP behind a trusted proxy (TRUST_PROXY)',
  (context) => {
    it('counts failures per X-Forwarded-For client address, not per proxy', async () => {
      const { runtime, app } = context();
      const client = await buildClient(runtime);
      const user = await buildUser(runtime);
      const browser = new Browser(app);
      const page = await browser.open(authorizePath(authorizeParams(client)));
      const fields = (username: string, password: string) => ({ ...formFieldsOf(page.text), username, password });
      const attacker = '203.0.113.9';
      const statuses: number[] = [];
      for (let i = 0; i < IP_LIMIT; i++) {
        const res = await browser.agent
          .post(pathOf(formActionOf(page.text)))
          .set('X-Forwarded-For', attacker)
          .type('form')
          .send(fields(`spray-${i}`, 'Winter2024!'))
          .redirects(0);
        statuses.push(res.status);
      }
      expect(statuses.at(-1)).toBe(429);

      // Another client behind the same proxy still signs in.
      const other = await browser.agent
        .post(pathOf(formActionOf(page.text)))
        .set('X-Forwarded-For', '198.51.100.20')
        .type('form')
        .send(fields(user.username, user.password))
        .redirects(0);
      expect(other.status).toBe(303);
      const throttle = new LoginThrottle(runtime.db);
      expect((await throttle.check('anyone', attacker)).locked).toBe(true);
      expect((await throttle.check('anyone', '127.0.0.1')).locked).toBe(false);
    });
  },
  { TRUST_PROXY: 'loopback' },
);

describeEachDatabase(
  'login throttle under concurrent guesses',
  (context) => {
    let client: TestClient;

    beforeAll(async () => {
      client = await buildClient(context().runtime);
    });

    /** Sends every attempt at once from `ip`, spread round robin over one browser per app. */
    async function attempts(apps: ReturnType<typeof createApp>[], ip: string, credentials: [string, string][]) {
      const browsers = await Promise.all(
        apps.map(async (app) => {
          const browser = new Browser(app);
          return { browser, page: await browser.open(authorizePath(authorizeParams(client))) };
        }),
      );
      return Promise.all(
        credentials.map(([username, password], i) => {
          const { browser, page } = browsers[i % browsers.length]!;
          return browser.agent
            .post(pathOf(formActionOf(page.text)))
            .set('X-Forwarded-For', ip)
            .type('form')
            .send({ ...formFieldsOf(page.text), username, password })
            .redirects(0);
        }),
      );
    }

    /** Attempts whose password was checked: a 401 (wrong) or a 303 (signed in); a 429 checked nothing. */
    const checked = (responses: { status: number }[]) => responses.filter((r) => r.status !== 429);

    async function guessOneAccount(apps: ReturnType<typeof createApp>[], ip: string) {
      const user = await buildUser(context().runtime);
      const guesses: [string, string][] = Array.from({ length: 99 }, (_, i) => [user.username, `wrong-${i}`]);
      const responses = await attempts(apps, ip, [...guesses, [user.username, user.password]]);
      expect(responses.every((r) => [401, 429].includes(r.status))).toBe(true);
      expect(checked(responses).length).toBeLessThanOrEqual(ACCOUNT_LIMIT);
      return responses;
    }

    it(`checks at most ${ACCOUNT_LIMIT} of 100 concurrent passwords for one account, and never the right one last`, async () => {
      await guessOneAccount([context().app], '203.0.113.50');
    });

    it(`checks at most ${IP_LIMIT} of 100 concurrent passwords from one IP across accounts`, async () => {
      const spray: [string, string][] = Array.from({ length: 100 }, (_, i) => [`spray-concurrent-${i}`, 'Winter2024!']);
      const responses = await attempts([context().app], '203.0.113.51', spray);
      expect(checked(responses).length).toBeLessThanOrEqual(IP_LIMIT);
      expect(responses.some((r) => r.status === 429)).toBe(true);
    });

    // A burst of good sign-ins from one address (an office behind NAT at nine o'clock) is refused while it lasts, but the
    // refused attempts checked no password: they must not leave the address locked once the burst is over.
    it(`leaves no lock behind after a burst of ${2 * IP_LIMIT} concurrent correct sign-ins from one IP`, async () => {
      const users = await Promise.all(Array.from({ length: 2 * IP_LIMIT }, () => buildUser(context().runtime)));
      const ip = '203.0.113.53';
      const responses = await attempts([context().app], ip, users.map((user) => [user.username, user.password]));
      expect(responses.every((r) => [303, 429].includes(r.status))).toBe(true);
      const later = await attempts([context().app], ip, [[users[0]!.username, users[0]!.password]]);
      expect(later[0]!.status).toBe(303);
    });

    it('does not count attempts refused under a lock, so the checked ones that succeed lift it', async () => {
      const rule = { maxFailures: 3, windowSeconds: 900, lockSeconds: 900 };
      const throttle = new LoginThrottle(context().runtime.db, { account: { ...rule, maxFailures: 1000 }, ip: rule });
      const ip = '203.0.113.54';
      const states = [];
      for (let i = 0; i < 8; i++) states.push(await throttle.recordAttempt(`burst-${i}`, ip));
      expect(states.map((s) => s.locked)).toEqual([false, false, false, true, true, true, true, true]);
      for (let i = 0; i < 3; i++) await throttle.recordSuccess(`burst-${i}`, ip);
      expect((await throttle.check('anyone', ip)).locked).toBe(false);
    });

    it('holds across two instances on one database', async () => {
      const { kind, testDatabase, config } = context();
      if (kind !== 'postgres') return; // PGlite is one process's database; the second instance needs PostgreSQL
      const other = await openRuntime(config, createLogger('error'), await testDatabase.open());
      try {
        await guessOneAccount([context().app, createApp(other)], '203.0.113.52');
      } finally {
        await other.close();
      }
    });
  },
  { TRUST_PROXY: 'loopback' },
);
