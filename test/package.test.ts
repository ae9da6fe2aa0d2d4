/**
 * The tarball operators install (docs/DEPLOYMENT.md): `npm pack` builds it, and installed into an
 * empty project it serves on PGlite and on PostgreSQL, and every package that loads a dependency
 * patched in patches/ finds a patched copy. It packs a copy of this checkout, so that its build
 * does not race the one test/build.test.ts runs in dist/. About two minutes, most of it npm
 * gzipping and unpacking the bundled dependencies (npm unpacks a tarball once to read its manifest).
 */
import { describe, expect, it } from 'vitest';
import { execFile, spawn } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, linkSync, mkdirSync, readdirSync, readFileSync, readlinkSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { childEnv, freePort } from './support/processes.js';
import { createPostgresDatabase } from './support/databases.js';
import { temporaryDirectories } from './support/temp-dirs.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * npm as from a fresh shell (`npx vitest` exports npm_config_local_prefix=<this checkout> and the
 * like), and without the install report swagger-ui-dist's @scarf/scarf sends and logs in /tmp.
 */
function npmEnv(): NodeJS.ProcessEnv {
  return { ...Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key))), SCARF_ANALYTICS: 'false' };
}

async function npm(args: string[], cwd: string): Promise<void> {
  try {
    await promisify(execFile)('npm', args, { cwd, env: npmEnv(), maxBuffer: 64 * 1024 * 1024, timeout: 420_000 });
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    const log = `${stdout}\n${stderr}`.split('\n').filter((line) => !line.startsWith('npm warn')).join('\n');
    throw new Error(`npm ${args.join(' ')} failed:\n${log.slice(-4000)}`, { cause: error });
  }
}

/** `to` becomes `from` with every file hard-linked (copied across file systems): node_modules in a second. */
function linkTree(from: string, to: string): void {
  mkdirSync(to);
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const source = path.join(from, entry.name);
    const target = path.join(to, entry.name);
    if (entry.isSymbolicLink()) symlinkSync(readlinkSync(source), target);
    else if (entry.isDirectory()) linkTree(source, target);
    else {
      try {
        linkSync(source, target);
      } catch {
        copyFileSync(source, target);
      }
    }
  }
}

/** This checkout as it stands, without its dist/ or .git; node_modules is linked, not copied. */
function stageCheckout(to: string): void {
  for (const entry of readdirSync(ROOT)) {
    if (['.git', 'dist', 'node_modules'].includes(entry)) continue;
    cpSync(path.join(ROOT, entry), path.join(to, entry), { recursive: true, verbatimSymlinks: true });
  }
  linkTree(path.join(ROOT, 'node_modules'), path.join(to, 'node_modules'));
}

interface PatchedFile {
  /** `@pothos/plugin-drizzle` */
  pkg: string;
  /** Inside the package: `esm/utils/plan-cache.js` */
  file: string;
  /** The lines the patch adds, trimmed. */
  added: string[];
}

/** What each patch in patches/ changes, per file. */
function patchedFiles(): PatchedFile[] {
  const dir = path.join(ROOT, 'patches');
  const files: PatchedFile[] = [];
  for (const name of readdirSync(dir).filter((file) => file.endsWith('.patch'))) {
    let current: PatchedFile | undefined;
    for (const line of readFileSync(path.join(dir, name), 'utf8').split('\n')) {
      const header = /^diff --git a\/node_modules\/((?:@[^/]+\/)?[^/]+)\/(\S+) /.exec(line);
      if (header) {
        current = { pkg: header[1]!, file: header[2]!, added: [] };
        files.push(current);
      } else if (current && line.startsWith('+') && !line.startsWith('+++') && line.slice(1).trim()) {
        current.added.push(line.slice(1).trim());
      }
    }
  }
  return files;
}

interface InstalledPackage {
  dir: string;
  manifest: { name?: string } & Partial<Record<'dependencies' | 'optionalDependencies' | 'peerDependencies', Record<string, string>>>;
}

/** Every package under `nodeModules`, nested ones included, by real path. */
function installedPackages(nodeModules: string): InstalledPackage[] {
  if (!existsSync(nodeModules)) return [];
  const found: InstalledPackage[] = [];
  for (const entry of readdirSync(nodeModules)) {
    if (entry.startsWith('.')) continue;
    const names = entry.startsWith('@') ? readdirSync(path.join(nodeModules, entry)).map((name) => path.join(entry, name)) : [entry];
    for (const name of names) {
      const dir = realpathSync(path.join(nodeModules, name));
      if (!existsSync(path.join(dir, 'package.json'))) continue;
      found.push({ dir, manifest: JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) });
      found.push(...installedPackages(path.join(dir, 'node_modules')));
    }
  }
  return found;
}

/** The root of the package `from` (a package directory) loads as `name`, as Node resolves it. */
function resolvePackage(from: string, name: string): string {
  let dir = path.dirname(createRequire(path.join(from, 'package.json')).resolve(name));
  for (;;) {
    const manifest = path.join(dir, 'package.json');
    if (existsSync(manifest) && JSON.parse(readFileSync(manifest, 'utf8')).name === name) return realpathSync(dir);
    if (path.dirname(dir) === dir) throw new Error(`no package.json of ${name} above what ${from} resolves`);
    dir = path.dirname(dir);
  }
}

/**
 * Every installed copy of a patched package holds the patch's lines, and every installed package
 * that depends on one (fieldgate, plugin-drizzle on the selection mapper, drizzle-orm's
 * postgres-js driver on postgres) loads a copy inside the installation.
 */
function expectPatched(project: string): void {
  const installed = installedPackages(path.join(project, 'node_modules'));
  const files = patchedFiles();
  const packages = [...new Set(files.map((file) => file.pkg))];
  expect(packages).toHaveLength(4);
  for (const pkg of packages) {
    const copies = installed.filter(({ manifest }) => manifest.name === pkg).map(({ dir }) => dir);
    expect(copies, `${pkg} is installed`).not.toEqual([]);
    for (const copy of copies) {
      for (const { file, added } of files.filter((patched) => patched.pkg === pkg)) {
        const text = existsSync(path.join(copy, file)) ? readFileSync(path.join(copy, file), 'utf8') : '';
        expect.soft(added.filter((line) => !text.includes(line)), `${path.relative(project, path.join(copy, file))} lacks the patch's lines`).toEqual([]);
      }
    }
    const dependents = installed.filter(({ manifest }) => manifest.dependencies?.[pkg] || manifest.optionalDependencies?.[pkg] || manifest.peerDependencies?.[pkg]);
    expect(dependents, `something installed depends on ${pkg}`).not.toEqual([]);
    for (const { dir } of dependents) {
      let loaded: string | undefined;
      try {
        loaded = resolvePackage(dir, pkg);
      } catch (error) {
        expect.soft(error, `${path.relative(project, dir)} cannot load ${pkg}`).toBeUndefined();
      }
      if (loaded) expect.soft(copies, `${path.relative(project, dir)} loads ${pkg} from ${loaded}`).toContain(loaded);
    }
  }
}

/**
 * A nested list read as a service client: graphql-js answers first and graphql-jit from the
 * second use, through plans plugin-drizzle keeps across executions — the patched code paths.
 */
async function expectNestedReads(url: string, client: { client_id: string; client_secret: string }): Promise<void> {
  const credentials = `${encodeURIComponent(client.client_id)}:${encodeURIComponent(client.client_secret)}`;
  const issued = await fetch(`${url}/token`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(credentials).toString('base64')}` },
    body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'products:read' }),
  });
  expect(issued.status).toBe(200);
  const { access_token: token } = (await issued.json()) as { access_token: string };
  const query = '{ products(limit: 2) { id name seller { name } reviews(limit: 2) { rating } } }';
  const answers: unknown[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query }),
    });
    answers.push(await res.json());
  }
  expect(answers[0]).toMatchObject({ data: { products: [{ seller: { name: expect.any(String) } }, {}] } });
  expect(answers[1]).toEqual(answers[0]);
  expect(answers[2]).toEqual(answers[0]);
}

/** Runs the installed `fieldgate serve` on the demo data, checks that it answers as the server, and stops it. */
async function expectServes(bin: string, database: Record<string, string>): Promise<void> {
  const env = { ...database, DEMO: 'true' };
  const created = await promisify(execFile)(process.execPath, [bin, 'client', 'create', '--name', 'Probe', '--grant', 'client_credentials', '--scope', 'products:read', '--json'], { env: childEnv(env) });
  const client = JSON.parse(created.stdout) as { client_id: string; client_secret: string };
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, [bin, 'serve'], {
    cwd: tmpdir(),
    env: childEnv({ ...env, PORT: String(port), ISSUER: url, LOG_LEVEL: 'warn' }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  let running = true;
  void exited.then(() => (running = false));
  try {
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (!running) throw new Error(`the installed fieldgate serve exited:\n${output}`);
      if (Date.now() > deadline) throw new Error(`the installed fieldgate serve did not become ready:\n${output}`);
      if (await fetch(`${url}/readyz`).then((res) => res.ok, () => false)) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const refused = await fetch(`${url}/products?fields=id`);
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toMatch(/^Bearer /);
    await expectNestedReads(url, client);
    child.kill('SIGTERM');
    expect(await exited, output).toBe(0);
  } finally {
    if (running) child.kill('SIGKILL');
    await exited;
  }
}

describe('the packed tarball', () => {
  const tempDir = temporaryDirectories('fieldgate-pack-');

  it('installs into an empty project and serves on PGlite and PostgreSQL, with the dependencies as patched', async () => {
    const checkout = tempDir();
    stageCheckout(checkout);
    const packed = tempDir();
    // prepack applies patches/ to node_modules (a no-op once applied) and builds dist/, then both are packed.
    await npm(['pack', '--pack-destination', packed], checkout);
    const tarballs = readdirSync(packed);
    expect(tarballs).toEqual([expect.stringMatching(/^fieldgate-.+\.tgz$/)]);

    const project = tempDir();
    writeFileSync(path.join(project, 'package.json'), `${JSON.stringify({ name: 'operator', private: true }, null, 2)}\n`);
    await npm(['install', '--prefer-offline', '--no-audit', '--no-fund', path.join(packed, tarballs[0]!)], project);
    expectPatched(project);

    const bin = path.join(project, 'node_modules', '.bin', 'fieldgate');
    await expectServes(bin, { DATA_DIR: path.join(tempDir(), 'data') });
    const database = await createPostgresDatabase();
    try {
      await expectServes(bin, { DATABASE_URL: database.url });
    } finally {
      await database.drop();
    }
  }, 600_000);
});
