#!/usr/bin/env node
// Development entry: runs the TypeScript CLI through tsx, no build needed (`npm run dev`).
// Operators run bin/fieldgate.js, the compiled CLI.
import { register } from 'tsx/esm/api';

// Libraries check NODE_ENV once, as they load (graphql-js skips its development-only checks
// on every type test in production), so the default has to be set before anything is imported.
process.env.NODE_ENV ??= 'production';
register();
await import('../src/cli.ts');
