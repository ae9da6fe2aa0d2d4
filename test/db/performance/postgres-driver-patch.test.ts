/**
 * patches/postgres+3.4.9.patch (applied by `npm ci` through patch-package): postgres.js keeps its
 * pool's connections in queues that, under steady load, never run empty. Unpatched, each queue
 * keeps every spent slot and `remove` scans them all, so a busy server slows down with every
 * query it has run. These tests drive the installed queue the way the pool does; docs/PERFORMANCE.md
 * says when the patch can go.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import v8 from 'node:v8';
import vm from 'node:vm';
import { describe, expect, it } from 'vitest';

interface Queue<T> {
  readonly length: number;
  push(item: T): T;
  shift(): T;
  remove(item: T): T | null;
}

const require = createRequire(import.meta.url);
// `postgres` resolves to its CommonJS build here; the ESM build the service imports sits beside it.
const postgresDir = path.resolve(path.dirname(require.resolve('postgres')), '../..');
const { default: Queue } = (await import(pathToFileURL(path.join(postgresDir, 'src/queue.js')).href)) as {
  default: <T>(initial?: T[]) => Queue<T>;
};

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

describe('the patched postgres.js connection queue', () => {
  it('keeps first-in, first-out order and removes from the middle', () => {
    const queue = Queue<number>();
    for (let i = 0; i < 200; i++) queue.push(i);
    for (let i = 0; i < 100; i++) expect(queue.shift()).toBe(i);
    expect(queue.remove(150)).toBe(150);
    expect(queue.remove(150)).toBeNull();
    expect(queue.remove(5)).toBeNull();
    expect(queue.length).toBe(99);
    const rest: number[] = [];
    while (queue.length > 0) rest.push(queue.shift());
    expect(rest).toEqual([...Array.from({ length: 50 }, (_, i) => 100 + i), ...Array.from({ length: 49 }, (_, i) => 151 + i)]);
  });

  it('does not grow while it never runs empty (a pool of busy connections under load)', () => {
    const connections = Array.from({ length: 10 }, (_, i) => ({ id: i }));
    const busy = Queue(connections);
    gc();
    const before = process.memoryUsage().heapUsed;
    // The pool's cycle for a busy connection taking one more query: shift it, then push it back.
    for (let i = 0; i < 2_000_000; i++) busy.push(busy.shift());
    gc();
    const grown = process.memoryUsage().heapUsed - before;
    // Unpatched, the two million spent slots alone hold 16 MB (and every remove() scans them).
    expect(grown).toBeLessThan(4 * 1024 * 1024);
    expect(busy.length).toBe(10);
  });
});
