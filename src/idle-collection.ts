/**
 * Idle collection: hands an idle server's garbage back to the OS. Under concurrent requests V8
 * promotes short-lived objects into the old generation and lets it grow up to 4× past what
 * survived the last full collection; once requests stop nothing allocates, so V8 never collects
 * again and tens of MiB of garbage stay resident while the server idles (V8's memory reducer often
 * does not run within 20 s). One full collection once the event loop has been quiet for a while
 * costs nothing under load, where a smaller old generation (`--heap-growing-percent=20`) cost
 * 15–25 % of server CPU per request on both databases. Measured effect: docs/PERFORMANCE.md.
 */
import { performance } from 'node:perf_hooks';
import v8 from 'node:v8';
import vm from 'node:vm';

export interface IdleCollectionOptions {
  /** Seconds of quiet before collecting (0: never collect). */
  idleSeconds: number;
  /** Only collect when the committed heap has grown at least this much since the last collection. */
  minGrowthBytes?: number;
  /** How often the event loop's utilization is sampled. */
  sampleMs?: number;
  /** V8's full collection and committed heap size unless a caller brings its own. */
  collect?: () => Promise<void>;
  heapSize?: () => number;
}

/** A sample this busy or busier counts as activity (a request every few ms is ~2 %). */
const QUIET_UTILIZATION = 0.02;

/**
 * Decides, from one sample of the event loop and the heap at a time, when to collect. The heap is
 * V8's committed size, not the part in use: a burst often ends with V8's own full collection,
 * which frees the garbage but keeps its pages, so the part in use looks small while RSS stays high.
 */
export class IdleCollectionPolicy {
  private quietMs = 0;
  private heapAfterCollection: number;

  constructor(
    private readonly idleMs: number,
    private readonly minGrowthBytes: number,
    heapSize: number,
  ) {
    this.heapAfterCollection = heapSize;
  }

  /** Whether to collect now, given the utilization of the last `elapsedMs` and the committed heap. */
  shouldCollect(elapsedMs: number, utilization: number, heapSize: number): boolean {
    this.quietMs = utilization < QUIET_UTILIZATION ? this.quietMs + elapsedMs : 0;
    // An idle server that has already collected stays below the threshold: one collection per quiet spell.
    if (heapSize < this.heapAfterCollection) this.heapAfterCollection = heapSize;
    return this.quietMs >= this.idleMs && heapSize - this.heapAfterCollection >= this.minGrowthBytes;
  }

  collected(heapSize: number): void {
    this.heapAfterCollection = heapSize;
    this.quietMs = 0;
  }
}

/**
 * V8's `gc`, taken from a context created while `--expose-gc` was briefly on (the main context and
 * every later one stay without it). From V8 12 (Node 22) on it runs as a `last-resort` collection,
 * which also compacts and hands the freed pages back to the OS, as a task of its own with no
 * JavaScript on the stack. V8 11 (Node 20) has no such option (it reads unknown options as a young
 * generation collection), so there it is two plain full collections: the first frees the garbage,
 * and the second hands back most of the pages the first one's sweeping emptied, which one alone
 * often leaves committed.
 */
export function fullCollection(): () => Promise<void> {
  v8.setFlagsFromString('--expose-gc');
  let gc: (options?: { type: 'major'; execution: 'async'; flavor: 'last-resort' }) => Promise<void> | void;
  try {
    gc = vm.runInNewContext('gc');
  } finally {
    v8.setFlagsFromString('--no-expose-gc');
  }
  if (Number(process.versions.v8.split('.')[0]) >= 12) return async () => gc({ type: 'major', execution: 'async', flavor: 'last-resort' });
  return async () => {
    gc();
    gc();
  };
}

/** Starts sampling; the returned function stops it. The timer never keeps the process alive. */
export function startIdleCollection(options: IdleCollectionOptions): () => void {
  if (options.idleSeconds === 0) return () => {};
  const sampleMs = options.sampleMs ?? 1_000;
  const heapSize = options.heapSize ?? (() => v8.getHeapStatistics().total_heap_size);
  const collect = options.collect ?? fullCollection();
  const policy = new IdleCollectionPolicy(options.idleSeconds * 1000, options.minGrowthBytes ?? 16 * 1024 * 1024, heapSize());
  let last = performance.eventLoopUtilization();
  let lastAt = performance.now();
  let collecting = false;
  const timer = setInterval(() => {
    const now = performance.now();
    const sample = performance.eventLoopUtilization(last);
    last = performance.eventLoopUtilization();
    const elapsedMs = now - lastAt;
    lastAt = now;
    if (collecting || !policy.shouldCollect(elapsedMs, sample.utilization, heapSize())) return;
    collecting = true;
    collect()
      .then(() => policy.collected(heapSize()))
      .finally(() => (collecting = false));
  }, sampleMs);
  timer.unref();
  return () => clearInterval(timer);
}
