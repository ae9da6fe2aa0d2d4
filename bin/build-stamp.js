// Whether dist/ was built from the sources as they are: bin/build.js writes the stamp after a build,
// and `npm start` (bin/start.js) and `bin/build.js --if-changed` compare it before deciding to build.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const STAMP = path.join(ROOT, 'dist', '.build-stamp');
export const BUNDLE = path.join(ROOT, 'dist', 'bundle');

function files(dir) {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath ?? entry.path, entry.name));
}

/** A digest of everything the compiled output depends on: contents, not times (checkouts rewrite times). */
export function sourceDigest() {
  const inputs = [
    ...files(path.join(ROOT, 'src')),
    path.join(ROOT, 'tsconfig.json'),
    path.join(ROOT, 'tsconfig.build.json'),
    // The bundle holds the dependencies as installed and patched, and is made by bin/build.js.
    path.join(ROOT, 'package-lock.json'),
    ...(existsSync(path.join(ROOT, 'patches')) ? files(path.join(ROOT, 'patches')) : []),
    path.join(ROOT, 'bin', 'build.js'),
    fileURLToPath(import.meta.url),
  ].sort();
  const hash = createHash('sha256');
  for (const file of inputs) {
    hash.update(`${path.relative(ROOT, file)}\0`);
    hash.update(readFileSync(file));
    hash.update('\0');
  }
  return hash.digest('hex');
}

/** Whether dist/bundle/ exists and was built from sources with this digest. */
export function isBuilt(digest) {
  return existsSync(path.join(BUNDLE, 'cli.js')) && existsSync(STAMP) && readFileSync(STAMP, 'utf8').trim() === digest;
}

export function writeStamp(digest) {
  writeFileSync(STAMP, `${digest}\n`);
}
