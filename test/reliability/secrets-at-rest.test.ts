/**
 * Secrets at rest and in the logs. A full run against a `fieldgate serve` process
 * — sign-in with a password, consent, codes, tokens, refresh, resource calls, introspection,
 * revocation, a failed sign-in with the password typed into the username field, a replayed
 * code — then every row of every table is dumped, and neither the dump nor anything the
 * process wrote (at LOG_LEVEL=trace) contains a client secret, password, code, refresh token or
 * access token, in plain text or in the encodings a careless log line would use.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { openDatabase } from '../../src/db/database.js';
import { hmacSha256, sha256 } from '../../src/crypto/secrets.js';
import { DATABASE_KINDS } from '../support/databases.js';
import { startServerProcess, type ServerProcess } from '../support/processes.js';
import { form, parseJson, send } from '../support/reliability/http.js';
import {
  always,
  authorize,
  basicAuthorization,
  Browser,
  redeemCode,
  refreshRequest,
  tokensOf,
  type FlowClient,
  type FlowUser,
} from '../support/reliability/oauth.js';
import { createStorage, registerClient, registerUser, seedProducts, withSetupRuntime, type Storage } from '../support/reliability/setup.js';

const ISSUER = 'http://fieldgate.test';

/** The forms a secret could take if someone stored or logged a request carelessly. */
function spellings(secret: string): string[] {
  const forms = new Set([
    secret,
    encodeURIComponent(secret),
    new URLSearchParams({ x: secret }).toString().slice(2),
    Buffer.from(secret).toString('base64'),
    Buffer.from(secret).toString('base64url'),
    JSON.stringify(secret).slice(1, -1),
  ]);
  // A JWT is recognizable by its signature alone.
  if (/^[\w-]+\.[\w-]+\.[\w-]+$/.test(secret)) forms.add(secret.split('.')[2]!);
  return [...forms].filter((form) => form.length >= 16);
}

/** Every row of every table in every non-system schema, as JSON text, one line per row. */
async function dumpEveryTable(execute: (statement: string) => Promise<Record<string, unknown>[]>): Promise<{ tables: string[]; text: string }> {
  const tables = (
    await execute(`select table_schema, table_name from information_schema.tables
                   where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')
                   order by 1, 2`)
  ).map((row) => `"${String(row.table_schema)}"."${String(row.table_name)}"`);
  const lines: string[] = [];
  for (const table of tables) {
    for (const row of await execute(`select row_to_json(t)::text as row from ${table} t`)) lines.push(`${table} ${String(row.row)}`);
  }
  return { tables, text: lines.join('\n') };
}

for (const kind of DATABASE_KINDS) {
  describe(`no secret in the database or the logs after a full run [${kind}]`, () => {
    let storage: Storage;
    let env: Record<string, string>;
    let server: ServerProcess;
    let client: FlowClient;
    let user: FlowUser;
    /** name → value of every secret the run handled. */
    const secrets = new Map<string, string>();
    const expectedEvents = ['login_failed', 'login_succeeded', 'consent_granted', 'code_issued', 'code_redeemed', 'refresh_token_rotated', 'code_replayed'];

    beforeAll(async () => {
      storage = await createStorage(kind);
      env = { ...storage.env, ISSUER, DEMO: 'false', LOG_LEVEL: 'trace' };
      await withSetupRuntime(env, async (runtime) => {
        await seedProducts(runtime, 2);
        client = await registerClient(runtime);
        user = await registerUser(runtime, 'careful');
      });
      secrets.set('client secret', client.secret!);
      secrets.set('password', user.password);
      server = await startServerProcess(env);
      const at = always(server.url);

      // A failed sign-in with the password typed into the username field, then a wrong password.
      const fumbling = new Browser(at);
      const login = await fumbling.get(
        `/authorize?${form({ response_type: 'code', client_id: client.id, redirect_uri: client.redirectUri, code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' })}`,
      );
      const misplaced = await fumbling.submit(login, { username: user.password, password: 'not it' });
      expect(misplaced.status).toBe(401);
      expect((await fumbling.submit(misplaced, { username: user.username, password: `${user.password}!` })).status).toBe(401);

      // Sign-in, consent, code, tokens (client_secret_basic).
      const first = await authorize({ client, user, route: at, scope: 'products:read orders:read orders:write' });
      secrets.set('first code', first.code);
      secrets.set('first code verifier', first.verifier);
      const tokens = tokensOf(await redeemCode(server.url, client, first.code, first.verifier));
      secrets.set('first access token', tokens.access_token);
      secrets.set('first refresh token', tokens.refresh_token!);

      // Refresh with client_secret_post.
      const refreshed = tokensOf(
        await send(`${server.url}/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: form({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: client.id, client_secret: client.secret! }),
        }),
      );
      secrets.set('second access token', refreshed.access_token);
      secrets.set('second refresh token', refreshed.refresh_token!);

      // Resource calls with the token.
      const bearer = { authorization: `Bearer ${refreshed.access_token}` };
      expect((await send(`${server.url}/products?fields=id,name`, { headers: bearer })).status).toBe(200);
      const created = await send(`${server.url}/orders`, {
        method: 'POST',
        headers: { ...bearer, 'content-type': 'application/json' },
        body: JSON.stringify({ items: [{ productId: 1, quantity: 1 }], memo: 'secret-free memo' }),
      });
      expect(created.status).toBe(201);
      expect((await send(`${server.url}/graphql`, { method: 'POST', headers: { ...bearer, 'content-type': 'application/json' }, body: '{"query":"{ orders { id memo } }"}' })).status).toBe(200);

      // A second code from the signed-in session; introspect and revoke its tokens.
      const second = await authorize({ client, user, route: at, browser: first.browser, scope: 'products:read orders:read orders:write' });
      secrets.set('second code', second.code);
      const third = tokensOf(await redeemCode(server.url, client, second.code, second.verifier));
      secrets.set('third access token', third.access_token);
      secrets.set('third refresh token', third.refresh_token!);
      const basic = { authorization: basicAuthorization(client.id, client.secret!), 'content-type': 'application/x-www-form-urlencoded' };
      const introspection = await send(`${server.url}/introspect`, { method: 'POST', headers: basic, body: form({ token: third.access_token }) });
      expect(parseJson<{ active: boolean }>(introspection).active).toBe(true);
      expect((await send(`${server.url}/revoke`, { method: 'POST', headers: basic, body: form({ token: third.refresh_token! }) })).status).toBe(200);

      // A replay of the first code (revokes its grant) and a refresh of a revoked token.
      expect((await redeemCode(server.url, client, first.code, first.verifier)).status).toBe(400);
      expect((await refreshRequest(server.url, client, third.refresh_token!)).status).toBe(400);

      expect(await server.stop('SIGTERM')).toBe(0);
    });

    afterAll(async () => {
      await server?.stop('SIGKILL');
      await storage?.destroy();
    });

    it('stores none of them in any table, in any spelling', async () => {
      const database = await openDatabase(kind === 'postgres' ? { databaseUrl: env.DATABASE_URL, poolSize: 1 } : { dataDir: env.DATA_DIR! });
      let dump: { tables: string[]; text: string };
      let hmacKey: string;
      try {
        const execute = async (statement: string) => {
          const result = await database.db.execute(sql.raw(statement));
          return ((result as { rows?: unknown }).rows ?? result) as Record<string, unknown>[];
        };
        dump = await dumpEveryTable(execute);
        hmacKey = String((await execute(`select value from instance_secrets where name = 'client-secret-hmac'`))[0]!.value);
      } finally {
        await database.close();
      }

      // The dump is real: it covers the OAuth tables and holds what should be there — the
      // hashes the server looks secrets up by, and the plain values that are not secret.
      for (const table of ['clients', 'users', 'refresh_tokens', 'grants', 'login_throttle', 'orders']) {
        expect(dump.tables).toContain(`"public"."${table}"`);
      }
      expect(dump.text).toContain(user.username);
      expect(dump.text).toContain(client.id);
      expect(dump.text).toContain(hmacSha256(hmacKey, client.secret!));
      expect(dump.text).toContain(sha256(secrets.get('first refresh token')!));
      expect(dump.text).toContain('secret-free memo');
      expect(dump.text).toMatch(/"password_hash":"scrypt\$/);

      const found = [...secrets].flatMap(([name, value]) => spellings(value).filter((spelling) => dump.text.includes(spelling)).map(() => name));
      expect(found).toEqual([]);
    });

    it('writes none of them to the logs, at trace level', () => {
      const logs = `${server.stdout()}\n${server.stderr()}`;
      // The logs are real: one line per request, and the security events of the run.
      const events = new Set(
        logs
          .split('\n')
          .filter((line) => line.startsWith('{'))
          .map((line) => (JSON.parse(line) as { event?: string }).event)
          .filter(Boolean),
      );
      for (const event of expectedEvents) expect(events).toContain(event);
      expect(logs).toContain(client.id);
      expect(logs).toContain('"path":"/token"');

      const found = [...secrets].flatMap(([name, value]) => spellings(value).filter((spelling) => logs.includes(spelling)).map(() => name));
      expect(found).toEqual([]);
    });
  });
}
