#!/usr/bin/env node
// `npm start`: builds dist/ when the sources changed since it was built (bin/build-stamp.js), then
// runs `fieldgate serve` in this same process. Arguments after `npm start --` go to `serve`.
// A `prestart` script made the check in a Node process of its own, which cost a tenth of a second
// on every start (docs/PERFORMANCE.md, round 20).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { isBuilt, sourceDigest } from './build-stamp.js';

if (!isBuilt(sourceDigest())) {
  // In a process of its own: the build's compiler and bundler are not kept in the server's memory.
  const build = spawnSync(process.execPath, [fileURLToPath(new URL('./build.js', import.meta.url))], { stdio: 'inherit' });
  if (build.status !== 0) process.exit(build.status ?? 1);
}
process.argv.splice(2, 0, 'serve');
await import('./fieldgate.js');
