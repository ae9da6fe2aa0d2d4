/**
 * Summarizes a V8 .cpuprofile: where the samples landed (self time) and under which code
 * they ran (inclusive time), grouped by package or source file, plus the hottest functions.
 * Command line: node bin/run-ts.js bench/summarize-profile.ts FILE.cpuprofile [more …]
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { REPO_ROOT } from './child.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** Where a frame's code lives: a package, a file of ours, a part of Node, or a V8 pseudo-frame. */
export function area(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  const modules = url.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const rest = url.slice(modules + '/node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (url.startsWith('node:')) {
    const parts = url.slice(5).split('/');
    return `node:${parts[0] === 'internal' ? parts.slice(1, 2).join('/') : parts[0]}`;
  }
  const file = url.startsWith('file://') ? fileURLToPath(url) : url;
  if (file.startsWith(REPO_ROOT)) return path.relative(REPO_ROOT, file);
  return url;
}

export interface ProfileSummary {
  totalMs: number;
  selfByArea: [string, number][];
  inclusiveByArea: [string, number][];
  topFunctions: [string, number][];
  /** Inclusive time of each function under src/. */
  oursInclusive: [string, number][];
}

export function summarize(profile: CpuProfile): ProfileSummary {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const functions = new Map<string, number>();
  let total = 0;
  const ours = new Map<string, number>();
  const frameName = (frame: ProfileNode['callFrame'], where: string) =>
    `${frame.functionName || '(anonymous)'} ${where}${frame.url ? `:${frame.lineNumber + 1}` : ''}`;
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = (profile.timeDeltas[i + 1] ?? profile.timeDeltas[i] ?? 0) / 1000;
    total += dt;
    const node = byId.get(profile.samples[i]!);
    if (!node) continue;
    const { functionName, url } = node.callFrame;
    let where = area(url, functionName);
    if (where === '(native)') {
      // Native code (crypto jobs, socket writes) counts for the JavaScript that called it.
      for (let id = parent.get(node.id); id !== undefined; id = parent.get(id)) {
        const frame = byId.get(id)!.callFrame;
        if (frame.url) {
          where = `${area(frame.url, frame.functionName)} (native)`;
          break;
        }
      }
    }
    self.set(where, (self.get(where) ?? 0) + dt);
    const fn = frameName(node.callFrame, where);
    functions.set(fn, (functions.get(fn) ?? 0) + dt);
    const seen = new Set<string>();
    const seenFunctions = new Set<string>();
    for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
      const frame = byId.get(id)!.callFrame;
      const a = area(frame.url, frame.functionName);
      if (a.startsWith('src/')) {
        const name = frameName(frame, a);
        if (!seenFunctions.has(name)) {
          seenFunctions.add(name);
          ours.set(name, (ours.get(name) ?? 0) + dt);
        }
      }
      if (a === '(root)' || a === '(native)' || seen.has(a)) continue;
      seen.add(a);
      inclusive.set(a, (inclusive.get(a) ?? 0) + dt);
    }
  }
  const sorted = (map: Map<string, number>) => [...map].sort((a, b) => b[1] - a[1]);
  return { totalMs: total, selfByArea: sorted(self), inclusiveByArea: sorted(inclusive), topFunctions: sorted(functions), oursInclusive: sorted(ours) };
}

/** `operations`: how many operations the profile covers, to show µs per operation. */
export function formatSummary(name: string, summary: ProfileSummary, operations?: number, rows = 15): string {
  const pct = (ms: number) => `${((ms / summary.totalMs) * 100).toFixed(1)}%`;
  const perOp = (ms: number) => (operations ? ` ${((ms * 1000) / operations).toFixed(0)} |` : '');
  const busy = summary.totalMs - (summary.selfByArea.find(([a]) => a === '(idle)')?.[1] ?? 0);
  const table = (title: string, entries: [string, number][]) =>
    [
      `| ${title} | ms | share |${operations ? ' µs / op |' : ''}`,
      `|---|---:|---:|${operations ? '---:|' : ''}`,
      ...entries.slice(0, rows).map(([key, ms]) => `| \`${key}\` | ${ms.toFixed(0)} | ${pct(ms)} |${perOp(ms)}`),
    ].join('\n');
  return [
    `#### ${name}`,
    '',
    `${summary.totalMs.toFixed(0)} ms sampled, ${busy.toFixed(0)} ms busy (${pct(busy)})${operations ? ` over ${operations} operations: ${((busy * 1000) / operations).toFixed(0)} µs busy per operation` : ''}.`,
    '',
    table('self time in', summary.selfByArea),
    '',
    table('inclusive time under', summary.inclusiveByArea),
    '',
    table('hottest functions (self)', summary.topFunctions),
    '',
    table('our functions (inclusive)', summary.oursInclusive),
    '',
  ].join('\n');
}
