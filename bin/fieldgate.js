#!/usr/bin/env node
// Runs the compiled CLI (dist/bundle/, made by `npm run build`; `npm start` builds first).
import { existsSync } from 'node:fs';

// Libraries check NODE_ENV once, as they load (graphql-js skips its development-only checks
// on every type test in production), so the default has to be set before anything is imported.
process.env.NODE_ENV ??= 'production';
const cli = new URL('../dist/bundle/cli.js', import.meta.url);
if (!existsSync(cli)) {
  console.error('fieldgate: dist/ is missing; run `npm run build` first (or `npm run dev` to run the TypeScript sources)');
  process.exit(1);
}
await import(cli.href);
