#!/usr/bin/env node
// Compiles src/ to dist/ (`npm run build`), then bundles the CLI and the embedded database's
// worker into dist/bundle/, which bin/fieldgate.js runs: one file to load instead of some two
// thousand modules to resolve (docs/PERFORMANCE.md, "One file to load"). With --if-changed it skips
// both when dist/ was built from the same sources, dependencies and settings (bin/build-stamp.js),
// the check `npm start` (bin/start.js) makes, so a restart does not pay for a build, and an
// installation pruned of TypeScript still starts.
import { existsSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { BUNDLE, isBuilt, sourceDigest, writeStamp } from './build-stamp.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

const digest = sourceDigest();
if (process.argv.includes('--if-changed') && isBuilt(digest)) process.exit(0);
if (!existsSync(TSC)) {
  console.error('fieldgate: src/ changed since dist/ was built and TypeScript is not installed; run `npm ci` then `npm run build`');
  process.exit(1);
}
const build = spawnSync(process.execPath, [TSC, '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);
await bundle();
// The digest of the sources read before compiling: a file changed meanwhile forces the next build.
writeStamp(digest);

/**
 * dist/bundle/cli.js and pglite-thread-worker.js (the name pglite-thread.ts starts it by), each
 * holding the compiled sources and the dependencies they import. Commands the CLI loads on demand
 * stay chunks of their own (`splitting`), so `serve` does not load what only `backup` needs.
 * PGlite stays a package: it finds its WebAssembly and data files next to its own modules.
 * dist/bundle/ sits two levels below the package, as each compiled module did, so paths made from
 * `import.meta.url` (migrations, public assets) resolve the same. Names are kept: errors and
 * classes are told apart by them.
 */
async function bundle() {
  const { build: esbuild } = await import('esbuild');
  rmSync(BUNDLE, { recursive: true, force: true });
  await esbuild({
    absWorkingDir: ROOT,
    entryPoints: { cli: 'dist/cli.js', 'pglite-thread-worker': 'dist/db/performance/pglite-thread-worker.js' },
    outdir: BUNDLE,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: ['@electric-sql/pglite', '@electric-sql/pglite/*'],
    keepNames: true,
    // CommonJS dependencies call `require` for Node's own modules, which an ES module lacks.
    banner: { js: "import { createRequire as __fieldgateCreateRequire } from 'node:module'; const require = __fieldgateCreateRequire(import.meta.url);" },
    // Chunks beside the entries: paths made from a chunk's `import.meta.url` must resolve as from the entry's.
    chunkNames: '[name]-[hash]',
    logLevel: 'warning',
  });
}
