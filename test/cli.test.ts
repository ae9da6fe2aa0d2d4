import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { tmpdir } from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { eq, sql } from 'drizzle-orm';
import { runCli, startServerProcess } from './support/processes.js';
import { createPostgresDatabase, DATABASE_KINDS, type DatabaseKind } from './support/databases.js';
import { randomBytes, randomUUID } from 'node:crypto';
import { decodeJwt, exportJWK, generateKeyPair } from 'jose';
import type { Express } from 'express';
import { DEFAULT_LOGIN_THROTTLE_POLICY, LoginThrottle } from '../src/oauth/browser/login-throttle.js';
import { TEST_ISSUER } from './support/runtime.js';
import { loadConfig } from '../src/config.js';
import { openRuntime, type Runtime } from '../src/runtime.js';
import { createLogger } from '../src/logger.js';
import { createApp } from '../src/app.js';
import { clients, consents, grants, revokedAccessTokens, users } from '../src/db/schema.js';
import { startLogoutReceiver } from './support/logout-receiver.js';

/** Opens the database the CLI works on, in this process (after the CLI has exited and released it). */
async function withDatabase<T>(kind: DatabaseKind, env: Record<string, string>, fn: (runtime: Runtime) => Promise<T>): Promise<T> {
  const config = loadConfig({ ...env, LOG_LEVEL: 'silent', DEMO: 'false' });
  const runtime = await openRuntime(config, createLogger('silent'));
  try {
    return await fn(runtime);
  } finally {
    await runtime.close();
  }
}

function json(stdout: string): Record<string, unknown> {
  const lines = stdout.trim().split('\n');
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0]!) as Record<string, unknown>;
}

for (const kind of DATABASE_KINDS) {
  describe(`fieldgate CLI [${kind}]`, () => {
    let env: Record<string, string>;
    let cleanup: () => Promise<void>;

    beforeAll(async () => {
      if (kind === 'postgres') {
        const created = await createPostgresDatabase();
        env = { DATABASE_URL: created.url };
        cleanup = created.drop;
      } else {
        const dataDir = mkdtempSync(path.join(tmpdir(), 'fieldgate-cli-'));
        env = { DATA_DIR: dataDir };
        cleanup = async () => rmSync(dataDir, { recursive: true, force: true });
      }
    });
    afterAll(async () => cleanup());

    it('migrate --json reports the migrated database', async () => {
      const result = await runCli(['migrate', '--json'], env);
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      expect(json(result.stdout)).toEqual({ migrated: true, database: kind as DatabaseKind });
    });

    it('client create makes a confidential client whose secret is shown once', async () => {
      const result = await runCli(
        ['client', 'create', '--name', 'Shop App', '--redirect-uri', 'https://shop.example/cb', '--redirect-uri', 'http://127.0.0.1:8080/cb', '--json'],
        env,
      );
      expect(result.code).toBe(0);
      const client = json(result.stdout);
      expect(Object.keys(client).sort()).toEqual(['client_id', 'client_secret', 'grant_types', 'redirect_uris', 'scope', 'token_endpoint_auth_method']);
      expect(client.grant_types).toEqual(['authorization_code', 'refresh_token']);
      expect(client.client_secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(client.redirect_uris).toEqual(['https://shop.example/cb', 'http://127.0.0.1:8080/cb']);
      expect(client.scope).toBe('products:read orders:read orders:write');
      expect(client.token_endpoint_auth_method).toBe('client_secret_basic');

      const listed = json((await runCli(['client', 'list', '--json'], env)).stdout) as { clients: Record<string, unknown>[] };
      const mine = listed.clients.find((c) => c.client_id === client.client_id);
      expect(mine).toMatchObject({ client_name: 'Shop App', redirect_uris: client.redirect_uris });
      expect(mine).not.toHaveProperty('client_secret');
      expect(JSON.stringify(listed)).not.toContain(client.client_secret as string);
    });

    it('client create --public makes a client without a secret and with the requested scope', async () => {
      const result = await runCli(
        ['client', 'create', '--name', 'CLI Tool', '--redirect-uri', 'http://localhost:7777/callback', '--public', '--scope', 'products:read', '--json'],
        env,
      );
      expect(result.code).toBe(0);
      const client = json(result.stdout);
      expect(client).not.toHaveProperty('client_secret');
      expect(client).toMatchObject({ scope: 'products:read', token_endpoint_auth_method: 'none' });
    });

    it('client create --grant client_credentials makes a confidential service client with no redirect URI', async () => {
      const result = await runCli(['client', 'create', '--name', 'Stock Sync', '--grant', 'client_credentials', '--scope', 'products:read', '--json'], env);
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      const client = json(result.stdout);
      expect(client).toMatchObject({ grant_types: ['client_credentials'], redirect_uris: [], scope: 'products:read', token_endpoint_auth_method: 'client_secret_basic' });
      expect(client.client_secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    });

    it.each([['device_code'], ['urn:ietf:params:oauth:grant-type:device_code']])('client create --grant %s makes a device client with refresh tokens', async (grant) => {
      const result = await runCli(['client', 'create', '--name', 'TV', '--grant', grant, '--public', '--json'], env);
      expect(result.code).toBe(0);
      expect(json(result.stdout)).toMatchObject({ grant_types: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'], redirect_uris: [], token_endpoint_auth_method: 'none' });
    });

    it.each([
      [['--grant', 'client_credentials', '--public'], /needs a confidential client/, 2],
      [['--grant', 'client_credentials', '--redirect-uri', 'https://s.example/cb'], /--redirect-uri is used only by --grant authorization_code/, 2],
      [['--grant', 'password'], /unknown --grant password/, 2],
      [['--grant', 'authorization_code', '--grant', 'device_code'], /needs at least one --redirect-uri/, 2],
    ])('client create refuses the grant options %j with a clear message', async (extra, message, code) => {
      const result = await runCli(['client', 'create', '--name', 'Bad', ...extra, '--json'], env);
      expect(result.code).toBe(code);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(message);
    });

    it.each([
      [['--redirect-uri', 'http://shop.example/cb'], /must use https/],
      [['--redirect-uri', 'https://shop.example/cb#frag'], /must not contain a fragment/],
      [['--redirect-uri', 'not-a-uri'], /not an absolute URI/],
      [['--redirect-uri', 'https://shop.example/cb', '--scope', 'admin'], /unknown scope admin/],
    ])('client create refuses %j with a clear message', async (extra, message) => {
      const result = await runCli(['client', 'create', '--name', 'Bad', ...extra, '--json'], env);
      expect(result.code).not.toBe(0);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(message);
    });

    it('client create --auth-method private_key_jwt --jwks-file --require-dpop registers keys and no secret (RFC 7523, RFC 9449 §5.2)', async () => {
      const { publicKey } = await generateKeyPair('ES256', { extractable: true });
      const file = path.join(mkdtempSync(path.join(tmpdir(), 'fieldgate-jwks-')), 'jwks.json');
      writeFileSync(file, JSON.stringify({ keys: [await exportJWK(publicKey)] }));
      const result = await runCli(
        ['client', 'create', '--name', 'Service', '--redirect-uri', 'https://svc.example/cb', '--auth-method', 'private_key_jwt', '--jwks-file', file, '--require-dpop', '--json'],
        env,
      );
      expect(result.stderr).toBe('');
      const client = json(result.stdout);
      expect(client).not.toHaveProperty('client_secret');
      expect(client).toMatchObject({ token_endpoint_auth_method: 'private_key_jwt', dpop_bound_access_tokens: true });

      const noKeys = await runCli(['client', 'create', '--name', 'Bad', '--redirect-uri', 'https://svc.example/cb', '--auth-method', 'private_key_jwt', '--json'], env);
      expect(noKeys.code).not.toBe(0);
      expect(noKeys.stderr).toMatch(/exactly one of jwks or jwks_uri/);
      writeFileSync(file, JSON.stringify({ keys: [await exportJWK((await generateKeyPair('ES256', { extractable: true })).privateKey)] }));
      const privateKey = await runCli(['client', 'create', '--name', 'Bad', '--redirect-uri', 'https://svc.example/cb', '--auth-method', 'private_key_jwt', '--jwks-file', file, '--json'], env);
      expect(privateKey.stderr).toMatch(/public keys only/);
    });

    it('client update replaces grants, a private_key_jwt client\'s keys and the DPoP requirement, and refuses what cannot change', async () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'fieldgate-jwks-'));
      const keyFile = async (name: string) => {
        const file = path.join(dir, name);
        writeFileSync(file, JSON.stringify({ keys: [await exportJWK((await generateKeyPair('ES256', { extractable: true })).publicKey)] }));
        return file;
      };
      const [oldKeys, newKeys] = [await keyFile('old.json'), await keyFile('new.json')];
      const created = json(
        (await runCli(['client', 'create', '--name', 'Signer', '--grant', 'client_credentials', '--auth-method', 'private_key_jwt', '--jwks-file', oldKeys, '--json'], env)).stdout,
      );
      const id = created.client_id as string;
      const rotated = await runCli(['client', 'update', id, '--jwks-file', newKeys, '--require-dpop', '--grant', 'client_credentials', '--grant', 'device_code', '--json'], env);
      expect(rotated.stderr).toBe('');
      expect(json(rotated.stdout)).toMatchObject({
        token_endpoint_auth_method: 'private_key_jwt',
        dpop_bound_access_tokens: true,
        grant_types: ['client_credentials', 'urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'],
      });
      await withDatabase(kind, env, async (runtime) => {
        const stored = await runtime.clients.find(id);
        expect(stored?.jwks).toEqual(JSON.parse((await import('node:fs')).readFileSync(newKeys, 'utf8')));
        expect(stored?.jwksUri).toBeNull();
      });
      const byUri = json((await runCli(['client', 'update', id, '--jwks-uri', 'https://keys.example/jwks.json', '--no-require-dpop', '--json'], env)).stdout);
      expect(byUri).toMatchObject({ jwks_uri: 'https://keys.example/jwks.json' });
      expect(byUri.dpop_bound_access_tokens).toBeUndefined();

      const secretClient = json((await runCli(['client', 'create', '--name', 'Secret', '--redirect-uri', 'https://s.example/cb', '--json'], env)).stdout);
      const keysForSecret = await runCli(['client', 'update', secretClient.client_id as string, '--jwks-file', newKeys], env);
      const noRedirect = await runCli(['client', 'update', id, '--grant', 'authorization_code'], env);
      const both = await runCli(['client', 'update', id, '--jwks-file', newKeys, '--jwks-uri', 'https://keys.example/j'], env);
      const ftpUri = await runCli(['client', 'update', id, '--jwks-uri', 'ftp://keys.example/j'], env);
      expect([keysForSecret.code, keysForSecret.stderr]).toEqual([1, expect.stringMatching(/only a private_key_jwt client has keys/)]);
      expect([noRedirect.code, noRedirect.stderr]).toEqual([1, expect.stringMatching(/needs at least one redirect URI/)]);
      expect([both.code, both.stderr]).toEqual([2, expect.stringMatching(/not both/)]);
      expect([ftpUri.code, ftpUri.stderr]).toEqual([1, expect.stringMatching(/must be an https URL/)]);
      // Nothing refused changed the stored client.
      const listed = json((await runCli(['client', 'list', '--json'], env)).stdout).clients as { client_id: string }[];
      expect(listed.find((c) => c.client_id === id)).toMatchObject({
        jwks_uri: 'https://keys.example/jwks.json',
      });
    });

    it('client delete removes a client, and says so when there is none', async () => {
      const created = json((await runCli(['client', 'create', '--name', 'Temp', '--redirect-uri', 'https://t.example/cb', '--json'], env)).stdout);
      const deleted = await runCli(['client', 'delete', created.client_id as string, '--json'], env);
      expect(deleted.code).toBe(0);
      expect(json(deleted.stdout)).toEqual({ deleted: created.client_id });
      const again = await runCli(['client', 'delete', created.client_id as string, '--json'], env);
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(/no client with id/);
    });

    it('user create reads the password from stdin and refuses a taken username', async () => {
      const result = await runCli(['user', 'create', '--username', 'alice', '--password-stdin', '--json'], env, 'correct horse battery staple\n');
      expect(result.code).toBe(0);
      const user = json(result.stdout);
      expect(user).toEqual({ id: expect.any(Number), username: 'alice' });
      const again = await runCli(['user', 'create', '--username', 'alice', '--password-stdin', '--json'], env, 'another password\n');
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(/username alice is taken/);
      const noPassword = await runCli(['user', 'create', '--username', 'bob', '--password-stdin'], env, '');
      expect(noPassword.code).not.toBe(0);
      expect(noPassword.stderr).toMatch(/no password on standard input/);
      expect(noPassword.code).toBe(2);
      const short = await runCli(['user', 'create', '--username', 'bob', '--password-stdin'], env, 'seven77\n');
      expect(short.code).toBe(1);
      expect(short.stderr).toMatch(/a password is 8 to 1024 characters/);
    });

    /** Opens the CLI's database in-process (closed again before the next CLI run: PGlite allows one process). */
    async function withApp<T>(fn: (runtime: Runtime, app: Express) => Promise<T>): Promise<T> {
      const config = loadConfig({ ...env, ISSUER: TEST_ISSUER, DEMO: 'false', LOG_LEVEL: 'error' });
      const runtime = await openRuntime(config, createLogger('error'));
      try {
        return await fn(runtime, createApp(runtime));
      } finally {
        await runtime.close();
      }
    }

    async function createUser(username: string): Promise<number> {
      return json((await runCli(['user', 'create', '--username', username, '--password-stdin', '--json'], env, 'first password\n')).stdout).id as number;
    }
    const issueToken = (userId: number) =>
      withApp(async (runtime) => {
        const grantId = randomUUID();
        const scope = 'orders:read products:read';
        const client = await runtime.clients.create({ name: 'cli test', redirectUris: ['https://c.example/cb'] });
        await runtime.db.insert(grants).values({ id: grantId, clientId: client.client_id, userId, scope });
        return (await runtime.accessTokens.issue({ userId, clientId: client.client_id, scope, grantId })).token;
      });
    const status = (token: string) => withApp(async (_runtime, app) => (await request(app).get('/orders').set('Authorization', `Bearer ${token}`)).status);

    it('user list shows accounts without secrets; user delete ends their live tokens', async () => {
      const id = await createUser('carol');
      const listed = json((await runCli(['user', 'list', '--json'], env)).stdout) as { users: { id: number; username: string }[] };
      expect(listed.users).toContainEqual({ id, username: 'carol', created_at: expect.any(String) });
      expect(JSON.stringify(listed)).not.toMatch(/password|scrypt/);
      const token = await issueToken(id);
      expect(await status(token)).toBe(200);
      const deleted = await runCli(['user', 'delete', 'carol', '--json'], env);
      expect(json(deleted.stdout)).toEqual({ deleted: 'carol' });
      expect(await status(token)).toBe(401);
      const again = await runCli(['user', 'delete', 'carol'], env);
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(/no user carol/);
    });

    it('user passwd sets the password from stdin and revokes the old grants', async () => {
      const id = await createUser('erin');
      const token = await issueToken(id);
      const passwd = await runCli(['user', 'passwd', 'erin', '--password-stdin', '--json'], env, 'second password\n');
      expect(json(passwd.stdout)).toEqual({ updated: 'erin' });
      await withApp(async (runtime, app) => {
        expect(await runtime.users.authenticate('erin', 'second password')).toBeDefined();
        expect(await runtime.users.authenticate('erin', 'first password')).toBeUndefined();
        expect((await request(app).get('/orders').set('Authorization', `Bearer ${token}`)).status).toBe(401);
      });
      expect((await runCli(['user', 'passwd', 'erin'], env, 'x\n')).stderr).toMatch(/needs --password-stdin/);
      expect((await runCli(['user', 'passwd', 'nobody', '--password-stdin'], env, 'long enough\n')).stderr).toMatch(/no user nobody/);
    });

    it('user passwd tells the apps of the user by back-channel logout, for all of their sessions', async () => {
      const receiver = await startLogoutReceiver();
      try {
        const id = await createUser('frank');
        const clientId = await withApp(async (runtime) => {
          const client = await runtime.clients.create({ name: 'passwd logout', redirectUris: ['https://p.example/cb'], oidc: { backchannelLogoutUri: `${receiver.url}/bc` } });
          await runtime.db.insert(consents).values({ userId: id, clientId: client.client_id, scope: 'openid' });
          return client.client_id;
        });
        const passwd = await runCli(['user', 'passwd', 'frank', '--password-stdin', '--json'], { ...env, BACKCHANNEL_LOGOUT_ALLOW_PRIVATE: 'true' }, 'third password\n');
        expect(passwd.code).toBe(0);
        expect(receiver.received.map((entry) => entry.path)).toEqual(['/bc']);
        const token = decodeJwt(receiver.received[0]!.token);
        expect(token).toMatchObject({ aud: clientId, sub: String(id) });
        expect(token.sid).toBeUndefined();
      } finally {
        receiver.close();
      }
    });

    it('user unlock clears the account lock; bad user commands are usage errors', async () => {
      await withApp(async (runtime) => {
        const throttle = new LoginThrottle(runtime.db);
        for (let i = 0; i < DEFAULT_LOGIN_THROTTLE_POLICY.account.maxFailures; i++) await throttle.recordFailure('frank', `192.0.2.${i}`);
        expect((await throttle.check('frank', '198.51.100.1')).locked).toBe(true);
      });
      expect(json((await runCli(['user', 'unlock', 'frank', '--json'], env)).stdout)).toEqual({ unlocked: 'frank', was_throttled: true });
      await withApp(async (runtime) => expect((await new LoginThrottle(runtime.db).check('frank', '198.51.100.1')).locked).toBe(false));
      expect((await runCli(['user', 'delete'], env)).stderr).toMatch(/needs exactly one USERNAME/);
    });

    it('client delete ends the live tokens of the client', async () => {
      const { token, clientId } = await withApp(async (runtime) => {
        const user = await runtime.users.create(`dave-${randomUUID().slice(0, 8)}`, 'password');
        const client = await runtime.clients.create({ name: 'doomed', redirectUris: ['https://d.example/cb'] });
        const grantId = randomUUID();
        await runtime.db.insert(grants).values({ id: grantId, clientId: client.client_id, userId: user.id, scope: 'orders:read' });
        const issued = await runtime.accessTokens.issue({ userId: user.id, clientId: client.client_id, scope: 'orders:read', grantId });
        return { token: issued.token, clientId: client.client_id };
      });
      expect((await runCli(['client', 'delete', clientId], env)).code).toBe(0);
      await withApp(async (_runtime, app) => {
        const res = await request(app).get('/orders').set('Authorization', `Bearer ${token}`);
        expect(res.status).toBe(401);
        expect(res.headers['www-authenticate']).toMatch(/error="invalid_token"/);
      });
    });

    it('keys rotate makes a new key current for each algorithm and retires the old ones', async () => {
      type Rotated = { kid: string; retired: string[]; keys: { alg: string; kid: string; retired: string[] }[] };
      const first = json((await runCli(['keys', 'rotate', '--json'], env)).stdout) as Rotated;
      const rotation = await runCli(['keys', 'rotate'], env);
      expect(rotation.stdout).toMatch(/^New signing keys \S+ \(ES256\), \S+ \(RS256\)\. Retired /);
      const second = json((await runCli(['keys', 'rotate', '--json'], env)).stdout) as Rotated;
      expect(first.keys.map((key) => key.alg)).toEqual(['ES256', 'RS256']);
      // `kid` stays the access-token (ES256) key, as before there were two.
      expect(first.kid).toBe(first.keys[0]!.kid);
      expect(second.kid).not.toBe(first.kid);
      expect(second.retired).toHaveLength(2);
      const listed = json((await runCli(['keys', 'list', '--json'], env)).stdout) as { keys: { kid: string; alg: string; state: string }[] };
      const current = listed.keys.filter((key) => key.state === 'current').map((key) => [key.alg, key.kid]);
      expect(current.sort()).toEqual(second.keys.map((key) => [key.alg, key.kid]).sort());
      expect(listed.keys.find((key) => key.kid === first.kid)).toMatchObject({ alg: 'ES256', state: 'published' });
    });

    it('seed --demo adds the demo data and is idempotent', async () => {
      const first = json((await runCli(['seed', '--demo', '--json'], env)).stdout);
      expect(first.productsCreated).toBeGreaterThanOrEqual(25);
      expect(first.userCreated).toBe(true);
      const second = json((await runCli(['seed', '--demo', '--json'], env)).stdout);
      expect(second.productsCreated).toBe(0);
      expect(second.userCreated).toBe(false);
    });

    it('reports unknown commands and bad options on stderr with a non-zero exit', async () => {
      const unknown = await runCli(['frobnicate'], env);
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toMatch(/unknown command "frobnicate"/);
      const badOption = await runCli(['client', 'list', '--bogus'], env);
      expect(badOption.code).toBe(2);
      expect(badOption.stderr).toMatch(/bogus/);
    });

    it('suggests the nearest command, subcommand or option for a typo, with exit status 2', async () => {
      const [command, subcommand, option, missing, extra, duration] = await Promise.all([
        runCli(['clinet', 'list'], env),
        runCli(['client', 'lsit'], env),
        runCli(['client', 'update', 'x', '--redirect-ur', 'https://a.example/cb'], env),
        runCli(['consent', 'revoke', '--user', 'alice'], env),
        runCli(['keys', 'list', 'extra'], env),
        runCli(['client', 'rotate-secret', 'x', '--overlap', 'soon'], env),
      ]);
      expect(command.stderr).toMatch(/unknown command "clinet"; did you mean client\?/);
      expect(subcommand.stderr).toMatch(/unknown client command "lsit" .*did you mean list\?/);
      expect(option.stderr.trim()).toBe('fieldgate: client update: unknown option --redirect-ur; did you mean --redirect-uri?');
      expect(missing.stderr).toMatch(/consent revoke needs --user NAME and --client ID/);
      expect(extra.stderr).toMatch(/keys list takes no arguments/);
      expect(duration.stderr).toMatch(/--overlap must be a duration/);
      for (const result of [command, subcommand, option, missing, extra, duration]) {
        expect(result.code).toBe(2);
        expect(result.stdout).toBe('');
      }
    });

    it('client update changes the name, redirect URIs and scopes, and refuses bad ones', async () => {
      const created = json((await runCli(['client', 'create', '--name', 'Old', '--redirect-uri', 'https://a.example/cb', '--json'], env)).stdout);
      const id = created.client_id as string;
      const updated = await runCli(
        ['client', 'update', id, '--name', 'New', '--add-redirect-uri', 'https://b.example/cb', '--scope', 'products:read', '--json'],
        env,
      );
      expect(updated.code).toBe(0);
      expect(json(updated.stdout)).toMatchObject({
        client_id: id,
        client_name: 'New',
        redirect_uris: ['https://a.example/cb', 'https://b.example/cb'],
        scope: 'products:read',
      });
      const removed = json((await runCli(['client', 'update', id, '--remove-redirect-uri', 'https://a.example/cb', '--json'], env)).stdout);
      expect(removed.redirect_uris).toEqual(['https://b.example/cb']);
      // One after another: an embedded data directory admits one process at a time.
      const lastUri = await runCli(['client', 'update', id, '--remove-redirect-uri', 'https://b.example/cb'], env);
      const badUri = await runCli(['client', 'update', id, '--redirect-uri', 'http://evil.example/cb'], env);
      const nothing = await runCli(['client', 'update', id], env);
      const unknown = await runCli(['client', 'update', 'no-such-client', '--name', 'X'], env);
      expect([lastUri.code, lastUri.stderr]).toEqual([1, expect.stringMatching(/at least one redirect URI/)]);
      expect([badUri.code, badUri.stderr]).toEqual([1, expect.stringMatching(/must use https/)]);
      expect([nothing.code, nothing.stderr]).toEqual([2, expect.stringMatching(/needs something to change/)]);
      expect([unknown.code, unknown.stderr]).toEqual([1, expect.stringMatching(/no client with id no-such-client/)]);
    });

    it('consent list and revoke show and withdraw what a user allowed, revoking their grants', async () => {
      await runCli(['user', 'create', '--username', 'carol', '--password-stdin'], env, 'carol password\n');
      const client = json((await runCli(['client', 'create', '--name', 'Consented', '--redirect-uri', 'https://c.example/cb', '--json'], env)).stdout);
      await withDatabase(kind, env, async (runtime) => {
        const { ConsentStore } = await import('../src/oauth/stores/consents.js');
        const { AuthorizationCodeStore } = await import('../src/oauth/stores/codes.js');
        const user = (await runtime.db.select().from(users)).find((u) => u.username === 'carol')!;
        const consents = new ConsentStore(runtime.db);
        await consents.grant(user.id, client.client_id as string, ['products:read']);
        // A redeemed code: its grant is live.
        const codes = new AuthorizationCodeStore(runtime.db, 600, runtime.authorizationCodeSecret, consents);
        const { code } = await codes.issue(
          { clientId: client.client_id as string, userId: user.id, scope: 'products:read', redirectUri: null, codeChallenge: null, codeChallengeMethod: null },
          { epoch: user.sessionEpoch, sid: 'cli-test-session' },
        );
        expect(await codes.redeem(code, client.client_id as string)).toBeDefined();
      });
      const listed = json((await runCli(['consent', 'list', '--user', 'carol', '--json'], env)).stdout) as { consents: Record<string, unknown>[] };
      expect(listed.consents).toEqual([
        expect.objectContaining({ username: 'carol', clientId: client.client_id, scope: 'products:read', liveGrants: 1 }),
      ]);
      const revoked = await runCli(['consent', 'revoke', '--user', 'carol', '--client', client.client_id as string, '--json'], env);
      expect(revoked.code).toBe(0);
      expect(json(revoked.stdout)).toMatchObject({ consentDeleted: true, grantsRevoked: 1 });
      expect(json((await runCli(['consent', 'list', '--client', client.client_id as string, '--json'], env)).stdout)).toEqual({ consents: [] });
      const again = await runCli(['consent', 'revoke', '--user', 'carol', '--client', client.client_id as string], env);
      expect([again.code, again.stderr]).toEqual([1, expect.stringMatching(/has no consent or live grant/)]);
    });

    it('keys list shows the current keys; keys retire withdraws a key and replaces a current one with one of its algorithm', async () => {
      type Listed = { keys: { kid: string; alg: string; state: string }[] };
      const before = json((await runCli(['keys', 'list', '--json'], env)).stdout) as Listed;
      expect(before.keys.filter((k) => k.state === 'current').map((k) => k.alg).sort()).toEqual(['ES256', 'RS256']);
      for (const alg of ['RS256', 'ES256']) {
        const listed = json((await runCli(['keys', 'list', '--json'], env)).stdout) as Listed;
        const current = listed.keys.find((k) => k.state === 'current' && k.alg === alg)!;
        const other = listed.keys.find((k) => k.state === 'current' && k.alg !== alg)!;
        const retired = await runCli(['keys', 'retire', current.kid, '--json'], env);
        expect(retired.code).toBe(0);
        const result = json(retired.stdout);
        expect(result).toMatchObject({ retired: current.kid, alg });
        const after = json((await runCli(['keys', 'list', '--json'], env)).stdout) as Listed;
        expect(after.keys.map((k) => k.kid)).not.toContain(current.kid);
        expect(after.keys.find((k) => k.state === 'current' && k.alg === alg)?.kid).toBe(result.current);
        // The other algorithm's key is untouched.
        expect(after.keys.find((k) => k.state === 'current' && k.alg !== alg)?.kid).toBe(other.kid);
      }
      const unknown = await runCli(['keys', 'retire', 'nope'], env);
      expect([unknown.code, unknown.stderr]).toEqual([1, expect.stringMatching(/no signing key nope/)]);
    });

    it('reads base64url ids that start with a dash as ids, as positionals and as option values', async () => {
      const dashedKid = '-Xq3v9Lr0Tz_8yWbN2kM';
      const retire = await runCli(['keys', 'retire', dashedKid], env);
      expect([retire.code, retire.stderr]).toEqual([1, expect.stringMatching(new RegExp(`no signing key ${dashedKid}`))]);
      const update = await runCli(['client', 'update', '-abcDEF123_xyz', '--name', 'X'], env);
      expect([update.code, update.stderr]).toEqual([1, expect.stringMatching(/no client with id -abcDEF123_xyz/)]);
      await runCli(['user', 'create', '--username', 'dave', '--password-stdin'], env, 'dave password\n');
      const revoke = await runCli(['consent', 'revoke', '--user', 'dave', '--client', '-abcDEF123_xyz'], env);
      expect([revoke.code, revoke.stderr]).toEqual([1, expect.stringMatching(/has no consent or live grant for client -abcDEF123_xyz/)]);
      const typo = await runCli(['keys', 'retire', '-x'], env);
      expect(typo.code).toBe(2);
    });

    it('janitor deletes expired rows and reports what it deleted', async () => {
      await withDatabase(kind, env, async (runtime) => {
        await runtime.db.insert(revokedAccessTokens).values({ jti: `expired-${kind}`, expiresAt: sql`now() - interval '1 minute'` });
      });
      const result = await runCli(['janitor', '--json'], env);
      expect(result.code).toBe(0);
      expect(json(result.stdout)).toMatchObject({ revokedAccessTokens: 1, skipped: false });
    });

    it('client rotate-secret: the old secret works at /token during the overlap and fails after it', async () => {
      const created = json((await runCli(['client', 'create', '--name', 'Rotating', '--redirect-uri', 'https://r.example/cb', '--json'], env)).stdout);
      const id = created.client_id as string;
      const oldSecret = created.client_secret as string;
      const rotated = await runCli(['client', 'rotate-secret', id, '--overlap', '1h', '--json'], env);
      expect(rotated.code).toBe(0);
      const { client_secret: newSecret, previous_secret_expires_at: until } = json(rotated.stdout) as Record<string, string>;
      expect(newSecret).not.toBe(oldSecret);
      expect(Date.parse(until!) - Date.now()).toBeGreaterThan(50 * 60_000);
      // invalid_grant means the client authenticated and only the (deliberately bogus) code failed.
      const authenticates = async (secret: string) =>
        withDatabase(kind, env, async (runtime) => {
          const res = await request(createApp(runtime))
            .post('/token')
            .type('form')
            .set('Authorization', `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`)
            .send({ grant_type: 'authorization_code', code: 'bogus', redirect_uri: 'https://r.example/cb', code_verifier: 'x'.repeat(43) });
          return res.body.error as string;
        });
      expect(await authenticates(oldSecret)).toBe('invalid_grant');
      expect(await authenticates(newSecret!)).toBe('invalid_grant');
      expect(await authenticates('wrong')).toBe('invalid_client');
      await withDatabase(kind, env, async (runtime) => {
        await runtime.db.update(clients).set({ previousSecretExpiresAt: sql`now() - interval '1 second'` }).where(eq(clients.id, id));
      });
      expect(await authenticates(oldSecret)).toBe('invalid_client');
      expect(await authenticates(newSecret!)).toBe('invalid_grant');

      const immediate = json((await runCli(['client', 'rotate-secret', id, '--overlap', '0', '--json'], env)).stdout);
      expect(immediate.previous_secret_expires_at).toBeNull();
      expect(await authenticates(newSecret!)).toBe('invalid_client');
      expect(await authenticates(immediate.client_secret as string)).toBe('invalid_grant');
      const publicClient = json((await runCli(['client', 'create', '--name', 'P', '--public', '--redirect-uri', 'https://p.example/cb', '--json'], env)).stdout);
      const refused = await runCli(['client', 'rotate-secret', publicClient.client_id as string], env);
      expect([refused.code, refused.stderr]).toEqual([1, expect.stringMatching(/is public: it has no secret/)]);
    });

    it('every command and group answers --help with its usage and exit status 0', async () => {
      const invocations = [
        ['--help'], ['help', 'client'], ['serve', '--help'], ['migrate', '--help'], ['seed', '--help'], ['client', '--help'],
        ['client', 'create', '--help'], ['client', 'list', '--help'], ['client', 'update', '--help'], ['client', 'rotate-secret', '--help'],
        ['client', 'delete', '--help'], ['user', 'create', '--help'], ['consent', 'list', '--help'], ['consent', 'revoke', '--help'],
        ['keys', 'rotate', '--help'], ['keys', 'list', '--help'], ['keys', 'retire', '-h'], ['janitor', '--help'], ['backup', '--help'], ['restore', '--help'],
      ];
      const results = await Promise.all(invocations.map((args) => runCli(args, { ...env, AUTH_CODE_TTL: 'not read for help' })));
      results.forEach((result, i) => {
        expect({ args: invocations[i], code: result.code, stderr: result.stderr }).toEqual({ args: invocations[i], code: 0, stderr: '' });
        expect(result.stdout).toMatch(/^Usage: fieldgate /);
      });
      expect(results[0]!.stdout).toContain('client rotate-secret');
      // Each summary starts in one column, past the longest command name.
      const commandLines = results[0]!.stdout.split('\n').filter((line) => /^  [a-z]/.test(line));
      expect(new Set(commandLines.map((line) => /^  \S+(?: \S+)? +/.exec(line)![0].length)).size).toBe(1);
      expect(commandLines.find((line) => line.startsWith('  registration-token create'))).toMatch(/create +make an initial/);
      expect(results[8]!.stdout).toContain('--add-redirect-uri');
    });

    it('reports a bad configuration value naming the variable', async () => {
      const result = await runCli(['migrate'], { ...env, AUTH_CODE_TTL: '9000' });
      expect(result.code).toBe(1);
      expect(result.stderr.trim()).toBe('fieldgate: AUTH_CODE_TTL: must be a whole number from 1 to 600, got 9000');
    });
  });
}

describe('fieldgate CLI on an embedded data directory held by a server', () => {
  it('refuses to open it and names the process holding it', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'fieldgate-held-'));
    const server = await startServerProcess({ DATA_DIR: dataDir });
    try {
      const result = await runCli(['client', 'list'], { DATA_DIR: dataDir });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`is in use by process ${server.child.pid}`);
    } finally {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('fieldgate backup and restore of the embedded database', () => {
  it('restores a backup into an empty directory, refuses to clobber one without --force, and refuses PostgreSQL', async () => {
    const source = mkdtempSync(path.join(tmpdir(), 'fieldgate-backup-'));
    const target = mkdtempSync(path.join(tmpdir(), 'fieldgate-restore-'));
    const file = path.join(source, '..', `${path.basename(source)}.tar.gz`);
    try {
      const created = await runCli(['client', 'create', '--name', 'Kept', '--redirect-uri', 'https://k.example/cb', '--json'], { DATA_DIR: source });
      const clientId = JSON.parse(created.stdout).client_id as string;
      const backup = await runCli(['backup', '--output', file, '--json'], { DATA_DIR: source });
      expect(backup.stderr).toBe('');
      expect(backup.code).toBe(0);
      expect(JSON.parse(backup.stdout)).toMatchObject({ backup: file, bytes: expect.any(Number) });
      const again = await runCli(['backup', '--output', file], { DATA_DIR: source });
      expect([again.code, again.stderr]).toEqual([1, expect.stringMatching(/exists; pass --force/)]);

      const restored = await runCli(['restore', '--input', file, '--json'], { DATA_DIR: target });
      expect(restored.stderr).toBe('');
      expect(restored.code).toBe(0);
      const listed = JSON.parse((await runCli(['client', 'list', '--json'], { DATA_DIR: target })).stdout) as { clients: { client_id: string }[] };
      expect(listed.clients.map((c) => c.client_id)).toContain(clientId);

      const clobber = await runCli(['restore', '--input', file], { DATA_DIR: target });
      expect([clobber.code, clobber.stderr]).toEqual([1, expect.stringMatching(/already holds a database; pass --force/)]);
      const forced = JSON.parse((await runCli(['restore', '--input', file, '--force', '--json'], { DATA_DIR: target })).stdout);
      expect(forced.previous).toMatch(/pgdata\.before-restore-/);

      const garbage = path.join(source, 'garbage.tar.gz');
      writeFileSync(garbage, 'not a backup');
      const bad = await runCli(['restore', '--input', garbage, '--force'], { DATA_DIR: target });
      expect([bad.code, bad.stderr]).toEqual([1, expect.stringMatching(/is not a usable backup/)]);
      // The database that was there is put back.
      const still = JSON.parse((await runCli(['client', 'list', '--json'], { DATA_DIR: target })).stdout) as { clients: { client_id: string }[] };
      expect(still.clients.map((c) => c.client_id)).toContain(clientId);

      const onPostgres = await runCli(['backup', '--output', file], { DATABASE_URL: 'postgres://127.0.0.1:1/none' });
      expect([onPostgres.code, onPostgres.stderr]).toEqual([1, expect.stringMatching(/embedded database only; for PostgreSQL use pg_dump/)]);
    } finally {
      rmSync(source, { recursive: true, force: true });
      rmSync(target, { recursive: true, force: true });
      rmSync(file, { force: true });
    }
  }, 300_000);
});

describe('fieldgate restore of a file that is not a backup', () => {
  it('says so in one line, exits 1 and leaves no half-loaded database behind', async () => {
    const target = mkdtempSync(path.join(tmpdir(), 'fieldgate-restore-'));
    try {
      const files = {
        random: randomBytes(4096),
        // Gzip's magic number, then damaged data: a backup cut short or corrupted in transit.
        damagedGzip: Buffer.concat([Buffer.from([0x1f, 0x8b, 0x08, 0x00]), randomBytes(2048)]),
        gzipOfText: gzipSync('just some text, not a data directory'),
      };
      for (const [name, bytes] of Object.entries(files)) {
        const file = path.join(target, `${name}.tar.gz`);
        writeFileSync(file, bytes);
        const result = await runCli(['restore', '--input', file], { DATA_DIR: path.join(target, 'data') });
        expect(result.code, name).toBe(1);
        expect(result.stderr.trim().split('\n'), name).toEqual([expect.stringMatching(/^fieldgate: .* is not a usable backup: /)]);
        expect(existsSync(path.join(target, 'data', 'pgdata', 'PG_VERSION')), name).toBe(false);
      }
    } finally {
      rmSync(target, { recursive: true, force: true });
    }
  }, 120_000);
});
