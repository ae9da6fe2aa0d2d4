import { afterEach, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { childEnv, FIELDGATE_BIN, runCli, startServerProcess, type ServerProcess } from './support/processes.js';
import { Browser } from './support/oauth.js';
import { DEMO_PASSWORD, DEMO_USERNAME } from '../src/demo/seed.js';

describe('fieldgate serve on an embedded data directory', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  const dataDir = () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'fieldgate-serve-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    return dir;
  };
  const start = async (env: Record<string, string>) => {
    const server = await startServerProcess(env);
    cleanups.push(async () => void (await server.stop('SIGKILL')));
    return server;
  };

  it('seeds the demo on first start and prints the URL, demo client, login and an /authorize link', async () => {
    const server = await start({ DATA_DIR: dataDir() });
    const out = server.stderr();
    expect(out).toContain(`Fieldgate is listening on ${server.url}`);
    expect(out).toMatch(/Demo client id: +demo-client/);
    expect(out).toMatch(/Demo client secret: +[A-Za-z0-9_-]{43}/);
    expect(out).toMatch(/Demo login: +demo \/ demo/);
    const link = /Open to sign in: +(\S+)/.exec(out)?.[1];
    expect(link).toBeDefined();
    const authorize = new URL(link!);
    expect(authorize.origin + authorize.pathname).toBe(`${server.url}/authorize`);
    expect(Object.fromEntries(authorize.searchParams)).toMatchObject({
      response_type: 'code',
      client_id: 'demo-client',
      redirect_uri: `${server.url}/demo/callback`,
      code_challenge_method: 'S256',
    });
    // The demo user (its password hashed before the embedded database loaded) signs in through the printed link.
    const landing = await new Browser(server.url).authorize(Object.fromEntries(authorize.searchParams), { id: 0, username: DEMO_USERNAME, password: DEMO_PASSWORD });
    expect(landing.status).toBe(302);
    expect(landing.headers.location!.startsWith(`${server.url}/demo/callback?code=`)).toBe(true);
  });

  it('keeps its data across a clean stop and across kill -9', async () => {
    const dir = dataDir();
    let server: ServerProcess = await start({ DATA_DIR: dir });
    expect(await server.stop('SIGTERM')).toBe(0);

    const created = await runCli(['user', 'create', '--username', 'survivor', '--password-stdin', '--json'], { DATA_DIR: dir }, 'survivor-pw\n');
    expect(created.code).toBe(0);

    server = await start({ DATA_DIR: dir });
    expect(server.stderr()).toMatch(/Demo client id/);
    await server.stop('SIGKILL');

    // The lock left behind by the killed server is stale and taken over.
    const again = await runCli(['user', 'create', '--username', 'survivor', '--password-stdin'], { DATA_DIR: dir }, 'survivor-pw\n');
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('username survivor is taken');
    const seeded = await runCli(['seed', '--demo', '--json'], { DATA_DIR: dir });
    expect(JSON.parse(seeded.stdout)).toMatchObject({ productsCreated: 0, userCreated: false });
  });

  it('writes only JSON lines to stdout; the banner goes to stderr', async () => {
    const server = await start({ DATA_DIR: dataDir() });
    await fetch(`${server.url}/healthz`);
    expect(await server.stop('SIGTERM')).toBe(0);
    const lines = server.stdout().split('\n').filter(Boolean);
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
    expect(lines.map((line) => JSON.parse(line).msg)).toContain('listening');
    expect(server.stderr()).toContain('Fieldgate is listening on');
  });

  it('with PORT=0 names the port it really listens on, in the banner and the sign-in link', async () => {
    const child = spawn(process.execPath, [FIELDGATE_BIN, 'serve'], { env: childEnv({ DATA_DIR: dataDir(), PORT: '0' }), stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise((resolve) => child.on('exit', resolve));
    cleanups.push(async () => {
      child.kill('SIGKILL');
      await exited;
    });
    let err = '';
    const banner = await new Promise<string>((resolve, reject) => {
      child.stderr.on('data', (chunk) => {
        err += chunk;
        if (/Open to sign in: +\S+\n/.test(err)) resolve(err);
      });
      child.on('exit', () => reject(new Error(`exited early: ${err}`)));
    });
    const issuer = /Fieldgate is listening on (\S+)/.exec(banner)![1]!;
    const port = Number(new URL(issuer).port);
    expect(port).toBeGreaterThan(0);
    expect(banner).toContain(`bound to http://127.0.0.1:${port}`);
    expect(new URL(/Open to sign in: +(\S+)/.exec(banner)![1]!).port).toBe(String(port));
    const metadata = await (await fetch(`http://127.0.0.1:${port}/.well-known/oauth-authorization-server`)).json();
    expect(metadata.issuer).toBe(issuer);
  });

  it('exits 0 on SIGINT and SIGTERM', async () => {
    const dir = dataDir();
    const first = await start({ DATA_DIR: dir, DEMO: 'false' });
    expect(await first.stop('SIGINT')).toBe(0);
    const second = await start({ DATA_DIR: dir, DEMO: 'false' });
    expect(await second.stop('SIGTERM')).toBe(0);
  });

  /** Starts `serve` on `dir`, sends SIGTERM as soon as its lock file appears, and checks it stopped cleanly. */
  const stopAsTheLockAppears = async (dir: string) => {
    const child = spawn(process.execPath, [FIELDGATE_BIN, 'serve'], {
      env: childEnv({ DATA_DIR: dir, PORT: '0', LOG_LEVEL: 'info' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    cleanups.push(() => void child.kill('SIGKILL'));
    let err = '';
    child.stderr.on('data', (chunk) => (err += chunk));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const lockFile = path.join(dir, 'fieldgate.lock');
    while (!existsSync(lockFile)) await new Promise((resolve) => setTimeout(resolve, 5));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(err).not.toMatch(/unexpected error|Error:/);
    expect(existsSync(lockFile)).toBe(false);
  };

  it('stops cleanly on SIGTERM during start-up: the step under way finishes, the data directory is released, exit 0', async () => {
    const dir = dataDir();
    // The lock appears when the database starts opening: a first start then creates and migrates it.
    await stopAsTheLockAppears(dir);
    // Nothing was left half done: the next start uses the directory as it is.
    const next = await start({ DATA_DIR: dir, DEMO: 'false' });
    expect(await next.stop('SIGTERM')).toBe(0);
  });

  it('on an existing data directory, stops cleanly on SIGTERM while its database thread starts ahead of the app', async () => {
    const dir = dataDir();
    const first = await start({ DATA_DIR: dir });
    expect(await first.stop('SIGTERM')).toBe(0);
    // The lock is taken before the app's modules load: the signal arrives while both are under way.
    await stopAsTheLockAppears(dir);
    const next = await start({ DATA_DIR: dir });
    expect(next.stderr()).toMatch(/Demo client id: +demo-client/);
    expect(await next.stop('SIGTERM')).toBe(0);
  });

  it('refuses a second server on a held data directory in one line naming the holder, and the first serves on', async () => {
    const dir = dataDir();
    const first = await start({ DATA_DIR: dir, DEMO: 'false' });
    const second = await runCli(['serve'], { DATA_DIR: dir, PORT: '0' });
    expect(second.code).toBe(1);
    expect(second.stderr.trim().split('\n')).toEqual([expect.stringContaining(`is in use by process ${first.child.pid}`)]);
    expect((await fetch(`${first.url}/readyz`)).status).toBe(200);
    expect(await first.stop('SIGTERM')).toBe(0);
  });

  it('exits non-zero with one line naming a bad configuration variable', async () => {
    const result = await runCli(['serve'], { DATA_DIR: 'memory://', PORT: 'abc' });
    expect(result.code).toBe(1);
    expect(result.stderr.trim()).toBe('fieldgate: PORT: must be a whole number from 0 to 65535, got "abc"');
  });

  it('with PORT=0, exits non-zero naming the variable when the start fails after the port was picked', async () => {
    // A trusted document that does not validate is found only against the built app, after the port is reserved.
    const document = '{ noSuchField }';
    const manifest = path.join(dataDir(), 'trusted.json');
    writeFileSync(manifest, JSON.stringify({ [createHash('sha256').update(document).digest('hex')]: document }));
    const result = await runCli(['serve'], { DATA_DIR: 'memory://', PORT: '0', DEMO: 'false', GRAPHQL_TRUSTED_DOCUMENTS: manifest });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('GRAPHQL_TRUSTED_DOCUMENTS');
  }, 30_000);
});
