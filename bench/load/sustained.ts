/**
 * Sustained mixed load against a `fieldgate serve` process (issue 6 §4): code flows (with and
 * without a fresh sign-in), refresh rotations, REST reads with `fields`, order creations,
 * contended If-Match PATCHes and GraphQL queries, at a fixed concurrency for a fixed time.
 *
 *   node bin/run-ts.js bench/load/sustained.ts [--database postgres|pglite] [--duration 30]
 *        [--concurrency 32] [--warmup 10] [--json]
 *
 * PostgreSQL needs TEST_DATABASE_URL (a fresh database is created on that server and dropped
 * after); PGlite uses a temporary data directory. The run fails (exit 1) on any 5xx, any
 * request left without a complete answer, any unexpected status, any acknowledged change not
 * found afterwards, or when the server's resident memory at the end exceeds RSS_BOUND times
 * the highest it reached during the warm-up. The mix and the checks are test/reliability/support/
 * mixed-load.ts, shared with the CI-sized test/reliability/load.test.ts.
 */
import os from 'node:os';
import { parseArgs } from 'node:util';
import { startServerProcess } from '../../test/support/processes.js';
import { describeRun, prepareMixedLoad, runMixedLoad, rssMiB, verifyMixedLoad } from '../../test/support/reliability/mixed-load.js';
import { createStorage, withSetupRuntime, type Kind } from '../../test/support/reliability/setup.js';
import { sleep } from '../../test/support/reliability/http.js';

/**
 * RSS at the end of the run (after 2 s idle) may be at most this multiple of the highest RSS
 * seen during the warm-up. Garbage collection moves RSS by tens of MiB from one second to the
 * next, so in 30 s this catches gross growth — an unbounded cache, a leak per request of
 * kilobytes — not a slow leak; run with a longer --duration for that.
 */
export const RSS_BOUND = 1.5;

const { values } = parseArgs({
  options: {
    database: { type: 'string', default: process.env.TEST_DATABASE_URL ? 'postgres' : 'pglite' },
    duration: { type: 'string', default: '30' },
    concurrency: { type: 'string', default: '32' },
    warmup: { type: 'string', default: '10' },
    json: { type: 'boolean', default: false },
  },
});
const kind = values.database as Kind;
if (kind !== 'postgres' && kind !== 'pglite') throw new Error('--database is postgres or pglite');
const durationMs = Number(values.duration) * 1000;
const warmupMs = Number(values.warmup) * 1000;
const concurrency = Number(values.concurrency);

const log = (line: string) => process.stderr.write(`${line}\n`);
const machine = () => ({ cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, loadavg: os.loadavg().map((l) => Number(l.toFixed(2))), node: process.version });

const storage = await createStorage(kind);
let exitCode = 1;
try {
  const env = { ...storage.env, ISSUER: 'http://fieldgate.test', DEMO: 'false' };
  log(`preparing ${kind}: 8 users, 30 products, 4 counter orders`);
  const prepared = await withSetupRuntime(env, (runtime) => prepareMixedLoad(runtime, { users: 8, products: 30, counters: 4 }));
  const server = await startServerProcess(env);
  const pid = server.child.pid!;
  const machineBefore = machine();
  log(`server pid ${pid} on ${server.url}, RSS at start ${rssMiB(pid)?.toFixed(0)} MiB; machine ${JSON.stringify(machineBefore)}`);
  log(`running ${(warmupMs + durationMs) / 1000} s (${warmupMs / 1000} s warm-up) at concurrency ${concurrency}`);

  const target = { ...prepared, baseUrl: server.url };
  let lastProgress = 0;
  const report = await runMixedLoad(target, {
    durationMs: warmupMs + durationMs,
    concurrency,
    serverPid: pid,
    warmupMs,
    onProgress: (progress) => {
      if (progress.durationMs - lastProgress < 5000) return;
      lastProgress = progress.durationMs;
      const answers = Object.values(progress.statuses).reduce((sum, count) => sum + count, 0);
      log(`  ${(progress.durationMs / 1000).toFixed(0)} s: ${answers} answers, RSS ${rssMiB(pid)?.toFixed(0)} MiB`);
    },
  });
  // Let in-flight work settle (timers, pool) before the final memory sample.
  await sleep(2000);
  const settled = rssMiB(pid);
  if (report.rssMiB && settled !== undefined) report.rssMiB.end = settled;
  const verification = await verifyMixedLoad(target, report);
  const machineAfter = machine();

  const serverErrors = Object.entries(report.statuses).filter(([status]) => Number(status) >= 500);
  const rssRatio = report.rssMiB?.warmupPeak ? report.rssMiB.end / report.rssMiB.warmupPeak : Number.NaN;
  const failures = [
    ...serverErrors.map(([status, count]) => `${count} × ${status}`),
    ...report.transportErrors.slice(0, 10),
    ...report.unexpected.slice(0, 10),
    ...verification.lost,
    ...(!(rssRatio <= RSS_BOUND) ? [`RSS at the end is ${rssRatio.toFixed(2)}× the warm-up peak (bound ${RSS_BOUND}×)`] : []),
  ];
  const stopped = await server.stop('SIGTERM');

  if (values.json) {
    process.stdout.write(
      `${JSON.stringify({ kind, concurrency, warmupMs, durationMs, machineBefore, machineAfter, report: { ...report, acknowledged: { ...report.acknowledged, increments: Object.fromEntries(report.acknowledged.increments) }, refreshChainHeads: report.refreshChainHeads.length }, verification, rssRatio, failures, serverExit: stopped }, null, 2)}\n`,
    );
  } else {
    process.stdout.write(
      [
        `Fieldgate sustained mixed load — ${kind}, concurrency ${concurrency}, ${warmupMs / 1000} s warm-up + ${durationMs / 1000} s`,
        `machine before: ${JSON.stringify(machineBefore)}`,
        `machine after:  ${JSON.stringify(machineAfter)}`,
        describeRun(report, verification),
        `RSS end / warm-up peak: ${rssRatio.toFixed(2)} (bound ${RSS_BOUND})`,
        `server exit on SIGTERM: ${stopped}`,
        failures.length ? `FAILED:\n  ${failures.join('\n  ')}` : 'PASSED: no 5xx, no unanswered request, no lost update, memory within bound',
        '',
      ].join('\n'),
    );
  }
  exitCode = failures.length || stopped !== 0 ? 1 : 0;
} finally {
  await storage.destroy();
}
process.exit(exitCode);
