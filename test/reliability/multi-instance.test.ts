/**
 * Several instances on one PostgreSQL database. Two `fieldgate serve` processes
 * on two ports share one database and one ISSUER, as they would behind a load balancer; every
 * flow here is real HTTP — /authorize, the login and consent pages, /token — against them.
 *
 * The shared ISSUER is a neutral name (http://fieldgate.test): it is what tokens carry in
 * `iss` and `aud` and where the pages send the browser back to, and the test browser replays
 * each of those redirects against the instance it chooses, keeping one cookie jar for both.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readdirSync } from 'node:fs';
import postgres from 'postgres';
import { MIGRATIONS_FOLDER } from '../../src/db/database.js';
import { DEFAULT_LOGIN_THROTTLE_POLICY } from '../../src/oauth/browser/login-throttle.js';
import { sha256 } from '../../src/crypto/secrets.js';
import type { Runtime } from '../../src/runtime.js';
import { createPostgresDatabase, TEST_DATABASE_URL } from '../support/databases.js';
import { runCli, startServerProcess, type ServerProcess } from '../support/processes.js';
import { issueTestToken } from '../support/tokens.js';
import { eventually, parseJson, send } from '../support/reliability/http.js';
import {
  alternate,
  always,
  authorize,
  Browser,
  kidOf,
  obtainTokens,
  redeemCode,
  refreshRequest,
  resourceStatus,
  tokensOf,
  type FlowClient,
} from '../support/reliability/oauth.js';
import { openSetupRuntime, registerClient, registerUser } from '../support/reliability/setup.js';

const ISSUER = 'http://fieldgate.test';
/** README: a revocation reaches the other instances within 1 s; the check allows generous slack. */
const REVOCATION_BOUND_MS = 5_000;
/** README: an unknown `kid` reloads the key set at once (at most once a second); generous slack. */
const NEW_KEY_BOUND_MS = 5_000;

function errorOf(reply: { body: string }): string | undefined {
  try {
    return (JSON.parse(reply.body) as { error?: string }).error;
  } catch {
    return undefined;
  }
}

function tally(statuses: number[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const status of statuses) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
}

describe.runIf(TEST_DATABASE_URL)('two fieldgate serve processes on one PostgreSQL database', () => {
  let database: { url: string; drop(): Promise<void> };
  let sql: postgres.Sql;
  let a: ServerProcess;
  let b: ServerProcess;
  let runtime: Runtime;
  let client: FlowClient;
  let env: Record<string, string>;

  beforeAll(async () => {
    database = await createPostgresDatabase();
    sql = postgres(database.url, { max: 2, onnotice: () => {} });
    // As behind a load balancer on this host: the client IP comes from X-Forwarded-For.
    env = { DATABASE_URL: database.url, ISSUER, DATABASE_POOL_SIZE: '10', TRUST_PROXY: 'loopback' };
    // Both processes are spawned together on the empty database: the first test checks the outcome.
    [a, b] = await Promise.all([startServerProcess(env), startServerProcess(env)]);
    runtime = await openSetupRuntime(env);
    client = await registerClient(runtime);
  });

  afterAll(async () => {
    await Promise.all([a?.stop('SIGKILL'), b?.stop('SIGKILL')]);
    await runtime?.close();
    await sql?.end();
    await database?.drop();
  });

  it('both start at the same moment on an empty database, migrate it once and come up', async () => {
    for (const server of [a, b]) {
      const ready = await send(`${server.url}/readyz`);
      expect(ready.status).toBe(200);
    }
    // Each migration recorded once, the first signing keys (one per algorithm) and the deployment secrets created once.
    const migrations = readdirSync(MIGRATIONS_FOLDER, { withFileTypes: true }).filter((entry) => entry.isDirectory()).length;
    const applied = await sql`select count(*)::int as rows, count(distinct hash)::int as distinct from drizzle.__drizzle_migrations`;
    expect(applied[0]).toEqual({ rows: migrations, distinct: migrations });
    const keys = await sql`select kid, alg from signing_keys where retired_at is null order by alg`;
    expect(keys.map((key) => key.alg)).toEqual(['ES256', 'RS256']);
    const secrets = await sql`select name from instance_secrets order by name`;
    expect(secrets.map((row) => row.name)).toEqual(['authorization-code', 'client-secret-hmac', 'dpop-nonce', 'page-token', 'pairwise-subject', 'refresh-token-successor', 'session-cookie']);
    // Both publish those keys, and neither logged an error while starting.
    for (const server of [a, b]) {
      const jwks = parseJson<{ keys: { kid: string }[] }>(await send(`${server.url}/.well-known/jwks.json`));
      expect(jwks.keys.map((key) => key.kid).sort()).toEqual(keys.map((key) => key.kid as string).sort());
      // stderr carries the start banner and nothing else.
      expect(server.stderr().replace(/^Fieldgate is listening on .*\n/, '')).toBe('');
      expect(server.stdout()).not.toMatch(/"level":(50|60)/);
    }
  });

  it('redeems at instance B a code issued by instance A', async () => {
    const user = await registerUser(runtime);
    const result = await authorize({ client, user, route: always(a.url) });
    expect(result.iss).toBe(ISSUER);
    expect(result.browser.history.every((step) => step.base === a.url)).toBe(true);

    const tokens = tokensOf(await redeemCode(b.url, client, result.code, result.verifier));
    expect(tokens.token_type).toBe('Bearer');
    expect(await resourceStatus(a.url, tokens.access_token)).toBe(200);
    expect(await resourceStatus(b.url, tokens.access_token)).toBe(200);
  });

  it('continues at B a sign-in started at A: session cookie, CSRF token and consent are shared', async () => {
    const user = await registerUser(runtime);
    const result = await authorize({ client, user, route: alternate(a.url, b.url) });
    const posts = result.browser.history.filter((step) => step.method === 'POST');
    // The login and the consent form were both posted to B, after A had rendered them.
    expect(posts.map((step) => `${step.path} ${step.base === b.url ? 'B' : 'A'} ${step.status}`)).toEqual([
      '/authorize/login B 303',
      '/authorize/consent B 303',
    ]);
    tokensOf(await redeemCode(a.url, client, result.code, result.verifier));
  });

  it('rotates at B a refresh token issued by A, and the successor at A', async () => {
    const user = await registerUser(runtime);
    const first = await obtainTokens({ client, user, route: always(a.url), redeemAt: a.url });
    const second = tokensOf(await refreshRequest(b.url, client, first.refresh_token!));
    expect(second.refresh_token).not.toBe(first.refresh_token);
    const third = tokensOf(await refreshRequest(a.url, client, second.refresh_token!));
    expect(await resourceStatus(a.url, third.access_token)).toBe(200);
    expect(await resourceStatus(b.url, third.access_token)).toBe(200);
  });

  it('of 50 concurrent redemptions of one code over A and B exactly one succeeds; the rest are invalid_grant', async () => {
    const user = await registerUser(runtime);
    const { code, verifier } = await authorize({ client, user, route: always(a.url) });
    const replies = await Promise.all(Array.from({ length: 50 }, (_, i) => redeemCode(i % 2 ? b.url : a.url, client, code, verifier)));

    expect(tally(replies.map((reply) => reply.status))).toEqual({ 200: 1, 400: 49 });
    const failures = replies.filter((reply) => reply.status !== 200);
    expect(new Set(failures.map(errorOf))).toEqual(new Set(['invalid_grant']));

    // The other 49 were replays of a used code, so (RFC 6749 §4.1.2) the winner's tokens are
    // revoked too: its refresh token no longer rotates and both instances refuse its access token.
    const winner = tokensOf(replies.find((reply) => reply.status === 200)!);
    const refreshed = await refreshRequest(b.url, client, winner.refresh_token!);
    expect([refreshed.status, errorOf(refreshed)]).toEqual([400, 'invalid_grant']);
    for (const server of [a, b]) {
      await eventually(`${server === a ? 'A' : 'B'} refuses the revoked access token`, REVOCATION_BOUND_MS, async () =>
        (await resourceStatus(server.url, winner.access_token)) === 401 ? true : undefined,
      );
    }
  });

  it('of 20 concurrent uses of one refresh token over A and B one succeeds, and the reuse revokes the family', async () => {
    const user = await registerUser(runtime);
    const tokens = await obtainTokens({ client, user, route: always(b.url), redeemAt: b.url });
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) => refreshRequest(i % 2 ? a.url : b.url, client, tokens.refresh_token!)),
    );

    // Strict rotation (REFRESH_TOKEN_REUSE_GRACE=0, the default): the single atomic rotation
    // lets one request through; every other one presents a token that is now retired, which is
    // reuse, so the whole grant is revoked (src/oauth/grants/refresh-token.ts).
    expect(tally(replies.map((reply) => reply.status))).toEqual({ 200: 1, 400: 19 });
    expect(new Set(replies.filter((reply) => reply.status !== 200).map(errorOf))).toEqual(new Set(['invalid_grant']));
    const winner = tokensOf(replies.find((reply) => reply.status === 200)!);

    // Consistent outcome: the family is revoked — the successor does not rotate, on either
    // instance, and no access token of the family is accepted any more.
    for (const server of [a, b]) {
      const again = await refreshRequest(server.url, client, winner.refresh_token!);
      expect([again.status, errorOf(again)]).toEqual([400, 'invalid_grant']);
    }
    const [grant] = await sql`select g.revoked_at from grants g join refresh_tokens t on t.grant_id = g.id
                              where t.token_hash = ${sha256(tokens.refresh_token!)}`;
    expect(grant?.revoked_at).toBeInstanceOf(Date);
    for (const server of [a, b]) {
      for (const accessToken of [tokens.access_token, winner.access_token]) {
        await eventually('the family’s access tokens are refused', REVOCATION_BOUND_MS, async () =>
          (await resourceStatus(server.url, accessToken)) === 401 ? true : undefined,
        );
      }
    }
  });

  it('after `fieldgate keys rotate` both accept new-key tokens at once and old-key tokens keep working', async () => {
    const user = await registerUser(runtime);
    const old = await obtainTokens({ client, user, route: always(a.url), redeemAt: a.url });
    // The access tokens' key; the RS256 key (ID Tokens of clients that ask for it) rotates alongside.
    const [current] = await sql`select kid from signing_keys where retired_at is null and alg = 'ES256'`;
    expect(kidOf(old.access_token)).toBe(current!.kid);

    const rotation = await runCli(['keys', 'rotate', '--json'], env);
    expect(rotation.code, rotation.stderr).toBe(0);
    const rotated = JSON.parse(rotation.stdout) as { kid: string; retired: string[] };
    expect(rotated.retired).toContain(current!.kid);

    // A token signed with the new key, by a third process (this one) that loaded it from the database.
    await runtime.keys.invalidate();
    const fresh = await issueTestToken(runtime, { scope: 'products:read' });
    expect(kidOf(fresh.token)).toBe(rotated.kid);
    for (const server of [a, b]) {
      await eventually(`${server === a ? 'A' : 'B'} accepts the new key`, NEW_KEY_BOUND_MS, async () =>
        (await resourceStatus(server.url, fresh.token)) === 200 ? true : undefined,
      );
      // The old key is retired, not withdrawn: its tokens work until they expire.
      expect(await resourceStatus(server.url, old.access_token)).toBe(200);
      const jwks = parseJson<{ keys: { kid: string }[] }>(await send(`${server.url}/.well-known/jwks.json`));
      expect(jwks.keys.map((key) => key.kid)).toEqual(expect.arrayContaining([current!.kid, ...rotated.retired, rotated.kid]));
      expect(jwks.keys).toHaveLength(4);
    }

    // Having met the new kid, each instance reloaded its keys and now signs with the new one;
    // the old key's refresh token still rotates.
    const viaB = await obtainTokens({ client, user, route: always(b.url), redeemAt: a.url });
    expect(kidOf(viaB.access_token)).toBe(rotated.kid);
    const refreshed = tokensOf(await refreshRequest(b.url, client, old.refresh_token!));
    expect(kidOf(refreshed.access_token)).toBe(rotated.kid);
    expect(await resourceStatus(a.url, refreshed.access_token)).toBe(200);
  });

  it('counts failed logins across both instances: the account locks after the limit spread over A and B', async () => {
    const user = await registerUser(runtime);
    const limit = DEFAULT_LOGIN_THROTTLE_POLICY.account.maxFailures;
    const browser = new Browser(alternate(a.url, b.url));
    // Step 0 (A) shows the login page; the attempts then alternate B, A, B, …
    let page = await browser.get(pathOfAuthorize(client));
    expect(page.status).toBe(200);
    const statuses: number[] = [];
    for (let attempt = 1; attempt <= limit; attempt++) {
      page = await browser.submit(page, { username: user.username, password: `wrong ${attempt}` });
      statuses.push(page.status);
    }
    // No instance saw more than ceil(limit / 2) failures, yet the limit-th failure locks the account.
    expect(statuses).toEqual([...Array<number>(limit - 1).fill(401), 429]);
    const instances = browser.history.filter((step) => step.method === 'POST').map((step) => step.base);
    expect(new Set(instances)).toEqual(new Set([a.url, b.url]));

    // Locked everywhere, even for the right password.
    page = await browser.submit(page, { username: user.username, password: user.password });
    expect(page.status).toBe(429);
    expect(page.headers['retry-after']).toMatch(/^\d+$/);
    const elsewhere = new Browser(always(browser.history.at(-1)!.base === a.url ? b.url : a.url));
    const login = await elsewhere.get(pathOfAuthorize(client));
    const attempt = await elsewhere.submit(login, { username: user.username, password: user.password });
    expect(attempt.status).toBe(429);
  });

  it('counts failures per client IP across both instances: the 20th from one IP locks it, other IPs still sign in', async () => {
    const limit = DEFAULT_LOGIN_THROTTLE_POLICY.ip.maxFailures;
    const attacker = { 'x-forwarded-for': '203.0.113.7' };
    // Spraying many account names (so no account counter trips first), alternating A and B.
    const statuses: number[] = [];
    for (let attempt = 1; attempt <= limit; attempt++) {
      const browser = new Browser(always(attempt % 2 ? a.url : b.url), undefined, attacker);
      const login = await browser.get(pathOfAuthorize(client));
      statuses.push((await browser.submit(login, { username: `nobody-${attempt}`, password: 'guess' })).status);
    }
    expect(statuses).toEqual([...Array<number>(limit - 1).fill(401), 429]);

    const user = await registerUser(runtime);
    for (const [headers, expected] of [
      [attacker, 429],
      [{ 'x-forwarded-for': '198.51.100.9' }, 303],
    ] as const) {
      const browser = new Browser(always(b.url), undefined, headers);
      const login = await browser.get(pathOfAuthorize(client));
      expect((await browser.submit(login, { username: user.username, password: user.password })).status).toBe(expected);
    }
  });
});

function pathOfAuthorize(client: FlowClient): string {
  return `/authorize?${new URLSearchParams({
    response_type: 'code',
    client_id: client.id,
    redirect_uri: client.redirectUri,
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
  })}`;
}
