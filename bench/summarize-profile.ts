/**
 * Prints a Markdown summary of .cpuprofile files:
 *   node bin/run-ts.js bench/summarize-profile.ts FILE.cpuprofile [more …]
 * or, per operation, where one profile spends more than another (e.g. (c) against (b)):
 *   node bin/run-ts.js bench/summarize-profile.ts --diff BASE.cpuprofile:OPERATIONS OTHER.cpuprofile:OPERATIONS
 * (the operation counts are `measurement.totalCompleted` in bench/results/<run>/results.json).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { formatSummary, summarize, type CpuProfile } from './lib/profile.js';

const args = process.argv.slice(2);
const load = (file: string) => summarize(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile);

function diff(base: string, other: string): void {
  const [baseFile, baseOps] = base.split(/:(?=\d+$)/);
  const [otherFile, otherOps] = other.split(/:(?=\d+$)/);
  if (!baseFile || !otherFile || !baseOps || !otherOps) throw new Error('--diff needs FILE:OPERATIONS FILE:OPERATIONS');
  const perOp = (file: string, ops: string) => new Map(load(file).selfByArea.map(([area, ms]) => [area, (ms * 1000) / Number(ops)]));
  const a = perOp(baseFile, baseOps);
  const b = perOp(otherFile, otherOps);
  const busy = (map: Map<string, number>) => [...map].filter(([area]) => area !== '(idle)').reduce((sum, [, us]) => sum + us, 0);
  const rows = [...new Set([...a.keys(), ...b.keys()])]
    .map((area) => ({ area, base: a.get(area) ?? 0, other: b.get(area) ?? 0 }))
    .sort((x, y) => y.other - y.base - (x.other - x.base));
  console.log(`Busy per operation: ${busy(a).toFixed(0)} µs (${path.basename(baseFile)}) → ${busy(b).toFixed(0)} µs (${path.basename(otherFile)})\n`);
  console.log('| self time in | base µs / op | other µs / op | difference |\n|---|---:|---:|---:|');
  for (const row of rows.slice(0, 25)) {
    console.log(`| \`${row.area}\` | ${row.base.toFixed(0)} | ${row.other.toFixed(0)} | ${(row.other - row.base).toFixed(0)} |`);
  }
}

if (args[0] === '--diff' && args.length === 3) {
  diff(args[1]!, args[2]!);
} else if (args.length > 0 && !args.includes('--diff')) {
  for (const file of args) console.log(formatSummary(path.basename(file), load(file)));
} else {
  console.error('usage: node bin/run-ts.js bench/summarize-profile.ts FILE.cpuprofile [more …]\n       node bin/run-ts.js bench/summarize-profile.ts --diff BASE.cpuprofile:OPS OTHER.cpuprofile:OPS');
  process.exit(2);
}
