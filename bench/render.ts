/**
 * Re-renders docs/BENCHMARKS.md and docs/benchmarks.svg from a saved run, e.g. after editing
 * bench/NOTES.md: `node bin/run-ts.js bench/render.ts bench/results/<run>/results.json`.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './lib/child.js';
import { writeReport } from './lib/report.js';
import type { RunResults } from './lib/results.js';

const file = process.argv[2];
if (!file) {
  console.error('usage: node bin/run-ts.js bench/render.ts bench/results/<run>/results.json [--out=docs/BENCHMARKS.md]');
  process.exit(2);
}
const out = path.resolve(REPO_ROOT, process.argv.find((arg) => arg.startsWith('--out='))?.slice(6) ?? 'docs/BENCHMARKS.md');
writeReport(JSON.parse(readFileSync(file, 'utf8')) as RunResults, out, path.join(path.dirname(out), 'benchmarks.svg'));
console.log(`wrote ${path.relative(REPO_ROOT, out)}`);
