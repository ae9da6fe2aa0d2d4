import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runCli, startServerProcess } from './support/processes.js';
import { createPostgresDatabase, DATABASE_KINDS, type DatabaseKind } from './support/databases.js';
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import type { Express } from 'express';
import { createApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { grants } from '../src/db/schema.js';
import { createLogger } from '../src/logger.js';
import { DEFAULT_LOGIN_THROTTLE_POLICY, LoginThrottle } from '../src/oauth/login-throttle.js';
import { openRuntime, type Runtime } from '../src/runtime.js';
import { TEST_ISSUER } from './support/runtime.js';

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
      expect(Object.keys(client).sort()).toEqual(['client_id', 'client_secret', 'redirect_uris', 'scope', 'token_endpoint_auth_method']);
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

    it('client delete removes a client, and says so when there is none', async () => {
      const created = json((await runCli(['client', 'create', '--name', 'Temp', '--redirect-uri', 'https://t.example/cb', '--json'], env)).stdout);
      const deleted = await runCli(['client', 'delete', created.client_id as string, '--json'], env);
      expect(deleted.code).toBe(0);
      expect(json(deleted.stdout)).toEqual({ deleted: created.client_id });
      const again = await runCli(['client', 'delete', created.client_id as string, '--json'], env);
      expect(again.code).not.toBe(0);
      expect(again.stderr).toMatch(/no client with id/);
    });

    it('user create reads the password from stdin and refuses a taken username', async () => {
      const result = await runCli(['user', 'create', '--username', 'alice', '--password-stdin', '--json'], env, 'correct horse battery staple\n');
      expect(result.code).toBe(0);
      const user = json(result.stdout);
      expect(user).toEqual({ id: expect.any(Number), username: 'alice' });
      const again = await runCli(['user', 'create', '--username', 'alice', '--password-stdin', '--json'], env, 'other\n');
      expect(again.code).not.toBe(0);
      expect(again.stderr).toMatch(/username alice is taken/);
      const noPassword = await runCli(['user', 'create', '--username', 'bob', '--password-stdin'], env, '');
      expect(noPassword.code).not.toBe(0);
      expect(noPassword.stderr).toMatch(/no password on standard input/);
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
      expect(again.code).toBe(2);
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
      expect((await runCli(['user', 'passwd', 'nobody', '--password-stdin'], env, 'x\n')).stderr).toMatch(/no user nobody/);
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
        const user = await runtime.users.create(`dave-${randomUUID().slice(0, 8)}`, 'pw');
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

    it('keys rotate makes a new key current and retires the old one', async () => {
      const first = json((await runCli(['keys', 'rotate', '--json'], env)).stdout);
      const second = json((await runCli(['keys', 'rotate', '--json'], env)).stdout);
      expect(second.kid).not.toBe(first.kid);
      expect(second.retired).toEqual([first.kid]);
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
