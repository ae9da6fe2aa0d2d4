import { describe, expect, it } from 'vitest';
import { renderMarkdown, roundTargets, singleTargets } from '../../bench/lib/report.js';
import { combineWindows, type Measurement } from '../../bench/lib/drivers.js';
import type { RunResults, ScenarioResult, ServerResult } from '../../bench/lib/results.js';
import { checkNested, nestedFromFieldgate, nestedFromPostGraphile } from '../../bench/lib/scenarios.js';

const measured = (perSec: number, errors = 0): ScenarioResult => ({
  label: 'x',
  measurement: { perSec, p50Ms: 1, p99Ms: 2, completed: perSec * 10, errors, durationSec: 10, concurrency: 16, totalCompleted: perSec * 13 } satisfies Measurement,
  serverCpuUs: 100,
});

function server(kind: ServerResult['kind'], database?: 'postgres' | 'pglite'): ServerResult {
  return { label: `${kind} ${database ?? ''}`, kind, ...(database ? { database } : {}), memory: {}, read: {}, oauth: {}, setup: [], profiles: [], rounds: {} };
}

function run(servers: ServerResult[], extra: Partial<RunResults> = {}): RunResults {
  return {
    startedAt: '2026-11-24T00:00:00.000Z',
    finishedAt: '2026-11-24T00:10:00.000Z',
    elapsedSec: 600,
    quick: true,
    command: 'npm run bench -- --quick',
    machine: { cpuModel: 'cpu', cores: 2, memoryGiB: 4, os: 'linux', node: 'v20', loadAverageBefore: [0, 0, 0], versions: {} },
    timing: { warmupSec: 1, readSec: 2, oauthSec: 2, readConnections: 32, flowConcurrency: 16 },
    logLevel: 'info',
    servers,
    rounds: ['node', 'undici', 'cold'],
    notes: [],
    ...extra,
  };
}

describe('issue 19 targets per client stack', () => {
  it('divides the scenarios of the same round and judges each against its threshold', () => {
    const pg = server('fieldgate', 'postgres');
    const peer = server('peer');
    pg.oauth.flows = measured(900);
    peer.oauth.flows = measured(500);
    pg.rounds = { cold: { read: {}, oauth: { flows: measured(400) } } };
    peer.rounds = { cold: { read: {}, oauth: { flows: measured(500) } } };
    const [flows] = roundTargets(run([pg, peer]));
    expect(flows!.byRound.node).toMatchObject({ value: 1.8, target: 1.5 });
    expect(flows!.byRound.cold).toMatchObject({ value: 0.8 });
    expect(flows!.byRound.undici?.value).toBeUndefined();
    const text = renderMarkdown(run([pg, peer]), undefined);
    expect(text).toContain('1.80× met');
    expect(text).toContain('0.80× **not met**');
  });

  it('gives no ratio, and says why, when a side failed or is missing', () => {
    const pg = server('fieldgate', 'postgres');
    pg.read.c = measured(3000);
    pg.read.d = measured(2000, 5);
    const bare = { ...server('bare-process'), skipped: 'failed: boom' };
    const targets = roundTargets(run([pg, bare]));
    const restVsBare = targets.find((t) => t.label.startsWith('REST (c) req/s on PostgreSQL'))!;
    expect(restVsBare.byRound.node).toMatchObject({ value: undefined, missing: 'the bare Express process: failed: boom' });
    const graphql = targets.find((t) => t.label.startsWith('GraphQL (d) ÷ REST (c) req/s, same data, on PostgreSQL'))!;
    expect(graphql.byRound.node?.value).toBeUndefined();
    expect(graphql.byRound.node?.missing).toMatch(/errors during the run/);
    const postgraphile = targets.find((t) => t.id === '5')!;
    expect(postgraphile.byRound.node?.missing).toBe('PostGraphile not run');
  });

  it("divides (c) by the bare Express process measured in turn with it beside the same server, round by round", () => {
    const pg = server('fieldgate', 'postgres');
    const lite = server('fieldgate', 'pglite');
    pg.read.c = measured(3000);
    lite.read.c = measured(3000);
    pg.rounds = { cold: { read: { c: measured(1000) }, oauth: {} } };
    pg.beside = { bare: { node: measured(4000), cold: measured(2000) } };
    lite.beside = { bare: { node: { label: 'x', unavailable: 'the bare Express process answered wrongly: HTTP 500' } } };
    // A bare process measured once on its own (runs before 2026-12-03) is not used when a paired reading exists.
    const bare = server('bare-process');
    bare.read.a = measured(100);
    const targets = roundTargets(run([pg, lite, bare]));
    const onPostgres = targets.find((t) => t.label.startsWith('REST (c) req/s on PostgreSQL'))!;
    expect(onPostgres.byRound.node?.value).toBeCloseTo(0.75);
    expect(onPostgres.byRound.cold?.value).toBeCloseTo(0.5);
    // The same holds for oidc-provider's flows measured in turn beside the server (targets 1 and 2).
    pg.oauth.flows = measured(900);
    pg.beside.peerFlows = { node: measured(450) };
    const peer = server('peer');
    peer.oauth.flows = measured(300);
    const [flows] = roundTargets(run([pg, lite, bare, peer]));
    expect(flows!.byRound.node?.value).toBeCloseTo(2);
    expect(flows!.byRound.cold?.missing).toBe('scenario not run');
    // And for target 2's (c): Fieldgate on PostgreSQL measured in turn beside Fieldgate on PGlite.
    lite.beside.postgresRead = { node: measured(2000) };
    const pgliteVsPostgres = roundTargets(run([pg, lite])).find((t) => t.label === 'REST (c) req/s, PGlite ÷ PostgreSQL')!;
    expect(pgliteVsPostgres.byRound.node?.value).toBeCloseTo(1.5);
    const onPglite = targets.find((t) => t.label.startsWith('REST (c) req/s on PGlite'))!;
    expect(onPglite.byRound.node?.value).toBeUndefined();
    expect(onPglite.byRound.node?.missing).toBe('the bare Express process answered wrongly: HTTP 500');
  });

  it('adds up windows measured in turn: rate over all windows, p50 weighted by requests, the worst p99', () => {
    const window = (completed: number, p50Ms: number, p99Ms: number, errors = 0): Measurement => ({
      perSec: completed / 2, p50Ms, p99Ms, completed, errors, durationSec: 2, concurrency: 32, totalCompleted: completed + 10,
      ...(errors ? { firstError: 'HTTP 500: boom' } : {}),
    });
    const combined = combineWindows([window(3000, 1, 4), window(1000, 5, 20), window(0, Number.NaN, Number.NaN, 7)]);
    expect(combined).toMatchObject({ completed: 4000, durationSec: 6, errors: 7, firstError: 'HTTP 500: boom', concurrency: 32, totalCompleted: 4030 });
    expect(combined.perSec).toBeCloseTo(4000 / 6);
    expect(combined.p50Ms).toBeCloseTo(2);
    expect(combined.p99Ms).toBe(20);
    expect(() => combineWindows([])).toThrow(/no windows/);
  });

  it('treats memory and start-up limits as ceilings', () => {
    const pg = server('fieldgate', 'postgres');
    const results = run([pg], {
      startup: {
        npmStartExisting: [{ command: 'npm start', readyMs: 2500 }, { command: 'npm start', readyMs: 1500 }, { command: 'npm start', readyMs: 1800 }],
        postgres: { command: 'serve', readyMs: 500, idleRssMiB: 140, peakRssMiB: 170, afterLoadRssMiB: 260, settledRssMiB: 224 },
        pgliteFirst: { command: 'serve', readyMs: 3000, idleRssMiB: 240, peakRssMiB: 300 },
        cli: [{ command: 'node bin/fieldgate.js --help', wallMs: [1200, 900, 800] }],
      },
    });
    const byLabel = Object.fromEntries(singleTargets(results).map((t) => [t.label, t.ratio]));
    expect(byLabel['RSS after start, `fieldgate serve` on PostgreSQL']).toMatchObject({ value: 140, target: 150, atMost: true });
    expect(byLabel['Peak RSS while starting, first start on a fresh PGlite directory']).toMatchObject({ value: 300 });
    // The reading once idle counts; the one right after the load is shown beside it.
    const afterLoad = singleTargets(results).find((t) => t.label === 'RSS after the benchmark ÷ after start, `fieldgate serve` on PostgreSQL')!;
    expect(afterLoad.ratio.value).toBeCloseTo(1.6);
    expect(afterLoad.detail).toBe('140 → 224 MiB once idle (260 MiB right after the load)');
    expect(byLabel['RSS after the benchmark ÷ after start, `fieldgate serve` on PGlite']!.value).toBeUndefined();
    expect(byLabel['RSS after the benchmark ÷ after start, `fieldgate serve` on PGlite']!.missing).toBe('restart on PGlite not run');
    expect(byLabel['`npm start` ready (GET /healthz) on an existing PGlite directory']!.value).toBe(1.8);
    expect(byLabel['`bin/fieldgate.js --help` on PostgreSQL, wall time']!.value).toBe(0.9);
    const text = renderMarkdown(results, undefined);
    expect(text).toMatch(/RSS after start, `fieldgate serve` on PostgreSQL \| ≤ 150 MiB \| 140 MiB \| met/);
    expect(text).toMatch(/Peak RSS while starting, first start on a fresh PGlite directory \| ≤ 250 MiB \| 300 MiB \| \*\*not met\*\*/);
    expect(text).toMatch(/RSS after the benchmark ÷ after start, `fieldgate serve` on PostgreSQL \| ≤ 1.5× \| 1.60× \| \*\*not met\*\*/);
  });
});

describe('nested list answers', () => {
  const fieldgate = JSON.stringify({ data: { products: Array.from({ length: 20 }, (_, i) => ({ id: i + 1, name: `P${i}`, seller: { name: 'S' }, reviews: [{ rating: 4 }] })) } });
  const postgraphile = JSON.stringify({
    data: { allProducts: { nodes: Array.from({ length: 20 }, (_, i) => ({ rowId: i + 1, name: `P${i}`, sellerBySellerId: { name: 'S' }, reviewsByProductId: { nodes: [{ rating: 4 }] } })) } },
  });

  it("brings PostGraphile's answer into Fieldgate's shape so the two compare equal", () => {
    const a = nestedFromFieldgate(fieldgate);
    const b = nestedFromPostGraphile(postgraphile);
    expect(typeof a).not.toBe('string');
    expect(checkNested(a as never)).toBeUndefined();
    expect(JSON.stringify(b)).toBe(JSON.stringify(a));
  });

  it('refuses short lists, extra keys and GraphQL errors', () => {
    const rows = nestedFromFieldgate(fieldgate) as { id: number }[];
    expect(checkNested(rows.slice(1) as never)).toBe('19 products, expected 20');
    expect(checkNested(rows.map((row) => ({ ...row, extra: 1 })) as never)).toMatch(/keys are/);
    expect(nestedFromPostGraphile(JSON.stringify({ errors: [{ message: 'no' }] }))).toMatch(/GraphQL errors/);
  });
});
