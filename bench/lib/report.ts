/**
 * Renders a run's results as docs/BENCHMARKS.md and the ratio chart docs/benchmarks.svg.
 * Everything in the document comes from the run, except the hand-written findings in
 * bench/NOTES.md, which are appended so regenerating never loses them.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './child.js';
import { type OAuthScenarioId, type RoundId, type RoundResult, type RunResults, type ScenarioResult, type ServerResult, type StartupResults } from './results.js';
import type { ReadScenarioId } from './scenarios.js';
import { median, type StartMeasurement } from './startup.js';

/** Issue 7's read target (c/b), still shown in the read table; issue 19's targets are below. */
export const READ_TARGET = 0.8;
export const FLOW_TARGET = 1.5;

export interface Ratio {
  label: string;
  value?: number;
  /** Why there is no value. */
  missing?: string;
  target?: number;
  /** The same ratio by server CPU per operation (bottom's ÷ top's): steadier on a shared machine. */
  cpu?: number;
  /** The target is a ceiling (memory, time), not a floor. */
  atMost?: boolean;
  /** Unit shown after the value: '×', ' MiB', ' s'. */
  unit?: string;
}

export const ROUND_TITLE: Record<RoundId, string> = {
  node: 'node:http + autocannon, warm',
  undici: 'undici, warm',
  cold: 'undici, cold (fresh processes, no warm-up)',
};

/** One round's scenarios of a server: `read`/`oauth` for the node round, `rounds[…]` for the others. */
export function roundOf(server: ServerResult | undefined, round: RoundId): RoundResult | undefined {
  if (!server || server.skipped) return undefined;
  return round === 'node' ? { read: server.read, oauth: server.oauth } : server.rounds?.[round];
}

function rate(result: ScenarioResult | undefined): number | undefined {
  const m = result?.measurement;
  return m && m.errors === 0 && m.completed > 0 ? m.perSec : undefined;
}

function why(result: ScenarioResult | undefined, fallback: string): string {
  if (!result) return fallback;
  if (result.unavailable) return result.unavailable;
  if (result.measurement && result.measurement.errors > 0) return `errors during the run (${result.measurement.firstError ?? ''})`;
  return fallback;
}

function ratio(label: string, top: ScenarioResult | undefined, bottom: ScenarioResult | undefined, target?: number): Ratio {
  const t = rate(top);
  const b = rate(bottom);
  if (t === undefined || b === undefined) {
    const missing = t === undefined ? why(top, 'scenario not run') : why(bottom, 'scenario not run');
    return { label, missing, ...(target === undefined ? {} : { target }) };
  }
  const cpu = cpuRatio(top, bottom);
  return { label, value: t / b, ...(target === undefined ? {} : { target }), ...(cpu === undefined ? {} : { cpu }) };
}

const DB_NAME = { pglite: 'PGlite', postgres: 'PostgreSQL' } as const;

/** (b), as the mean of its two measurements when it was measured again after (f). */
function directBaseline(server: ServerResult): ScenarioResult | undefined {
  const b = server.read.b;
  const again = server.bAgain?.measurement;
  if (!b?.measurement || !again || again.errors > 0) return b;
  const cpu = b.serverCpuUs !== undefined && server.bAgain?.serverCpuUs !== undefined ? (b.serverCpuUs + server.bAgain.serverCpuUs) / 2 : b.serverCpuUs;
  return {
    ...b,
    measurement: { ...b.measurement, perSec: (b.measurement.perSec + again.perSec) / 2 },
    ...(cpu === undefined ? {} : { serverCpuUs: cpu }),
  };
}

export function readRatios(server: ServerResult): Ratio[] {
  const db = DB_NAME[server.database ?? 'pglite'];
  const r = (id: ReadScenarioId) => (id === 'b' ? directBaseline(server) : server.read[id]);
  const ratios = [
    ratio(`c/b REST ÷ direct · ${db}`, r('c'), r('b'), READ_TARGET),
    ratio(`d/b GraphQL ÷ direct · ${db}`, r('d'), r('b')),
    ratio(`c/a REST ÷ bare Express · ${db}`, r('c'), r('a')),
  ];
  if (server.skipped) for (const each of ratios) each.missing = `skipped: ${server.skipped}`;
  return ratios;
}

/** Fieldgate ÷ oidc-provider for flows (the target, on PostgreSQL), refresh and introspection. */
export function peerRatios(results: RunResults, which: 'flows' | 'all' = 'all'): Ratio[] {
  const peer = results.servers.find((s) => s.kind === 'peer');
  const out: Ratio[] = [];
  const measures = [
    ['flows', 'flows/s'],
    ['refresh', 'refresh/s'],
    ['introspectRefresh', 'introspection/s'],
  ] as const;
  for (const [key, name] of which === 'flows' ? measures.slice(0, 1) : measures) {
    for (const database of ['postgres', 'pglite'] as const) {
      const server = results.servers.find((s) => s.kind === 'fieldgate' && s.database === database);
      if (!server) continue;
      const target = key === 'flows' && database === 'postgres' ? FLOW_TARGET : undefined;
      // Flows: oidc-provider measured in turn beside this server when it was (as targets 1 and 2 do).
      const besidePeer = key === 'flows' ? server.beside?.peerFlows?.node : undefined;
      const r = ratio(`${name} ÷ oidc-provider · ${DB_NAME[database]}`, server.oauth[key], besidePeer ?? peer?.oauth[key], target);
      if (server.skipped) r.missing = server.skipped;
      else if (!besidePeer && !peer) r.missing = 'oidc-provider not run';
      else if (!besidePeer && peer?.skipped) r.missing = `oidc-provider: ${peer.skipped}`;
      out.push(r);
    }
  }
  return out;
}

/** Throughput the CPU cost implies: bottom's CPU per operation ÷ top's (higher: top is cheaper). */
function cpuRatio(top: ScenarioResult | undefined, bottom: ScenarioResult | undefined): number | undefined {
  if (!top?.serverCpuUs || !bottom?.serverCpuUs) return undefined;
  return bottom.serverCpuUs / top.serverCpuUs;
}

function fmt(value: number | undefined, digits = 0): string {
  if (value === undefined || Number.isNaN(value)) return '—';
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

function measurementCells(result: ScenarioResult | undefined): string[] {
  if (!result) return ['—', '—', '—', '—', '—', 'not run'];
  if (result.unavailable) return ['—', '—', '—', '—', '—', `not measured: ${result.unavailable.replace(/\|/g, '\\|').slice(0, 160)}`];
  const m = result.measurement!;
  const errors = m.errors > 0 ? `${fmt(m.errors)} failed (${(m.firstError ?? '').replace(/\|/g, '\\|').slice(0, 120)})` : '0';
  return [fmt(m.perSec), fmt(m.p50Ms, 1), fmt(m.p99Ms, 1), fmt(result.serverCpuUs), result.sql ? String(result.sql.count) : '—', errors];
}

export function isMet(r: Ratio): boolean | undefined {
  if (r.value === undefined || r.target === undefined) return undefined;
  return r.atMost ? r.value <= r.target : r.value >= r.target;
}

function verdict(r: Ratio): string {
  if (r.value === undefined) return `not measured — ${r.missing ?? ''}`;
  const met = isMet(r);
  if (met === undefined) return '';
  return met ? 'met' : '**not met**';
}

/** A target of issue 19 measured per client stack (round). */
export interface RoundTarget {
  id: string;
  label: string;
  /** For the chart. */
  short: string;
  threshold: string;
  byRound: Partial<Record<RoundId, Ratio>>;
}

/** Targets 1–5, one ratio per round of the run. */
export function roundTargets(results: RunResults): RoundTarget[] {
  const fieldgate = (database: 'postgres' | 'pglite') => results.servers.find((s) => s.kind === 'fieldgate' && s.database === database);
  const byKind = (kind: ServerResult['kind']) => results.servers.find((s) => s.kind === kind);
  const rounds = results.rounds ?? ['node'];
  const perRound = (make: (round: RoundId) => Ratio) => Object.fromEntries(rounds.map((round) => [round, make(round)])) as Partial<Record<RoundId, Ratio>>;
  const missingServer = (r: Ratio, ...servers: [ServerResult | undefined, string][]): Ratio => {
    for (const [server, name] of servers) {
      if (!server) return { ...r, value: undefined, missing: `${name} not run` };
      if (server.skipped) return { ...r, value: undefined, missing: `${name}: ${server.skipped}` };
    }
    return r;
  };
  const read = (server: ServerResult | undefined, round: RoundId, id: ReadScenarioId) => roundOf(server, round)?.read[id];
  const oauth = (server: ServerResult | undefined, round: RoundId, id: OAuthScenarioId) => roundOf(server, round)?.oauth[id];
  const pg = fieldgate('postgres');
  const lite = fieldgate('pglite');
  const peer = byKind('peer');
  const bare = byKind('bare-process');
  const postgraphile = byKind('postgraphile');
  const targets: RoundTarget[] = [];
  const add = (id: string, label: string, threshold: string, make: (round: RoundId) => Ratio, short = label) =>
    targets.push({ id, label, short, threshold, byRound: perRound(make) });
  // A baseline measured in turn beside the Fieldgate server (runs since 2026-12-03) counts; earlier
  // runs measured each baseline once, on its own, and are rendered from that.
  const versus = (server: ServerResult | undefined, name: string, top: ScenarioResult | undefined, key: keyof NonNullable<ServerResult['beside']>, round: RoundId, alone: [ServerResult | undefined, string, ScenarioResult | undefined], target: number): Ratio => {
    const paired = server?.beside?.[key];
    if (paired) return missingServer(ratio('', top, paired[round], target), [server, name]);
    return missingServer(ratio('', top, alone[2], target), [server, name], [alone[0], alone[1]]);
  };
  const flows = (server: ServerResult | undefined, name: string, target: number) => (round: RoundId) => ({
    ...versus(server, name, oauth(server, round, 'flows'), 'peerFlows', round, [peer, 'oidc-provider', oauth(peer, round, 'flows')], target),
    unit: '×',
  });
  add('1', 'Code flows/s, Fieldgate on PostgreSQL ÷ oidc-provider (in memory)', '≥ 1.5×', flows(pg, 'Fieldgate · PostgreSQL', 1.5), 'flows ÷ oidc-provider · PostgreSQL');
  add('2', 'Code flows/s, Fieldgate on PGlite ÷ oidc-provider', '≥ 1.0×', flows(lite, 'Fieldgate · PGlite', 1.0), 'flows ÷ oidc-provider · PGlite');
  add('2', 'REST (c) req/s, PGlite ÷ PostgreSQL', '≥ 0.5', (round) =>
    versus(lite, 'Fieldgate · PGlite', read(lite, round, 'c'), 'postgresRead', round, [pg, 'Fieldgate · PostgreSQL', read(pg, round, 'c')], 0.5),
    'REST PGlite ÷ PostgreSQL',
  );
  for (const [server, db] of [[pg, 'PostgreSQL'], [lite, 'PGlite']] as const) {
    add('3', `REST (c) req/s on ${db} ÷ bare Express 5 route in its own process`, '≥ 0.6', (round) =>
      versus(server, `Fieldgate · ${db}`, read(server, round, 'c'), 'bare', round, [bare, 'the bare Express process', read(bare, round, 'a')], 0.6),
      `REST ÷ bare Express process · ${db}`,
    );
  }
  for (const [server, db] of [[pg, 'PostgreSQL'], [lite, 'PGlite']] as const) {
    add('4', `GraphQL (d) ÷ REST (c) req/s, same data, on ${db}`, '≥ 0.8', (round) => missingServer(ratio('', read(server, round, 'd'), read(server, round, 'c'), 0.8), [server, `Fieldgate · ${db}`]), `GraphQL ÷ REST · ${db}`);
  }
  add('5', 'Nested list (f) req/s, Fieldgate on PostgreSQL ÷ PostGraphile v5', '≥ 1.0×', (round) => ({
      ...versus(pg, 'Fieldgate · PostgreSQL', read(pg, round, 'f'), 'postgraphile', round, [postgraphile, 'PostGraphile', read(postgraphile, round, 'f')], 1.0),
      unit: '×',
    }),
    'nested list ÷ PostGraphile v5',
  );
  return targets;
}

/** Targets 6 and 7: memory and start-up, independent of the client stack. */
export function singleTargets(results: RunResults): { id: string; label: string; threshold: string; ratio: Ratio; detail: string }[] {
  const out: { id: string; label: string; threshold: string; ratio: Ratio; detail: string }[] = [];
  const st: StartupResults | undefined = results.startup;
  const startMissing = (what: string, m: { error?: string } | undefined) => (m?.error ? `${what} failed: ${m.error}` : st?.skipped ? `start-up: ${st.skipped}` : `${what} not run`);
  const mem = (label: string, value: number | undefined, limit: number, missing: string, detail = ''): void => {
    out.push({ id: '6', label, threshold: `≤ ${limit} MiB`, ratio: { label, ...(value === undefined ? { missing } : { value }), target: limit, atMost: true, unit: ' MiB' }, detail });
  };
  mem('RSS after start, `fieldgate serve` on PostgreSQL', st?.postgres?.idleRssMiB, 150, startMissing('fieldgate serve on PostgreSQL', st?.postgres), st?.postgres?.peakRssMiB ? `peak while starting ${st.postgres.peakRssMiB.toFixed(0)} MiB` : '');
  mem('Peak RSS while starting, first start on a fresh PGlite directory', st?.pgliteFirst?.peakRssMiB, 250, startMissing('first start on PGlite', st?.pgliteFirst));
  mem('RSS after start, first start on a fresh PGlite directory', st?.pgliteFirst?.idleRssMiB, 250, startMissing('first start on PGlite', st?.pgliteFirst));
  mem('RSS after start, restart on the existing PGlite directory', st?.pgliteRestart?.idleRssMiB, 250, startMissing('restart on PGlite', st?.pgliteRestart), st?.pgliteRestart?.peakRssMiB ? `peak while starting ${st.pgliteRestart.peakRssMiB.toFixed(0)} MiB` : '');
  const afterLoad = (db: string, m: StartMeasurement | undefined, missing: string): void => {
    const label = `RSS after the benchmark ÷ after start, \`fieldgate serve\` on ${db}`;
    const value = m?.idleRssMiB && m.settledRssMiB ? m.settledRssMiB / m.idleRssMiB : undefined;
    out.push({
      id: '6',
      label,
      threshold: '≤ 1.5×',
      ratio: { label, ...(value === undefined ? { missing } : { value }), target: 1.5, atMost: true, unit: '×' },
      detail: value === undefined ? '' : `${m!.idleRssMiB!.toFixed(0)} → ${m!.settledRssMiB!.toFixed(0)} MiB once idle (${m!.afterLoadRssMiB?.toFixed(0)} MiB right after the load)`,
    });
  };
  afterLoad('PostgreSQL', st?.postgres, startMissing('fieldgate serve on PostgreSQL', st?.postgres));
  afterLoad('PGlite', st?.pgliteRestart, startMissing('restart on PGlite', st?.pgliteRestart));
  const existing = (st?.npmStartExisting ?? []).filter((m) => m.readyMs !== undefined).map((m) => m.readyMs! / 1000);
  const startLabel = '`npm start` ready (GET /healthz) on an existing PGlite directory';
  out.push({
    id: '7',
    label: startLabel,
    threshold: '≤ 2 s',
    ratio: { label: startLabel, ...(existing.length ? { value: median(existing)! } : { missing: startMissing('npm start', st?.npmStartExisting.find((m) => m.error)) }), target: 2, atMost: true, unit: ' s' },
    detail: existing.length ? `median of ${existing.map((v) => `${v.toFixed(2)} s`).join(', ')}` : '',
  });
  for (const cli of st?.cli ?? []) {
    const label = `\`${cli.command.replace(/^node /, '')}\` on PostgreSQL, wall time`;
    const values = cli.wallMs.map((ms) => ms / 1000);
    out.push({
      id: '7',
      label,
      threshold: '≤ 1 s',
      ratio: { label, ...(cli.error ? { missing: cli.error } : values.length ? { value: median(values)! } : { missing: 'not run' }), target: 1, atMost: true, unit: ' s' },
      detail: values.length ? `median of ${values.map((v) => `${v.toFixed(2)} s`).join(', ')}` : '',
    });
  }
  if (!st) for (const each of out) if (each.ratio.value === undefined && each.id === '7') each.ratio.missing = 'start-up not measured in this run (`--scenarios` without startup)';
  return out;
}

function ratioText(r: Ratio, suffix = r.unit === '×' ? '×' : ''): string {
  if (r.value === undefined) return '—';
  return r.unit && r.unit !== '×' ? `${r.value.toFixed(r.unit === ' s' ? 2 : 0)}${r.unit}` : `${r.value.toFixed(2)}${suffix}`;
}

/** A Targets table cell: value and verdict, or why it is missing. */
function targetCell(r: Ratio | undefined): string {
  if (!r) return 'not run';
  if (r.value === undefined) return `— (${(r.missing ?? '').replace(/\|/g, '\\|').slice(0, 90)})`;
  return `${ratioText(r)} ${verdict(r)}${r.cpu === undefined ? '' : ` (CPU ${r.cpu.toFixed(2)})`}`;
}

function mib(value: number | undefined): string {
  return value === undefined ? '—' : `${value.toFixed(0)} MiB`;
}

export function renderMarkdown(results: RunResults, notes: string | undefined): string {
  const fieldgate = results.servers.filter((s) => s.kind === 'fieldgate');
  const peer = results.servers.find((s) => s.kind === 'peer');
  const rounds = results.rounds ?? ['node'];
  const m = results.machine;
  const t = results.timing;
  const lines: string[] = [];
  const push = (...more: string[]) => lines.push(...more);

  push(
    '# Fieldgate benchmarks',
    '',
    `Generated by \`${results.command}\` on ${results.startedAt.slice(0, 16).replace('T', ' ')} UTC in ${Math.round(results.elapsedSec)} s. Do not edit by hand:`,
    'rerun the command. Claims are **ratios measured in one run on one machine**; absolute numbers on a',
    'shared machine are noise.',
    '',
  );
  if (results.experiments?.length) {
    push(`> **Experimental run** (\`--experiment=${results.experiments.join(',')}\`): Fieldgate was changed inside \`bench/server.ts\` to try a profiling finding; these are not numbers of the shipped code.`, '');
  }
  if (results.quick) {
    push(`> **Quick run** (\`--quick\`): ${t.readSec} s windows after ${t.warmupSec} s warm-up, for checking the harness. A full run measures 10 s windows after 3 s warm-up.`, '');
  }
  const load = m.loadAverageBefore.map((v) => v.toFixed(2)).join(' / ');
  const loadAfter = m.loadAverageAfter?.map((v) => v.toFixed(2)).join(' / ') ?? '—';
  push(`Machine: ${m.cpuModel}, ${m.cores} cores, ${m.memoryGiB} GiB, ${m.os}; Node ${m.node}. Load average (1/5/15 min) ${load} before the run, ${loadAfter} after.`, '');

  push(
    '## Targets',
    '',
    'Issue 19\'s targets, each measured in this run with every client stack: the warm node:http/autocannon round, the same scenarios through undici after a warm-up,',
    'and a cold round (undici, freshly started server processes, no warm-up). A target holds only where every column says met.',
    'In brackets: the same ratio by server CPU time per operation (the baseline\'s ÷ Fieldgate\'s), which other load on a shared machine disturbs far less.',
    'On PostgreSQL it leaves out the database server\'s processes (PostGraphile and Fieldgate use them alike).',
    '',
    `| # | Target | Threshold | ${rounds.map((round) => ROUND_TITLE[round]).join(' | ')} |`,
    `|---|---|---|${rounds.map(() => '---').join('|')}|`,
  );
  for (const target of roundTargets(results)) {
    push(`| ${target.id} | ${target.label} | ${target.threshold} | ${rounds.map((round) => targetCell(target.byRound[round])).join(' | ')} |`);
  }
  push('', '| # | Memory and start-up (the real commands, any client) | Threshold | Measured | Verdict | Detail |', '|---|---|---|---:|---|---|');
  for (const target of singleTargets(results)) {
    push(`| ${target.id} | ${target.label} | ${target.threshold} | ${ratioText(target.ratio)} | ${target.ratio.value === undefined ? `not measured — ${(target.ratio.missing ?? '').replace(/\|/g, '\\|').slice(0, 120)}` : verdict(target.ratio)} | ${target.detail} |`);
  }
  push('', '![Ratios measured in this run](benchmarks.svg)', '');

  push(
    '## Read path',
    '',
    `Concurrency ${t.readConnections} (autocannon, keep-alive, no pipelining) from a separate load process; ${t.warmupSec} s warm-up, then ${t.readSec} s measured per scenario.`,
    `The baselines (a) and (b) are served by the same process, on the same database connection${fieldgate.some((s) => s.database === 'postgres') ? ' pool' : ''}, as Fieldgate (c)–(f). This table is the node round; the other rounds are under "Every client stack".`,
    '',
  );
  for (const server of fieldgate) {
    push(`### ${server.label}`, '');
    if (server.skipped) {
      push(`Skipped: ${server.skipped}`, '');
      continue;
    }
    push('| Scenario | req/s | p50 ms | p99 ms | server CPU µs / req | SQL / req | failed |', '|---|---:|---:|---:|---:|---:|---|');
    for (const id of ['a', 'b', 'c', 'd', 'e', 'f'] as const) {
      const result = server.read[id];
      push(`| ${result?.label ?? id} | ${measurementCells(result).join(' | ')} |`);
    }
    if (server.bAgain) push(`| (b) again after (f), drift check | ${measurementCells(server.bAgain).join(' | ')} |`);
    if (server.beside?.bare?.node) push(`| bare Express 5 route, own process beside it (target 3), in turn with (c) and (d) | ${measurementCells(server.beside.bare.node).join(' | ')} |`);
    if (server.beside?.postgresRead?.node) push(`| (c) on Fieldgate · PostgreSQL beside it (target 2), in turn with (c) and (d) | ${measurementCells(server.beside.postgresRead.node).join(' | ')} |`);
    if (server.beside?.postgraphile?.node) push(`| PostGraphile v5 beside it, nested list (target 5), in turn with (f) | ${measurementCells(server.beside.postgraphile.node).join(' | ')} |`);
    push('');
  }
  push('| Ratio (req/s) | ' + fieldgate.map((s) => DB_NAME[s.database ?? 'pglite']).join(' | ') + ' |', '|---|' + fieldgate.map(() => '---:').join('|') + '|');
  for (const [index, name] of ['c/b REST ÷ direct (target ≥ 0.80)', 'd/b GraphQL ÷ direct', 'c/a REST ÷ bare Express'].entries()) {
    push(`| ${name} | ${fieldgate.map((s) => ratioText(readRatios(s)[index]!)).join(' | ')} |`);
  }
  const pairs: [string, ReadScenarioId, ReadScenarioId][] = [
    ['c/b by server CPU per request', 'c', 'b'],
    ['d/b by server CPU per request', 'd', 'b'],
    ['c/a by server CPU per request', 'c', 'a'],
  ];
  for (const [name, top, bottom] of pairs) {
    const cells = fieldgate.map((s) => {
      const pick = (id: ReadScenarioId) => (id === 'b' ? directBaseline(s) : s.read[id]);
      const value = cpuRatio(pick(top), pick(bottom));
      return value === undefined ? '—' : value.toFixed(2);
    });
    push(`| ${name} | ${cells.join(' | ')} |`);
  }
  push(
    '',
    'The first rows are the measured throughput ratios (the targets). The "by server CPU" rows divide the server process\'s CPU time per request',
    'of the baseline by that of Fieldgate: a cross-check that other load on a shared machine disturbs far less. On PostgreSQL it leaves out',
    'the database server\'s processes, which (b) and (c) use alike; on PGlite the database runs inside the server process and is included.',
    '',
  );

  push(
    '## OAuth path vs oidc-provider',
    '',
    `A **flow** is \`GET /authorize\` with an established browser session and consent → 302 with a code → \`POST /token\``,
    '(PKCE S256, `client_secret_basic`) → a JWT access token (ES256, RFC 9068) and a refresh token. ' +
      `${t.flowConcurrency} concurrent closed-loop clients (node:http keep-alive) in the load process; ${t.warmupSec} s warm-up, then ${t.oauthSec} s measured.`,
    'Refresh: each client owns one token family and always presents the newest (rotated) refresh token.',
    'Introspection: autocannon, concurrency ' + `${t.readConnections}` + ', `POST /introspect` with `client_secret_basic`.',
    '',
  );
  const oauthServers = [...fieldgate.filter((s) => s.database === 'postgres'), ...fieldgate.filter((s) => s.database !== 'postgres'), ...(peer ? [peer] : [])];
  push('| Measure | ' + oauthServers.map((s) => s.label).join(' | ') + ' |', '|---|' + oauthServers.map(() => '---:').join('|') + '|');
  const oauthRows: [string, 'flows' | 'refresh' | 'introspectRefresh' | 'introspectAccess', string][] = [
    ['flows/s', 'flows', 'flows'],
    ['refresh grant req/s', 'refresh', 'refresh'],
    ['introspection req/s (refresh token)', 'introspectRefresh', 'introspectRefresh'],
    ['introspection req/s (JWT access token)', 'introspectAccess', 'introspectAccess'],
  ];
  for (const [name, key] of oauthRows) {
    const cell = (s: ServerResult) => {
      if (s.skipped) return 'skipped';
      const r = s.oauth[key];
      if (!r) return '—';
      if (r.unavailable) return `n/a (${r.unavailable.replace(/\|/g, '\\|').slice(0, 90)})`;
      const mm = r.measurement!;
      const failed = mm.errors > 0 ? `, ${fmt(mm.errors)} failed` : '';
      const sql = r.sql ? `, ${r.sql.count} SQL` : '';
      const cpu = r.serverCpuUs ? `, ${fmt(r.serverCpuUs)} µs CPU` : '';
      return `${fmt(mm.perSec)} (p50 ${fmt(mm.p50Ms, 1)} / p99 ${fmt(mm.p99Ms, 1)} ms${cpu}${sql}${failed})`;
    };
    push(`| ${name} | ${oauthServers.map(cell).join(' | ')} |`);
  }
  push('');
  if (peer) {
    push('| Ratio vs oidc-provider | ' + oauthServers.filter((s) => s.kind === 'fieldgate').map((s) => s.label).join(' | ') + ' |');
    push('|---|' + oauthServers.filter((s) => s.kind === 'fieldgate').map(() => '---:').join('|') + '|');
    for (const [name, key] of oauthRows.slice(0, 3)) {
      const cells = oauthServers
        .filter((s) => s.kind === 'fieldgate')
        .map((s) => ratioText(ratio(name, s.oauth[key], peer.oauth[key]), '×'));
      push(`| ${name}${key === 'flows' ? ' (target ≥ 1.5× on PostgreSQL, ≥ 1.0× on PGlite)' : ''} | ${cells.join(' | ')} |`);
    }
    for (const [name, key] of oauthRows.slice(0, 3)) {
      const cells = oauthServers.filter((s) => s.kind === 'fieldgate').map((s) => {
        const value = cpuRatio(s.oauth[key], peer.oauth[key]);
        return value === undefined ? '—' : `${value.toFixed(2)}×`;
      });
      push(`| ${name}, by server CPU per operation | ${cells.join(' | ')} |`);
    }
    push(
      '',
      'Cells show throughput, latency, the server process\'s CPU time per operation and (Fieldgate) the SQL statements per operation. The "by server CPU"',
      'rows divide oidc-provider\'s CPU per operation by Fieldgate\'s; for Fieldgate on PostgreSQL that leaves out the database server\'s own work.',
      '',
    );
  }

  push(
    '## Every client stack',
    '',
    'The scenarios of the targets in each round. Cells: req/s or flows/s, p99 ms, server CPU µs per operation. The cold round starts every server process afresh and',
    'measures from its first request; the undici round then continues in the same process after a warm-up (oidc-provider included: one process across both),',
    'and also measures refresh chains and introspection (as the node round does; they have no target of their own).',
    '',
    `| Server · scenario | ${rounds.map((round) => ROUND_TITLE[round]).join(' | ')} |`,
    `|---|${rounds.map(() => '---:').join('|')}|`,
  );
  const roundCell = (r: ScenarioResult | undefined) => {
    if (!r) return '—';
    if (r.unavailable) return `n/a (${r.unavailable.replace(/\|/g, '\\|').slice(0, 80)})`;
    const mm = r.measurement!;
    const failed = mm.errors > 0 ? `, **${fmt(mm.errors)} failed**` : '';
    return `${fmt(mm.perSec)} · p99 ${fmt(mm.p99Ms, 1)} · ${fmt(r.serverCpuUs)} µs${failed}`;
  };
  const stackRows: [ServerResult['kind'], 'read' | 'oauth', string, string][] = [
    ['bare-process', 'read', 'a', 'bare Express 5 route, own process'],
    ['fieldgate', 'read', 'c', '(c) REST `fields=id,name`'],
    ['fieldgate', 'read', 'd', '(d) GraphQL `product(id) { id name }`'],
    ['fieldgate', 'read', 'f', '(f) GraphQL nested list'],
    ['postgraphile', 'read', 'f', 'nested list (PostGraphile query)'],
    ['fieldgate', 'oauth', 'flows', 'code flows'],
    ['peer', 'oauth', 'flows', 'code flows'],
    ['fieldgate', 'oauth', 'refresh', 'refresh grant'],
    ['peer', 'oauth', 'refresh', 'refresh grant'],
    ['fieldgate', 'oauth', 'introspectRefresh', 'introspection of a refresh token'],
    ['peer', 'oauth', 'introspectRefresh', 'introspection of a refresh token'],
  ];
  const besideRows = [
    ['bare', 'Express 5 · separate process', 'bare Express 5 route'],
    ['postgraphile', 'PostGraphile v5', 'nested list (PostGraphile query)'],
    ['peerFlows', 'oidc-provider · memory', 'code flows'],
    ['postgresRead', 'Fieldgate · PostgreSQL', '(c) REST `fields=id,name`'],
  ] as const;
  for (const [key, who, what] of besideRows) {
    for (const server of results.servers.filter((s) => s.kind === 'fieldgate' && s.beside?.[key])) {
      push(`| ${who}, beside ${server.label} · ${what} | ${rounds.map((round) => roundCell(server.beside![key]![round])).join(' | ')} |`);
    }
  }
  for (const [kind, group, id, name] of stackRows) {
    for (const server of results.servers.filter((s) => s.kind === kind)) {
      if (server.skipped) {
        push(`| ${server.label} · ${name} | ${rounds.map(() => 'skipped').join(' | ')} |`);
        continue;
      }
      const cells = rounds.map((round) => {
        const r = roundOf(server, round);
        return roundCell(group === 'read' ? r?.read[id as ReadScenarioId] : r?.oauth[id as OAuthScenarioId]);
      });
      if (cells.every((cell) => cell === '—')) continue;
      push(`| ${server.label} · ${name} | ${cells.join(' | ')} |`);
    }
  }
  push('');
  for (const server of results.servers.filter((s) => (s.kind === 'bare-process' || s.kind === 'postgraphile') && s.skipped)) push(`${server.label} skipped: ${server.skipped}`, '');

  const st = results.startup;
  if (st) {
    push(
      '## Start-up and memory of the real commands',
      '',
      'Measured on the commands a user runs, not on the bench server: time from spawning the command until `GET /healthz` answers 200, peak resident memory up to',
      'that moment (`VmHWM` in `/proc/<pid>/status`) and resident memory after idling (`VmRSS`). `npm start` checks (and on a fresh clone runs) the build first; its memory is not taken',
      '(the server is a grandchild of npm).',
      '',
      '| Command | ready | peak RSS while starting | RSS after start | right after load | idle after load |',
      '|---|---:|---:|---:|---:|---:|',
    );
    const startRow = (what: string, m: StartupResults['pgliteFirst']) => {
      if (!m) return;
      if (m.error) push(`| ${what} | failed: ${m.error.replace(/\|/g, '\\|').slice(0, 120)} | | | | |`);
      else push(`| ${what} | ${((m.readyMs ?? 0) / 1000).toFixed(2)} s | ${mib(m.peakRssMiB)} | ${mib(m.idleRssMiB)} | ${mib(m.afterLoadRssMiB)} | ${mib(m.settledRssMiB)} |`);
    };
    startRow('`npm start`, fresh PGlite directory (first build and first start)', st.npmStartFresh);
    st.npmStartExisting.forEach((m, i) => startRow(`\`npm start\`, existing PGlite directory (run ${i + 1})`, m));
    startRow('`fieldgate serve`, fresh PGlite directory (first start)', st.pgliteFirst);
    startRow('`fieldgate serve`, same directory again (restart)', st.pgliteRestart);
    startRow('`fieldgate serve`, PostgreSQL (migrated and seeded)', st.postgres);
    for (const cli of st.cli) push(`| \`${cli.command.replace(/^node /, '')}\` (PostgreSQL) | ${cli.error ? `failed: ${cli.error.replace(/\|/g, '\\|')}` : cli.wallMs.map((ms) => `${(ms / 1000).toFixed(2)} s`).join(', ')} | | | | |`);
    if (st.skipped) push('', `Start-up measurements stopped: ${st.skipped}`);
    push('');
  }

  push(
    '## Memory',
    '',
    'Resident set size of the server process (`process.memoryUsage().rss`): idle one second after start (Fieldgate: a restart after the seed, so no set-up garbage),',
    'after the read benchmark, and after the OAuth benchmark (oidc-provider: after its flow benchmark, in the process that ran it).',
    '',
  );
  push('| Server | idle after start | after the read benchmark | after the OAuth benchmark | after the undici and cold rounds (fresh process) |', '|---|---:|---:|---:|---:|');
  for (const s of results.servers) {
    if (s.skipped) continue;
    push(`| ${s.label} | ${mib(s.memory.idle)} | ${s.kind === 'peer' ? 'n/a (no read path)' : mib(s.memory.afterRead)} | ${s.kind === 'fieldgate' || s.kind === 'peer' ? mib(s.memory.afterOAuth) : 'n/a'} | ${mib(s.memory.afterRounds)} |`);
  }
  push('');

  push('## How it was measured', '');
  push('```sh', results.command, '```', '');
  push(
    '- `bench/run.ts` (the orchestrator) starts each server as its own process, then a **separate load process** (`bench/load-generator.ts`) that generates all traffic on loopback; the orchestrator sits idle while a scenario runs. Servers run one at a time, except the bare Express process of target 3, which runs beside each Fieldgate server (idle while Fieldgate is measured).',
    '- Fieldgate runs as `createApp(runtime)` from `src/app.ts` inside `bench/server.ts`, which mounts the two baselines into that same Express 5 app and runtime (`embedderRoutes`) and serves it as `fieldgate serve` does (`createAppServer`, `src/http/app-server.ts`: requests and responses created with the app\'s prototypes): (a) `GET /bench/bare` returns a fixed JSON object ahead of all middleware; (b) `GET /bench/direct/:id` runs `db.select({ id, name }).from(products).where(eq(products.id, id))` through Drizzle behind the app-wide middleware every route of the service passes (request id, access log line), so c/b measures what the target names — translation, token check and GraphQL execution. Until 2026-11-21 both baselines sat in front of a mounted Fieldgate sub-app, which charged (c) the log line and a second app traversal that (b) skipped; until 2026-12-02 each was an Express router of its own, which every request of (c)–(f) ran through too. They are plain handlers that match their own path.',
    `- Fieldgate configuration: defaults (\`DATABASE_POOL_SIZE\` ${results.poolSize ?? 10}: twice the cores from 4 to 10 unless set, and \`DATABASE_PREPARED_STATEMENTS\` 256 on PostgreSQL, PGlite in a fresh data directory), \`NODE_ENV=production\` as \`fieldgate serve\` sets it, \`LOG_LEVEL=${results.logLevel}\` — one JSON log line per request, written to a file — demo catalogue seeded (${'30'} products with reviews), a bench user and a confidential client registered through the runtime's stores.`,
    '- Sign-in: one scripted browser session per server goes through the real pages — Fieldgate\'s login and consent forms (CSRF token included), oidc-provider\'s dev-interaction login and consent — and keeps the session cookie; every measured flow reuses it.',
    '- oidc-provider (`bench/peer/oidc-provider.ts`): PKCE required, `client_secret_basic`, refresh tokens issued on every code exchange and rotated on every use, JWT access tokens (ES256) for one resource server via `features.resourceIndicators`, introspection and revocation on, default in-memory adapter, dev interactions. oidc-provider refuses to introspect JWT access tokens, so the comparable introspection row uses refresh tokens. Its in-memory adapter keeps every grant, code and token in the heap and slows down as they pile up, so in the node round each of its three OAuth benchmarks runs in a fresh process, signed in again (the method of earlier rounds, kept so their numbers stay comparable). In the cold and undici rounds it is run as the external harness ran it: one process, started fresh for the cold round and kept running into the undici round.',
    '- **Client stacks.** node round: reads through autocannon, flows and refresh chains through closed loops on a keep-alive node:http agent. undici round: the same closed loops on a keep-alive undici `Agent` (one request in flight per connection) for reads and flows alike, same concurrency (32 read connections, 16 flows). Both warm up first and count only the measured window. A non-2xx answer counts as failed in both, and a ratio with failures on either side is not given.',
    `- **Cold round.** Every server process is started afresh (Fieldgate on each database, oidc-provider, the bare Express process, PostGraphile), then measured through undici with no warm-up, from the first request: Fieldgate and oidc-provider first sign in through their pages (a handful of requests), then flows, then the reads (c), (d) and (f). The undici round then runs in the same processes after its warm-up.`,
    '- **Bare Express process (target 3).** `bench/peer/bare-express.ts`: an Express 5 app of its own process, one route `GET /bare` answering a fixed small JSON object, no middleware, served by `http.createServer(app)` as `app.listen` serves it (so, unlike Fieldgate, Express changes the prototypes of each request and response, which Node 20 and 22 pay for: docs/PERFORMANCE.md); started beside each Fieldgate server and measured in turn with (c) and (d). Target 3 divides Fieldgate\'s (c) by it, per database. Runs before 2026-12-03 measured it once, at the start of the run. (a) in the read table is the same route inside Fieldgate\'s process.',
    '- **PostGraphile v5 (target 5).** `bench/peer/postgraphile.ts`: PostGraphile 5 with the Amber preset over the schema Fieldgate migrated and seeded, on the same throwaway PostgreSQL database, pg pool of ' + String(results.poolSize ?? 10) + ' connections (Fieldgate\'s), GraphiQL, watch mode and explain off, no authentication (Fieldgate\'s bearer check is work we keep on our side). It needs Node >= 22, so the bench installs Node 24 from the npm registry (`npm install --no-save --prefix bench/.node24 node@24`, ignored by git) and runs it under that binary; everything else runs on the orchestrator\'s Node. Its query is the same selection in its inflection: `allProducts(first: 20, orderBy: PRIMARY_KEY_ASC) { nodes { rowId name sellerBySellerId { name } reviewsByProductId(first: 10, orderBy: PRIMARY_KEY_ASC) { nodes { rating } } } }` (Fieldgate\'s `reviews` defaults to the first 10 by id). Before measuring, its answer, brought into Fieldgate\'s shape, must equal Fieldgate\'s answer row for row, or it is not measured.',
    '- **Memory and start-up (targets 6 and 7).** On the real commands, not the bench server: `npm start` (its build check, and on the fresh directory its build, included) with `DATA_DIR` on a fresh directory first, then twice more on that existing directory, timed from spawn until `GET /healthz` answers 200 (the target takes the median); `node bin/fieldgate.js serve` on a second fresh PGlite directory (first start: peak resident memory up to ready from `VmHWM`, and `VmRSS` after 2 s idle), again on that directory (restart), and on the PostgreSQL database after Fieldgate\'s set-up. CLI commands (`--help`, `client list`, `user list`) run three times each against PostgreSQL, wall time from spawn to exit (median). RSS after the benchmark is taken on the real `fieldgate serve` too (PostgreSQL, and the PGlite restart): after its start reading, the load process drives REST reads, the nested GraphQL list and client-credentials token requests at it (32 connections, 8 s each; 3 s with `--quick`) with a service client registered through the CLI beforehand, then `VmRSS` is read right after the load and again after 20 s idle, when V8 has returned the old-generation pages the load freed; the target compares the idle reading with the start reading, and the table shows both. The Memory table above is the bench server process (run through tsx, which adds about 60 MiB), for reference.',
    '- (b) is measured twice, before (c) and after (f); the ratios divide by the mean of both, and a gap of more than 15% is reported under run notes as drift (the machine\'s load changed).',
    '- Server CPU per operation: `process.cpuUsage()` of the server process across warm-up and window, divided by the operations completed in both.',
    `- Each read scenario is probed once and its answer checked (status, exact keys) before it is measured; a wrong answer is reported instead of a number.`,
    `- PostgreSQL: a fresh database on ${results.postgresVersion ? `PostgreSQL ${results.postgresVersion}` : 'the local server'} (\`BENCH_DATABASE_URL\`, else \`TEST_DATABASE_URL\`, else \`postgres://postgres@127.0.0.1:5432/test\`), dropped afterwards.`,
    `- Versions: ${Object.entries(m.versions).map(([name, version]) => `${name} ${version}`).join(', ')}.`,
    '- Options: `--quick` (1 s warm-up, 2 s windows), `--only=pglite,postgres,peer`, `--drivers=node,undici,cold` (rounds; `autocannon` is an alias of `node`) and `--scenarios=a,b,c,d,e,f,flows,refresh,introspect,bare,postgraphile,startup` (subsets, for investigations), `--profile` (a CPU profile of each server per scenario, summarized per operation in `bench/results/<run>/profiles/SUMMARY.md`), `--experiment=NAME` (a proposed change tried from `bench/server.ts`; none is defined now), `--out=FILE`. Profiled and experimental runs write into `bench/results/<run>/` unless `--out` says otherwise. Environment: `BENCH_DATABASE_URL` (PostgreSQL server to create the throwaway database on), `BENCH_LOG_LEVEL` (Fieldgate\'s `LOG_LEVEL`, default `info`).',
    '- To reproduce on another machine: `npm ci`, start PostgreSQL (or set `BENCH_DATABASE_URL`), then `npm run bench` (about 17 minutes on 2 cores) or `npm run bench -- --quick` (about 5 minutes). The first run also downloads Node 24 for PostGraphile.',
    '',
  );
  if (t.interleavedWindows) {
    push(
      `- **In turn.** Each target's two sides are measured in windows that take turns rather than one after the other, with the baseline's process started beside the Fieldgate server (afresh with it for the cold round): (c), (d) and the bare Express process (targets 3 and 4), Fieldgate's code flows and oidc-provider's (targets 1 and 2), (f) and PostGraphile's nested list (target 5), and on PGlite (c) with (c) of a Fieldgate on PostgreSQL started beside it, on a database of its own and signed in the same way (target 2). Each side gets ${t.interleavedWindows} windows of ${fmt(t.readSec / t.interleavedWindows, 1)} s (${t.readSec} s in all), in the order A B, then B A, and so on, the first window of each after the round's warm-up. A change in the machine's load during the run then falls on both sides of a ratio alike; measured one after the other, one run's two readings of the same baseline (b) were 35–40 % apart. The latency percentiles combine the windows' (p50 weighted by requests, p99 the worst window's). The oidc-provider measured in turn keeps its grants for the whole round, as the one measured on its own does. Every target uses these readings; the oidc-provider measured on its own below (and in runs before 2026-12-03, every baseline) is shown for reference. With \`--profile\` the scenarios run one after the other, each with its profile.`,
      '',
    );
  }
  for (const server of results.servers) {
    // Interaction ids are long random path segments: shorten them, they only clutter.
    if (server.setup.length) push(`${server.label}: ${server.setup.join('; ').replace(/\/[A-Za-z0-9_-]{20,}/g, '/…')}.`, '');
  }
  if (results.notes.length) push('### Run notes', '', ...results.notes.map((note) => `- ${note}`), '');
  const withSql = fieldgate.flatMap((server) =>
    [...Object.values(server.read), ...Object.values(server.oauth)].filter((r) => r?.sql).map((r) => ({ server, r: r! })),
  );
  if (withSql.length) {
    push(
      '### SQL per operation',
      '',
      'Statements Fieldgate sent through Drizzle for one operation, counted on a probe after a first warm-up probe (so caches are warm, as in the measured window); `BEGIN`/`COMMIT` of transactions are not counted.',
      '',
      '<details><summary>Statements</summary>',
      '',
    );
    for (const { server, r } of withSql) {
      push(`**${server.label} · ${r.label}** — ${r.sql!.count}`, '');
      for (const statement of r.sql!.statements) push(`- ${statement.count}× \`${statement.text.slice(0, 240).replace(/`/g, "'")}${statement.text.length > 240 ? '…' : ''}\``);
      push('');
    }
    push('</details>', '');
  }
  if (notes?.trim()) push(notes.trim(), '');
  return lines.join('\n');
}

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** A horizontal bar chart of the ratios, with each target drawn as a dashed line on its bar. */
export function renderSvg(results: RunResults): string {
  const short: Record<RoundId, string> = { node: 'node', undici: 'undici', cold: 'cold' };
  const ratios: Ratio[] = roundTargets(results).flatMap((target) =>
    (results.rounds ?? ['node']).map((round) => ({ ...(target.byRound[round] ?? { label: '' }), label: `${target.id}. ${target.short} · ${short[round]}` })),
  );
  const width = 820;
  const labelWidth = 390;
  const barArea = width - labelWidth - 70;
  const rowHeight = 30;
  const top = 50;
  const height = top + ratios.length * rowHeight + 40;
  const max = Math.max(1.2, ...ratios.map((r) => r.value ?? 0)) * 1.05;
  const x = (value: number) => labelWidth + (value / max) * barArea;
  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, -apple-system, Segoe UI, sans-serif" font-size="13">`,
    `<title>Fieldgate benchmark ratios, ${escapeXml(results.startedAt.slice(0, 10))}${results.quick ? ' (quick run)' : ''}</title>`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="16" y="26" font-size="16" font-weight="600">Issue 19 targets per client stack: Fieldgate ÷ baseline, req/s or flows/s${results.quick ? ' — quick run' : ''}</text>`,
  );
  for (const tick of [0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 2, 3, 4].filter((v) => v <= max)) {
    const tx = x(tick);
    parts.push(`<line x1="${tx.toFixed(1)}" y1="${top - 6}" x2="${tx.toFixed(1)}" y2="${top + ratios.length * rowHeight}" stroke="#e3e3e3"/>`);
    parts.push(`<text x="${tx.toFixed(1)}" y="${top + ratios.length * rowHeight + 18}" text-anchor="middle" fill="#666">${tick}</text>`);
  }
  ratios.forEach((r, index) => {
    const y = top + index * rowHeight;
    parts.push(`<text x="${labelWidth - 10}" y="${y + 19}" text-anchor="end">${escapeXml(r.label)}</text>`);
    if (r.value === undefined) {
      parts.push(`<text x="${labelWidth + 6}" y="${y + 19}" fill="#999">not measured</text>`);
    } else {
      const met = isMet(r);
      const color = met === undefined ? '#7a8fb3' : met ? '#2e9e5b' : '#d9534f';
      parts.push(`<rect x="${labelWidth}" y="${y + 6}" width="${Math.max(1, x(r.value) - labelWidth).toFixed(1)}" height="${rowHeight - 12}" fill="${color}" rx="2"/>`);
      parts.push(`<text x="${(x(r.value) + 6).toFixed(1)}" y="${y + 19}" fill="#222">${r.value.toFixed(2)}</text>`);
    }
    if (r.target !== undefined) {
      const tx = x(r.target);
      parts.push(`<line x1="${tx.toFixed(1)}" y1="${y + 2}" x2="${tx.toFixed(1)}" y2="${y + rowHeight - 2}" stroke="#222" stroke-width="2" stroke-dasharray="3,2"><title>target ${r.target}</title></line>`);
    }
  });
  parts.push(
    `<text x="16" y="${height - 6}" fill="#666" font-size="11">green: target met · red: target missed · blue: no target · dashed line: target. ${escapeXml(results.machine.cpuModel)}, ${results.machine.cores} cores, Node ${escapeXml(results.machine.node)}</text>`,
    '</svg>',
  );
  return `${parts.join('\n')}\n`;
}

/** Writes the document (with bench/NOTES.md appended) and the chart. */
export function writeReport(results: RunResults, markdownFile: string, svgFile: string): void {
  const notesFile = path.join(REPO_ROOT, 'bench', 'NOTES.md');
  const notes = existsSync(notesFile) ? readFileSync(notesFile, 'utf8') : undefined;
  mkdirSync(path.dirname(markdownFile), { recursive: true });
  writeFileSync(markdownFile, renderMarkdown(results, notes));
  writeFileSync(svgFile, renderSvg(results));
}
