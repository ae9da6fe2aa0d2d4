/**
 * What an operator sees when a setting points at something that is not there: a database that cannot be reached or
 * opened, a port already taken. One line naming what to fix, exit status 1, never a stack trace, and never a process
 * left running without serving.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { childEnv, FIELDGATE_BIN, freePort, type CliResult } from '../support/processes.js';
import { createPostgresDatabase, TEST_DATABASE_URL } from '../support/databases.js';
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';

/** Runs the CLI, killing it after `timeoutMs` (then `code` is null): a process that never exits is the failure. */
function runCliBounded(args: string[], env: Record<string, string | undefined>, timeoutMs = 30_000): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [FIELDGATE_BIN, ...args], { env: childEnv({ LOG_LEVEL: 'warn', ...env }), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Sets the mode of a directory tree: `directories` on each directory, `files` on each file. */
function setModes(root: string, directories: number, files: number): void {
  for (const entry of readdirSync(root, { withFileTypes: true, recursive: true })) {
    const full = path.join(entry.parentPath, entry.name);
    if (!entry.isSymbolicLink()) chmodSync(full, entry.isDirectory() ? directories : files);
  }
  chmodSync(root, directories);
}

/** Exit status 1 and exactly one line on stderr, with no stack frame in it. */
function expectOneLineFailure(result: CliResult, pattern: RegExp): void {
  expect(result.code).toBe(1);
  const lines = result.stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(pattern);
  expect(result.stderr).not.toMatch(/unexpected error|\n\s+at /);
}

describe('fieldgate with a database it cannot open', () => {
  it('names an unreachable PostgreSQL server in one line, for serve and for a command', async () => {
    const port = await freePort();
    const url = `postgres://fieldgate:s3cret@127.0.0.1:${port}/fieldgate`;
    for (const args of [['serve'], ['client', 'list']]) {
      const result = await runCliBounded(args, { DATABASE_URL: url });
      expectOneLineFailure(result, new RegExp(`^fieldgate: cannot open the database postgres://fieldgate@127\\.0\\.0\\.1:${port}/fieldgate: connection refused$`));
      expect(result.stderr).not.toContain('s3cret');
    }
  });

  it('never prints a password given as a query parameter', async () => {
    const port = await freePort();
    const result = await runCliBounded(['client', 'list'], { DATABASE_URL: `postgres://fieldgate@127.0.0.1:${port}/fieldgate?password=s3cret&application_name=x` });
    expectOneLineFailure(result, /\?password=\*\*\*&application_name=x: connection refused$/);
    expect(result.stderr).not.toContain('s3cret');
  });

  it.skipIf(!TEST_DATABASE_URL)('reports a parameter in the URL the server does not know as the URL\'s fault', async () => {
    const url = new URL(TEST_DATABASE_URL!);
    url.searchParams.set('no_such_setting', '1');
    expectOneLineFailure(await runCliBounded(['client', 'list'], { DATABASE_URL: url.href }), /: unrecognized configuration parameter "no_such_setting"$/);
  });

  // The first migration creates a schema: a role without CREATE on the database is refused by PostgreSQL, and the
  // operator must read PostgreSQL's reason, not the query wrapper's stack.
  it.skipIf(!TEST_DATABASE_URL)('gives PostgreSQL\'s reason in one line when it refuses a statement at start-up', async () => {
    const database = await createPostgresDatabase();
    const role = `fieldgate_no_create_${randomBytes(4).toString('hex')}`;
    const admin = postgres(TEST_DATABASE_URL!, { max: 1, onnotice: () => {} });
    try {
      await admin.unsafe(`create role "${role}" login`);
      const url = new URL(database.url);
      url.username = role;
      const result = await runCliBounded(['migrate'], { DATABASE_URL: url.href });
      expectOneLineFailure(result, /^fieldgate: the database refused a statement: permission denied for database \S+ \(SQLSTATE 42501\)$/);
    } finally {
      await database.drop();
      await admin.unsafe(`drop role if exists "${role}"`);
      await admin.end();
    }
  });

  it('names a host that does not resolve', async () => {
    const result = await runCliBounded(['migrate'], { DATABASE_URL: 'postgres://fieldgate@fieldgate-db.invalid:5432/fieldgate' });
    expectOneLineFailure(result, /^fieldgate: cannot open the database postgres:\/\/fieldgate@fieldgate-db\.invalid:5432\/fieldgate: host not found$/);
  });

  it.skipIf(!TEST_DATABASE_URL)('gives the server\'s reason for a database or role that does not exist', async () => {
    const missingDatabase = new URL(TEST_DATABASE_URL!);
    missingDatabase.pathname = '/fieldgate_no_such_database';
    expectOneLineFailure(await runCliBounded(['client', 'list'], { DATABASE_URL: missingDatabase.href }), /: database "fieldgate_no_such_database" does not exist$/);
    const missingRole = new URL(TEST_DATABASE_URL!);
    missingRole.username = 'fieldgate_no_such_role';
    missingRole.password = '';
    expectOneLineFailure(await runCliBounded(['client', 'list'], { DATABASE_URL: missingRole.href }), /: role "fieldgate_no_such_role" does not exist$/);
  });

  it('names an embedded DATA_DIR that cannot be created', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'fieldgate-operator-'));
    try {
      const file = path.join(dir, 'a-file');
      writeFileSync(file, '');
      const result = await runCliBounded(['client', 'list'], { DATA_DIR: path.join(file, 'data') });
      expectOneLineFailure(result, /^fieldgate: cannot open the database .*a-file\/data: not a directory$/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('names a DATA_DIR that is a file', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'fieldgate-operator-'));
    try {
      const file = path.join(dir, 'a-file');
      writeFileSync(file, '');
      expectOneLineFailure(await runCliBounded(['client', 'list'], { DATA_DIR: file }), /^fieldgate: cannot open the database .*a-file: it exists and is not a directory$/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('names an embedded database that will not start, and what to check, in one line', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'fieldgate-operator-'));
    try {
      const dataDir = path.join(dir, 'data');
      expect((await runCliBounded(['migrate'], { DATA_DIR: dataDir }, 120_000)).code).toBe(0);
      // Made read-only, as after a careless chmod -R or a volume mounted read-only: PostgreSQL refuses to start on it.
      setModes(path.join(dataDir, 'pgdata'), 0o555, 0o444);
      // `client list` runs PGlite on its main thread; `serve` on a thread of its own, started before the app loads.
      for (const command of [['client', 'list'], ['serve']]) {
        expectOneLineFailure(
          await runCliBounded(command, { DATA_DIR: dataDir, PORT: '0' }, 120_000),
          /^fieldgate: cannot open the database .*data: the embedded database did not start \(.*\); DATA_DIR must be a directory this user can write/,
        );
        expect(existsSync(path.join(dataDir, 'fieldgate.lock')), command.join(' ')).toBe(false);
      }
    } finally {
      setModes(dir, 0o755, 0o644);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('fieldgate serve on a port that is taken', () => {
  let taken: Server;
  let takenPort: number;
  beforeAll(async () => {
    taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    takenPort = (taken.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((resolve) => taken.close(() => resolve())));

  it('names PORT in one line and exits 1', async () => {
    const result = await runCliBounded(['serve'], { DATA_DIR: 'memory://', DEMO: 'false', PORT: String(takenPort) });
    expectOneLineFailure(result, new RegExp(`^fieldgate: cannot listen on 127\\.0\\.0\\.1:${takenPort} \\(PORT\\): the address is already in use$`));
  });

  it('names METRICS_PORT in one line and exits 1 instead of running on without serving', async () => {
    const port = await freePort();
    const result = await runCliBounded(['serve'], { DATA_DIR: 'memory://', DEMO: 'false', PORT: String(port), METRICS_PORT: String(takenPort) });
    expectOneLineFailure(result, new RegExp(`^fieldgate: cannot listen on 127\\.0\\.0\\.1:${takenPort} \\(METRICS_PORT\\): the address is already in use$`));
    // The main port was opened before the metrics port failed: it must have been closed again.
    const reuse = createServer();
    await new Promise<void>((resolve, reject) => {
      reuse.once('error', reject);
      reuse.listen(port, '127.0.0.1', resolve);
    });
    await new Promise<void>((resolve) => reuse.close(() => resolve()));
  });
});

describe('fieldgate serve on a HOST it cannot bind', () => {
  it('names HOST in one line and exits 1, with PORT=0 as with a fixed port', async () => {
    for (const PORT of ['0', String(await freePort())]) {
      const unknown = await runCliBounded(['serve'], { DATA_DIR: 'memory://', DEMO: 'false', PORT, HOST: 'no-such-host.invalid' });
      expectOneLineFailure(unknown, /^fieldgate: cannot listen on no-such-host\.invalid:\d+ \(PORT\): HOST (is not a known host name|could not be looked up)$/);
      // TEST-NET-1 (RFC 5737): an address no interface of this host has.
      const foreign = await runCliBounded(['serve'], { DATA_DIR: 'memory://', DEMO: 'false', PORT, HOST: '192.0.2.1' });
      expectOneLineFailure(foreign, /^fieldgate: cannot listen on 192\.0\.2\.1:\d+ \(PORT\): the address is not one of this host$/);
    }
  });
});

describe('fieldgate backup to a place it cannot write', () => {
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'fieldgate-backup-'));
    const migrated = await runCliBounded(['migrate'], { DATA_DIR: path.join(dir, 'data') });
    expect(migrated.code, migrated.stderr).toBe(0);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('names an output directory that does not exist, before dumping anything', async () => {
    const output = path.join(dir, 'no-such-dir', 'backup.tgz');
    const result = await runCliBounded(['backup', '--output', output], { DATA_DIR: path.join(dir, 'data') });
    expectOneLineFailure(result, /^fieldgate: cannot write .*no-such-dir\/backup\.tgz: the directory .*no-such-dir does not exist$/);
  });

  it('reports a write that fails in one line and leaves no partial file behind', async () => {
    // --force over a directory that is not empty: the dump is written beside it, then cannot replace it.
    const output = path.join(dir, 'occupied');
    mkdirSync(output);
    writeFileSync(path.join(output, 'keep'), '');
    const result = await runCliBounded(['backup', '--output', output, '--force'], { DATA_DIR: path.join(dir, 'data') });
    expectOneLineFailure(result, /^fieldgate: cannot write .*occupied: /);
    expect(existsSync(`${output}.partial`)).toBe(false);
    expect(readdirSync(output)).toEqual(['keep']);
  });

  it('names a restore DATA_DIR that cannot be a directory, in one line', async () => {
    const input = path.join(dir, 'some-backup.tgz');
    writeFileSync(input, 'whatever');
    const file = path.join(dir, 'a-file');
    writeFileSync(file, '');
    for (const dataDir of [file, path.join(file, 'data')]) {
      const result = await runCliBounded(['restore', '--input', input], { DATA_DIR: dataDir });
      expectOneLineFailure(result, /^fieldgate: cannot open the database .*a-file(\/data)?: (it exists and is not a directory|not a directory)$/);
    }
  });
});
