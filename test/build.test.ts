/**
 * The shipped artefact: `npm run build` compiles src/ to dist/ and bundles it into dist/bundle/ (`npm start` only when
 * src/, the dependencies or the patches changed), and bin/fieldgate.js runs the bundle (no tsx) — the CLI answers --help, and `serve` finds its migrations from dist/ and serves.
 * The tests share dist/, so they run in order.
 */
import { describe, expect, it } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { childEnv } from './support/processes.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = `${ROOT}bin/fieldgate.js`;

describe('the built package', () => {
  it('builds, and the compiled CLI answers --help and serves', async () => {
    const build = spawnSync(process.execPath, [`${ROOT}bin/build.js`], { cwd: ROOT, encoding: 'utf8' });
    expect(build.status, build.stdout + build.stderr).toBe(0);
    // What `npm start` runs first: nothing to compile when the sources are those of dist/.
    const built = statSync(`${ROOT}dist/cli.js`).mtimeMs;
    const again = spawnSync(process.execPath, [`${ROOT}bin/build.js`, '--if-changed'], { cwd: ROOT, encoding: 'utf8' });
    expect(again.status, again.stdout + again.stderr).toBe(0);
    expect(statSync(`${ROOT}dist/cli.js`).mtimeMs).toBe(built);
    // What bin/fieldgate.js runs: the CLI and the embedded database's worker, each bundled with its dependencies.
    for (const entry of ['cli.js', 'pglite-thread-worker.js']) expect(existsSync(`${ROOT}dist/bundle/${entry}`), entry).toBe(true);
    expect(readFileSync(`${ROOT}bin/fieldgate.js`, 'utf8')).toContain("'../dist/bundle/cli.js'");

    const help = spawnSync(process.execPath, [BIN, '--help'], { cwd: ROOT, encoding: 'utf8', env: childEnv({}) });
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('Usage: fieldgate');

    await expectServes([BIN, 'serve']);
  });

  it('`npm start` is one process: it builds only when the stamp does not match the sources, then serves', async () => {
    const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.start).toBe('node bin/start.js');
    expect(pkg.scripts.prestart).toBeUndefined();
    const stamp = `${ROOT}dist/.build-stamp`;
    const current = readFileSync(stamp, 'utf8');
    // Current: nothing is compiled.
    const built = statSync(`${ROOT}dist/cli.js`).mtimeMs;
    await expectServes([`${ROOT}bin/start.js`]);
    expect(statSync(`${ROOT}dist/cli.js`).mtimeMs).toBe(built);
    // A stamp of other sources: it builds first, and the stamp is that of the sources again.
    writeFileSync(stamp, 'stale\n');
    await expectServes([`${ROOT}bin/start.js`]);
    expect(statSync(`${ROOT}dist/cli.js`).mtimeMs).toBeGreaterThan(built);
    expect(readFileSync(stamp, 'utf8')).toBe(current);
  }, 180_000);
});

/** Runs `args` as a server on an in-memory database: it binds, answers /readyz, logs JSON lines only and stops with exit 0 on SIGTERM. */
async function expectServes(args: string[]): Promise<void> {
  const child = spawn(process.execPath, args, { env: childEnv({ DATA_DIR: 'memory://', PORT: '0' }), stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  try {
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    let err = '';
    const port = await new Promise<number>((resolve, reject) => {
      child.stderr.on('data', (chunk) => {
        err += chunk;
        const match = /bound to http:\/\/127\.0\.0\.1:(\d+)/.exec(err);
        if (match) resolve(Number(match[1]));
      });
      child.on('exit', () => reject(new Error(`exited early: ${err}`)));
    });
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
    expect(ready.status).toBe(200);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    const lines = out.split('\n').filter(Boolean);
    for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
    // Compiled, not run through tsx: no TypeScript loader's path in the process's output (a path, not the letters,
    // which the sign-in link's random state can hold).
    expect(err).not.toMatch(/[\\/]tsx[\\/]/);
  } finally {
    child.kill('SIGKILL');
  }
}

