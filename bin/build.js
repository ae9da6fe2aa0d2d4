#!/usr/bin/env node
// Compiles src/ to dist/ (`npm run build`). With --if-changed (what `npm start` runs first) it
// skips the compiler when dist/ was built from the same sources and settings, so a restart does
// not pay for a compile, and an installation pruned of TypeScript still starts.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const STAMP = path.join(ROOT, 'dist', '.build-stamp');
const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

function files(dir) {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath ?? entry.path, entry.name));
}

/** A digest of everything the compiled output depends on: contents, not times (checkouts rewrite times). */
function sourceDigest() {
  const inputs = [
    ...files(path.join(ROOT, 'src')),
    path.join(ROOT, 'tsconfig.json'),
    path.join(ROOT, 'tsconfig.build.json'),
  ].sort();
  const hash = createHash('sha256');
  for (const file of inputs) {
    hash.update(`${path.relative(ROOT, file)}\0`);
    hash.update(readFileSync(file));
    hash.update('\0');
  }
  return hash.digest('hex');
}

const digest = sourceDigest();
if (process.argv.includes('--if-changed') && existsSync(path.join(ROOT, 'dist', 'cli.js')) && existsSync(STAMP) && readFileSync(STAMP, 'utf8').trim() === digest) {
  process.exit(0);
}
if (!existsSync(TSC)) {
  console.error('fieldgate: src/ changed since dist/ was built and TypeScript is not installed; run `npm ci` then `npm run build`');
  process.exit(1);
}
const build = spawnSync(process.execPath, [TSC, '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);
// The digest of the sources read before compiling: a file changed meanwhile forces the next build.
writeFileSync(STAMP, `${digest}\n`);
