import { describe, expect, it, vi } from 'vitest';
import v8 from 'node:v8';
import vm from 'node:vm';
import { fullCollection, IdleCollectionPolicy, startIdleCollection } from '../src/idle-collection.js';

const MiB = 1024 * 1024;
const heapUsed = () => v8.getHeapStatistics().used_heap_size;

/** Garbage the size of `mib`, in objects big enough to reach the old generation's large-object space. */
function makeGarbage(mib: number): void {
  let keep: number[][] | undefined = [];
  for (let i = 0; i < mib; i++) keep.push(new Array(MiB / 8).fill(i));
  keep = undefined;
  void keep;
}

describe('the idle collection policy', () => {
  it('collects once the loop has been quiet for the idle time and the heap has grown enough', () => {
    const policy = new IdleCollectionPolicy(3_000, 16 * MiB, 50 * MiB);
    expect(policy.shouldCollect(1_000, 0.001, 80 * MiB)).toBe(false);
    expect(policy.shouldCollect(1_000, 0.001, 80 * MiB)).toBe(false);
    expect(policy.shouldCollect(1_000, 0.001, 80 * MiB)).toBe(true);
  });

  it('starts counting the quiet time again after any busy sample', () => {
    const policy = new IdleCollectionPolicy(2_000, 16 * MiB, 50 * MiB);
    expect(policy.shouldCollect(1_000, 0.001, 80 * MiB)).toBe(false);
    expect(policy.shouldCollect(1_000, 0.5, 80 * MiB)).toBe(false);
    expect(policy.shouldCollect(1_000, 0.001, 80 * MiB)).toBe(false);
    expect(policy.shouldCollect(1_000, 0.001, 80 * MiB)).toBe(true);
  });

  it('leaves a heap alone that has not grown by the minimum since the last collection', () => {
    const policy = new IdleCollectionPolicy(1_000, 16 * MiB, 50 * MiB);
    expect(policy.shouldCollect(5_000, 0, 60 * MiB)).toBe(false);
  });

  it('collects once per quiet spell, and again only after the heap grows anew', () => {
    const policy = new IdleCollectionPolicy(1_000, 16 * MiB, 50 * MiB);
    expect(policy.shouldCollect(1_000, 0, 90 * MiB)).toBe(true);
    policy.collected(52 * MiB);
    for (let i = 0; i < 10; i++) expect(policy.shouldCollect(1_000, 0, 53 * MiB)).toBe(false);
    expect(policy.shouldCollect(1_000, 0.3, 75 * MiB)).toBe(false);
    expect(policy.shouldCollect(1_000, 0, 75 * MiB)).toBe(true);
  });

  it('measures growth from the lowest heap seen, so V8’s own collections do not hide new garbage', () => {
    const policy = new IdleCollectionPolicy(1_000, 16 * MiB, 50 * MiB);
    expect(policy.shouldCollect(1_000, 0.5, 30 * MiB)).toBe(false);
    expect(policy.shouldCollect(1_000, 0, 47 * MiB)).toBe(true);
  });
});

describe('the full collection', () => {
  it('frees garbage, without giving the main context or any later one a gc function', async () => {
    const collect = fullCollection();
    await collect();
    const before = heapUsed();
    makeGarbage(48);
    expect(heapUsed() - before).toBeGreaterThan(32 * MiB);
    await collect();
    expect(heapUsed() - before).toBeLessThan(8 * MiB);
    expect('gc' in globalThis).toBe(false);
    expect(vm.runInNewContext('typeof gc')).toBe('undefined');
  });

  it('runs by itself once the process has been idle, once per quiet spell, and stops when asked', async () => {
    let heap = 40 * MiB;
    const runs: number[] = [];
    const collect = async () => {
      runs.push(Date.now());
      heap = 30 * MiB;
    };
    const stop = startIdleCollection({ idleSeconds: 0.2, sampleMs: 50, minGrowthBytes: 16 * MiB, collect, heapSize: () => heap });
    try {
      heap = 90 * MiB;
      await vi.waitFor(() => expect(runs).toHaveLength(1), { timeout: 10_000, interval: 50 });
      await new Promise((resolve) => setTimeout(resolve, 600));
      expect(runs).toHaveLength(1);
      heap = 90 * MiB;
      await vi.waitFor(() => expect(runs).toHaveLength(2), { timeout: 10_000, interval: 50 });
    } finally {
      stop();
    }
    heap = 90 * MiB;
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(runs).toHaveLength(2);
  });

  it('watches the heap V8 has committed, which stays high when V8’s own collection ended a burst', async () => {
    const real = v8.getHeapStatistics();
    let committed = real.total_heap_size;
    // What a burst that ended in V8's own full collection leaves: little in use, much committed.
    const statistics = vi.spyOn(v8, 'getHeapStatistics').mockImplementation(() => ({ ...real, used_heap_size: 8 * MiB, total_heap_size: committed }));
    const runs: number[] = [];
    const stop = startIdleCollection({ idleSeconds: 0.2, sampleMs: 50, collect: async () => void runs.push(committed) });
    try {
      committed += 64 * MiB;
      await vi.waitFor(() => expect(runs).toHaveLength(1), { timeout: 10_000, interval: 50 });
    } finally {
      stop();
      statistics.mockRestore();
    }
  });

  it('takes V8’s collector when none is given', () => {
    const setFlags = vi.spyOn(v8, 'setFlagsFromString');
    try {
      startIdleCollection({ idleSeconds: 10 })();
      expect(setFlags.mock.calls).toEqual([['--expose-gc'], ['--no-expose-gc']]);
    } finally {
      setFlags.mockRestore();
    }
  });

  it('does nothing when turned off', () => {
    const setFlags = vi.spyOn(v8, 'setFlagsFromString');
    try {
      startIdleCollection({ idleSeconds: 0 })();
      expect(setFlags).not.toHaveBeenCalled();
    } finally {
      setFlags.mockRestore();
    }
  });
});
