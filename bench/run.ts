/**
 * `npm run bench [-- --quick] [--only=postgres,pglite,peer] [--drivers=node,undici,cold]
 *                  [--scenarios=a,b,c,d,e,f,flows,refresh,introspect,bare,postgraphile,startup]
 *                  [--profile] [--experiment=NAME] [--out=docs/BENCHMARKS.md]`
 *
 * Measures, in one run on one machine, every target of issue 19: the read path of Fieldgate
 * against baselines in the same process, a bare Express process and PostGraphile v5; the OAuth
 * code flow, refresh grant and introspection against panva's oidc-provider; each in up to three
 * rounds (node:http/autocannon warm, undici warm, undici cold on fresh processes); memory and
 * start-up time of the real commands. Then writes docs/BENCHMARKS.md and docs/benchmarks.svg.
 * Raw results, server logs and profiles go to bench/results/<timestamp>/.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Child, REPO_ROOT } from './lib/child.js';
import { signInAndConsent } from './lib/browser.js';
import { combineWindows, type Measurement } from './lib/drivers.js';
import { basicAuth, formBody, request } from './lib/http.js';
import { machineInfo } from './lib/machine.js';
import { introspect, oauthTarget, refresh, runFlow, type OAuthTarget, type ServerInfo } from './lib/oauth-client.js';
import { freePort } from '../test/support/processes.js';
import { createBenchStorage } from './lib/storage.js';
import { writeReport } from './lib/report.js';
import { formatSummary, summarize, type CpuProfile } from './lib/profile.js';
import { ROUND_IDS, type PerRound, type RoundId, type RoundResult, type RunResults, type ScenarioResult, type ServerResult, type StartupResults, type Timing } from './lib/results.js';
import { checkNested, nestedFromFieldgate, nestedFromPostGraphile, POSTGRAPHILE_NESTED_LIST_QUERY, readScenarios, type NestedProduct, type ReadScenario } from './lib/scenarios.js';
import { measureCli, measureStart } from './lib/startup.js';
import { loadConfig } from '../src/config.js';

const argv = process.argv.slice(2);
const option = (name: string) => argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
const quick = argv.includes('--quick');
const profiling = argv.includes('--profile');
const only = new Set((option('only') ?? 'postgres,pglite,peer').split(',').map((part) => part.trim()));
/** Rounds (client stacks): node (node:http + autocannon, warm), undici (warm), cold (undici, fresh processes, no warm-up). */
const rounds: RoundId[] = (option('drivers') ?? ROUND_IDS.join(','))
  .split(',')
  .map((part) => part.trim().replace(/^autocannon$/, 'node'))
  .filter((part): part is RoundId => (ROUND_IDS as readonly string[]).includes(part));
const inRound = (round: RoundId) => rounds.includes(round);
/** Scenario filter for investigations: a–f, flows, refresh, introspect, bare, postgraphile, startup. Everything by default. */
const scenarioFilter = option('scenarios')?.split(',').map((part) => part.trim());
const wanted = (id: string) => !scenarioFilter || scenarioFilter.includes(id);
/** What-if changes applied inside bench/server.ts only (see there), defined there. */
const experiments = option('experiment')?.split(',').map((part) => part.trim()).filter(Boolean) ?? [];

const logLevel = process.env.BENCH_LOG_LEVEL?.trim() || 'info';
/** Fieldgate's PostgreSQL pool on this machine (its default, or DATABASE_POOL_SIZE); PostGraphile gets as many connections. */
const poolSize = loadConfig({ DATABASE_POOL_SIZE: process.env.DATABASE_POOL_SIZE }).databasePoolSize;

const timing: Timing & { interleavedWindows: number } = quick
  ? { warmupSec: 1, readSec: 2, interleavedWindows: 2, oauthSec: 2, readConnections: 32, flowConcurrency: 16 }
  : { warmupSec: 3, readSec: 10, interleavedWindows: 5, oauthSec: 10, readConnections: 32, flowConcurrency: 16 };

const startedAt = new Date();
const runDir = path.join(REPO_ROOT, 'bench', 'results', startedAt.toISOString().replace(/[:.]/g, '-'));
mkdirSync(runDir, { recursive: true });
// Profiled and experimental runs never overwrite the published document unless asked to.
const out = path.resolve(REPO_ROOT, option('out') ?? (profiling || experiments.length ? path.join(runDir, 'BENCHMARKS.md') : 'docs/BENCHMARKS.md'));
const svgOut = path.join(path.dirname(out), 'benchmarks.svg');
const command = `npm run bench${argv.length ? ` -- ${argv.join(' ')}` : ''}`;

function log(message: string): void {
  console.log(`[bench ${((Date.now() - startedAt.getTime()) / 1000).toFixed(0).padStart(3)} s] ${message}`);
}

function describeMeasurement(m: Measurement): string {
  const failed = m.errors ? `, ${m.errors} FAILED (${m.firstError})` : '';
  return `${m.perSec.toFixed(0)}/s  p50 ${m.p50Ms.toFixed(1)} ms  p99 ${m.p99Ms.toFixed(1)} ms${failed}`;
}

async function rssMiB(server: Child): Promise<number> {
  const usage = await server.call<NodeJS.MemoryUsage>('memory');
  return usage.rss / 2 ** 20;
}

interface Prepared {
  /** Statements per operation, counted on a probe. */
  sql?: SqlCount | undefined;
  /** The measured load. */
  run(): Promise<Measurement>;
}

/** Runs one scenario, wrapped in a per-scenario CPU profile of the server when --profile is on. */
async function measure(
  server: Child,
  result: ServerResult,
  name: string,
  label: string,
  prepare: () => Promise<Prepared>,
): Promise<ScenarioResult> {
  try {
    // Probes, SQL counting and token minting happen before the CPU clock and the profiler start.
    const { sql, run } = await prepare();
    if (profiling) await server.call('profile-start');
    const cpuBefore = await server.call<NodeJS.CpuUsage>('cpu');
    const measurement = await run();
    const cpuAfter = await server.call<NodeJS.CpuUsage>('cpu');
    const cpuUs = cpuAfter.user + cpuAfter.system - cpuBefore.user - cpuBefore.system;
    const serverCpuUs = measurement.totalCompleted > 0 ? cpuUs / measurement.totalCompleted : undefined;
    let profile: string | undefined;
    if (profiling) {
      const file = await server.call<string | undefined>('profile-stop', { name });
      if (file) {
        profile = path.relative(REPO_ROOT, file);
        result.profiles.push(profile);
      }
    }
    log(`${result.label} · ${label}: ${describeMeasurement(measurement)}  server CPU ${serverCpuUs?.toFixed(0)} µs/op${sql ? `, ${sql.count} SQL/op` : ''}`);
    return { label, measurement, ...(serverCpuUs === undefined ? {} : { serverCpuUs }), ...(sql ? { sql } : {}), ...(profile ? { profile } : {}) };
  } catch (error) {
    const message = error instanceof Error ? error.message.split('\n')[0]! : String(error);
    log(`${result.label} · ${label}: not measured — ${message}`);
    return { label, unavailable: message };
  }
}

/** "a", "a and b", "a, b and c". */
const listed = (names: string[]) => (names.length < 2 ? names.join('') : `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`);

/** One side of a ratio measured in turn with the other: its server, and one window of its load. */
interface InterleavedArm {
  server: Child;
  result: ServerResult;
  /** Names its CPU profile (with --profile). */
  name: string;
  /** Names it among the others in the log: "(c)", "the bare Express process". */
  short: string;
  label: string;
  /** Statements per operation, counted on a probe before any window (Fieldgate only). */
  sql?: () => Promise<SqlCount | undefined>;
  window(warmupSec: number, durationSec: number): Promise<Measurement>;
}

/**
 * Scenarios whose ratio is a target, measured in turn: `timing.interleavedWindows` windows each, the
 * order reversed every window (A B, B A, A B, …), the first window of each after the round's
 * warm-up. A change in the machine's load during the run then falls on both sides of the ratio
 * alike, where one scenario after the other can put it all on one side (round 20's (b) readings
 * moved 35–40 % within one run). Server CPU is read around each window. With --profile, each
 * scenario is measured whole, one after the other, so that each gets a profile of its own.
 */
async function measureInterleaved(arms: InterleavedArm[], warmupSec: number, durationSec: number): Promise<ScenarioResult[]> {
  if (profiling || arms.length < 2) {
    const out: ScenarioResult[] = [];
    for (const arm of arms) {
      out.push(await measure(arm.server, arm.result, arm.name, arm.label, async () => ({ ...(arm.sql ? { sql: await arm.sql() } : {}), run: () => arm.window(warmupSec, durationSec) })));
    }
    return out;
  }
  const states = arms.map((arm) => ({ arm, windows: [] as Measurement[], cpuUs: 0, sql: undefined as SqlCount | undefined, failure: undefined as string | undefined }));
  for (const state of states) {
    try {
      state.sql = await state.arm.sql?.();
    } catch (error) {
      state.failure = error instanceof Error ? error.message.split('\n')[0]! : String(error);
    }
  }
  for (let index = 0; index < timing.interleavedWindows; index++) {
    const order = index % 2 === 0 ? states : [...states].reverse();
    for (const state of order) {
      if (state.failure) continue;
      try {
        const before = await state.arm.server.call<NodeJS.CpuUsage>('cpu');
        state.windows.push(await state.arm.window(state.windows.length === 0 ? warmupSec : 0, durationSec / timing.interleavedWindows));
        const after = await state.arm.server.call<NodeJS.CpuUsage>('cpu');
        state.cpuUs += after.user + after.system - before.user - before.system;
      } catch (error) {
        state.failure = error instanceof Error ? error.message.split('\n')[0]! : String(error);
      }
    }
  }
  return states.map(({ arm, windows, cpuUs, sql, failure }) => {
    const label = `${arm.label}, in ${timing.interleavedWindows} windows in turn with ${listed(arms.filter((other) => other !== arm).map((other) => other.short))}`;
    if (failure) {
      log(`${arm.result.label} · ${arm.label}: not measured — ${failure}`);
      return { label: arm.label, unavailable: failure };
    }
    const measurement = combineWindows(windows);
    const serverCpuUs = measurement.totalCompleted > 0 ? cpuUs / measurement.totalCompleted : undefined;
    log(`${arm.result.label} · ${label}: ${describeMeasurement(measurement)}  server CPU ${serverCpuUs?.toFixed(0)} µs/op${sql ? `, ${sql.count} SQL/op` : ''}`);
    return { label: arm.label, measurement, ...(serverCpuUs === undefined ? {} : { serverCpuUs }), ...(sql ? { sql } : {}) };
  });
}

type SqlCount = NonNullable<ScenarioResult['sql']>;

/** The SQL statements Fieldgate sends for one operation (probes only; never while measuring). */
async function countSql(server: Child, operation: () => Promise<unknown>): Promise<SqlCount> {
  await server.call('sql-start');
  const outcome = await operation().then(
    () => undefined,
    (error: unknown) => error,
  );
  const statements = await server.call<SqlCount['statements']>('sql-stop');
  if (outcome !== undefined) throw outcome;
  return { count: statements.reduce((sum, s) => sum + s.count, 0), statements };
}

function unavailable(label: string, reason: string): ScenarioResult {
  log(`${label}: not measured — ${reason}`);
  return { label, unavailable: reason };
}

const OAUTH_LABELS = {
  flows: 'flows (authorize → token)',
  refresh: 'refresh grant',
  introspectRefresh: 'introspection of a refresh token',
  introspectAccess: 'introspection of a JWT access token',
} as const;

/** Flow, refresh and introspection benchmarks against one signed-in server. */
type OAuthGroup = 'flows' | 'refresh' | 'introspect';
const OAUTH_GROUPS: OAuthGroup[] = ['flows', 'refresh', 'introspect'];

async function benchOAuth(
  server: Child,
  load: Child,
  result: ServerResult,
  target: OAuthTarget,
  peer: boolean,
  groups: readonly OAuthGroup[] = OAUTH_GROUPS,
  round: Exclude<RoundId, 'cold'> = 'node',
  into: ServerResult['oauth'] = result.oauth,
  beside: Beside = {},
): Promise<void> {
  const run = (group: OAuthGroup) => groups.includes(group) && wanted(group);
  const loop = { concurrency: timing.flowConcurrency, warmupSec: timing.warmupSec, durationSec: timing.oauthSec };
  const client = round === 'node' ? 'node' : 'undici';
  const suffix = round === 'node' ? '' : ` · ${ROUND_LABEL[round]}`;
  const slug = `${result.label.replace(/\W+/g, '-').toLowerCase()}${round === 'node' ? '' : `-${round}`}`;
  // Statements per operation, counted on single probes before measuring (Fieldgate only).
  const probeSql = async (operation: () => Promise<unknown>): Promise<SqlCount | undefined> => {
    if (peer) {
      await operation();
      return undefined;
    }
    return countSql(server, operation);
  };

  if (run('flows')) {
    // In turn with oidc-provider's flows when it runs beside (targets 1 and 2).
    const probed = async () => {
      await runFlow(target);
      return probeSql(() => runFlow(target));
    };
    await inTurn(round, timing.oauthSec, [
      { arm: flowArm(server, result, load, round, target, `${slug}-flows`, probed), store: (measured) => (into.flows = measured) },
      { arm: besideArm('peer', beside, load, round, result), store: besideStore(result, 'peer', round) },
    ]);
  }
  if (run('refresh')) {
    into.refresh = await measure(server, result, `${slug}-refresh`, `${OAUTH_LABELS.refresh}${suffix}`, async () => {
      const first = await runFlow(target);
      const sql = await probeSql(() => refresh(target, first.refresh_token!));
      const refreshTokens = await load.call<string[]>('mint-refresh-tokens', { target, count: timing.flowConcurrency, client });
      return { sql, run: () => load.call<Measurement>('refreshes', { target, refreshTokens, options: loop, client }) };
    });
  }

  const introspection = async (kind: 'refresh' | 'access'): Promise<Prepared> => {
    const tokens = await runFlow(target);
    const token = kind === 'refresh' ? tokens.refresh_token! : tokens.access_token;
    const answer = await introspect(target, token);
    if (answer.active !== true) throw new Error(`introspection of a fresh ${kind} token answered ${JSON.stringify(answer)}`);
    const sql = await probeSql(() => introspect(target, token));
    const run = () =>
      load.call<Measurement>('http', {
        url: new URL(target.introspectPath, target.baseUrl).href,
        method: 'POST',
        headers: { authorization: basicAuth(target.clientId, target.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
        body: formBody({ token }),
        connections: timing.readConnections,
        warmupSec: timing.warmupSec,
        durationSec: timing.oauthSec,
        client,
      });
    return { sql, run };
  };
  if (!run('introspect')) return;
  into.introspectRefresh = await measure(server, result, `${slug}-introspect-refresh`, `${OAUTH_LABELS.introspectRefresh}${suffix}`, () => introspection('refresh'));
  into.introspectAccess = peer
    ? { label: OAUTH_LABELS.introspectAccess, unavailable: 'oidc-provider does not introspect JWT access tokens' }
    : await measure(server, result, `${slug}-introspect-access`, `${OAUTH_LABELS.introspectAccess}${suffix}`, () => introspection('access'));
}

function markOAuthUnavailable(result: ServerResult, reason: string): void {
  for (const [key, label] of Object.entries(OAUTH_LABELS)) {
    result.oauth[key as keyof typeof OAUTH_LABELS] = unavailable(`${result.label} · ${label}`, reason);
  }
}

function serverEnv(port: number, env: Record<string, string | undefined>): Record<string, string | undefined> {
  return {
    PORT: String(port),
    HOST: '127.0.0.1',
    ISSUER: `http://127.0.0.1:${port}`,
    LOG_LEVEL: logLevel,
    NODE_ENV: 'production',
    ...(experiments.length ? { BENCH_EXPERIMENTS: experiments.join(',') } : {}),
    ...(profiling ? { BENCH_PROFILE_DIR: path.join(runDir, 'profiles') } : {}),
    ...env,
  };
}

async function startServer(
  entry: string,
  label: string,
  port: number,
  env: Record<string, string | undefined>,
  node?: string,
): Promise<{ server: Child; url: string }> {
  const slug = label.replace(/\W+/g, '-').toLowerCase();
  const server = Child.start({ entry, env: serverEnv(port, env), stdoutFile: path.join(runDir, `${slug}.log`), ...(node ? { node } : {}) });
  const ready = await server.ready;
  // Let start-up settle before the idle measurement (a quick run has no time to spare).
  if (!quick) await sleep(1000);
  return { server, url: String(ready.url) };
}

const ROUND_LABEL: Record<RoundId, string> = {
  node: 'node:http/autocannon, warm',
  undici: 'undici, warm',
  cold: 'undici, cold',
};

/** Warm-up of a round: none in the cold round, which measures from the first request. */
const warmupFor = (round: RoundId) => (round === 'cold' ? 0 : timing.warmupSec);

/** The undici and cold rounds, in the order they run on one freshly started process: cold first. */
const laterRounds = (): Exclude<RoundId, 'node'>[] => (['cold', 'undici'] as const).filter(inRound);

/** One read scenario through the load process, in a round's client stack. */
function readLoad(
  load: Child,
  round: RoundId,
  request: { url: string; method: 'GET' | 'POST'; headers: Record<string, string>; body?: string | undefined },
  window: { warmupSec: number; durationSec: number } = { warmupSec: warmupFor(round), durationSec: timing.readSec },
): Promise<Measurement> {
  return load.call<Measurement>('http', {
    ...request,
    client: round === 'node' ? 'node' : 'undici',
    connections: timing.readConnections,
    ...window,
  });
}

/** A read scenario of a Fieldgate server as one side of `measureInterleaved`, in a round's client stack. */
function readArm(server: Child, result: ServerResult, load: Child, round: RoundId, scenario: ReadScenario, baseUrl: string, name: string, sql?: () => Promise<SqlCount>): InterleavedArm {
  const url = new URL(scenario.path, baseUrl).href;
  return {
    server,
    result,
    name,
    short: `(${scenario.id})`,
    label: round === 'node' ? scenario.label : `${scenario.label} · ${ROUND_LABEL[round]}`,
    ...(sql ? { sql } : {}),
    window: (warmupSec, durationSec) => readLoad(load, round, { url, method: scenario.method, headers: scenario.headers, body: scenario.body }, { warmupSec, durationSec }),
  };
}

/**
 * Baseline processes started beside one Fieldgate server, each measured in windows in turn with
 * the scenario it is compared with: the bare Express process with (c) and (d) (target 3),
 * oidc-provider's code flows with Fieldgate's (targets 1 and 2), PostGraphile's nested list with
 * (f) (target 5). Idle while Fieldgate is measured.
 */
interface Beside {
  bare?: { server: Child; url: string };
  peer?: { server: Child; target: OAuthTarget };
  postgraphile?: { server: Child; url: string };
  /** Fieldgate on a PostgreSQL database of its own, beside Fieldgate on PGlite: target 2's (c) ÷ (c). */
  postgres?: { server: Child; read: ReadScenario; url: string; drop(): Promise<void> };
}

const BESIDE_RESULT = { bare: 'bare', peer: 'peerFlows', postgraphile: 'postgraphile', postgres: 'postgresRead' } as const;
const BESIDE_NAME = { bare: 'the bare Express process', peer: 'oidc-provider', postgraphile: 'PostGraphile', postgres: 'Fieldgate on PostgreSQL' } as const;

/**
 * Starts what the run wants beside a Fieldgate server, fresh. `probe` checks each answer first (the
 * node round; the cold round must not warm anything up, and the node round checked the same
 * answers). One that fails is recorded as not measured in `rounds`, and the others go on.
 */
async function startBeside(
  owner: ServerResult,
  rounds: RoundId[],
  wants: { bare: boolean; peer: boolean; postgraphile?: { databaseUrl: string; fieldgateRows: NestedProduct[] | string } | undefined; postgres?: boolean },
  probe: boolean,
): Promise<Beside> {
  const beside: Beside = {};
  const attempt = async <K extends keyof Beside>(key: K, start: () => Promise<NonNullable<Beside[K]>>) => {
    try {
      log(`${owner.label}: starting ${BESIDE_NAME[key]} beside it for ${rounds.join(', ')}`);
      beside[key] = await start();
    } catch (error) {
      const reason = error instanceof Error ? error.message.split('\n')[0]! : String(error);
      const perRound: PerRound = ((owner.beside ??= {})[BESIDE_RESULT[key]] ??= {});
      for (const round of rounds) perRound[round] = unavailable(`${owner.label} · ${BESIDE_NAME[key]} beside · ${ROUND_LABEL[round]}`, reason);
    }
  };
  if (wants.bare) await attempt('bare', () => startBaselineProcess(bareProcessSpec(), probe));
  if (wants.peer) await attempt('peer', startPeerSignedIn);
  const postgraphile = wants.postgraphile;
  if (postgraphile) await attempt('postgraphile', () => startBaselineProcess({ ...postGraphileSpec(postgraphile.databaseUrl, postgraphile.fieldgateRows), node: node24() }, probe));
  if (wants.postgres) await attempt('postgres', () => startFieldgateOnPostgres(probe));
  return beside;
}

async function stopBeside(beside: Beside): Promise<void> {
  await Promise.all([beside.bare?.server.stop(), beside.peer?.server.stop(), beside.postgraphile?.server.stop(), beside.postgres?.server.stop()]);
  await beside.postgres?.drop();
}

/**
 * Fieldgate on a fresh PostgreSQL database of its own, set up and signed in through its pages as the
 * measured one is; the read it serves is (c), with the access token of that sign-in.
 */
async function startFieldgateOnPostgres(probe: boolean): Promise<NonNullable<Beside['postgres']>> {
  const storage = await createBenchStorage('postgres');
  if ('skipped' in storage) throw new Error(storage.skipped);
  let server: Child | undefined;
  try {
    const port = await freePort();
    const setup = Child.start({ entry: 'bench/server.ts', env: serverEnv(port, { ...storage.env, BENCH_PHASE: 'setup' }) });
    const credentials = (await setup.ready) as unknown as Omit<ServerInfo, 'url'> & { userId: number };
    await setup.stop();
    const started = await startServer('bench/server.ts', 'Fieldgate · PostgreSQL beside', port, storage.env);
    server = started.server;
    const info: ServerInfo = { ...credentials, url: started.url };
    const signedIn = await signInAndConsent(oauthTarget('Fieldgate · PostgreSQL beside', info), info.username, info.password);
    const read = readScenarios(credentials.productId!, signedIn.tokens.access_token).find((scenario) => scenario.id === 'c')!;
    const url = new URL(read.path, started.url).href;
    if (probe) {
      const answer = await request(url, { method: read.method, headers: read.headers });
      const problem = read.check(answer.status, answer.body);
      if (problem) throw new Error(`Fieldgate on PostgreSQL answered wrongly: ${problem}`);
    }
    return { server, read, url, drop: storage.drop };
  } catch (error) {
    await server?.stop();
    await storage.drop();
    throw error;
  }
}

/** oidc-provider in a fresh process, signed in and consented through its pages. */
async function startPeerSignedIn(): Promise<{ server: Child; target: OAuthTarget }> {
  const started = await startServer('bench/peer/oidc-provider.ts', 'oidc-provider · memory', await freePort(), {});
  try {
    const info = (await started.server.ready) as unknown as ServerInfo;
    const base = oauthTarget('oidc-provider · memory', info);
    const signedIn = await signInAndConsent(base, info.username, info.password);
    return { server: started.server, target: { ...base, cookie: signedIn.cookie } };
  } catch (error) {
    await started.server.stop();
    throw error;
  }
}

/** A baseline of its own process (the bare Express route, PostGraphile), started and, with `probe`, its answer checked. */
async function startBaselineProcess(spec: BaselineSpec, probe: boolean): Promise<{ server: Child; url: string }> {
  const started = await startServer(spec.entry, spec.label, await freePort(), spec.env, spec.node);
  const url = new URL(spec.path, started.url).href;
  if (probe) {
    const answer = await request(url, { method: spec.method, headers: spec.headers, ...(spec.body ? { body: spec.body } : {}) });
    const problem = spec.check(answer.status, answer.body);
    if (problem) {
      await started.server.stop();
      throw new Error(`${spec.label} answered wrongly: ${problem}`);
    }
  }
  return { server: started.server, url };
}

/** A baseline beside `owner` as one side of `measureInterleaved`, in a round's client stack. */
function besideArm(key: keyof Beside, beside: Beside, load: Child, round: RoundId, owner: ServerResult): InterleavedArm | undefined {
  const name = `${owner.label.replace(/\W+/g, '-').toLowerCase()}-${round}-beside-${key}`;
  const suffix = ` · ${ROUND_LABEL[round]}`;
  if (key === 'peer') {
    const peer = beside.peer;
    if (!peer) return undefined;
    return {
      server: peer.server,
      result: { ...owner, label: 'oidc-provider · memory' },
      name,
      short: 'oidc-provider',
      label: `${OAUTH_LABELS.flows}${suffix}`,
      window: (warmupSec, durationSec) =>
        load.call<Measurement>('flows', { target: peer.target, client: round === 'node' ? 'node' : 'undici', options: { concurrency: timing.flowConcurrency, warmupSec, durationSec } }),
    };
  }
  if (key === 'postgres') {
    const fieldgate = beside.postgres;
    if (!fieldgate) return undefined;
    return {
      server: fieldgate.server,
      result: { ...owner, label: 'Fieldgate · PostgreSQL' },
      name,
      short: BESIDE_NAME.postgres,
      label: `${fieldgate.read.label}${suffix}`,
      window: (warmupSec, durationSec) => readLoad(load, round, { url: fieldgate.url, method: fieldgate.read.method, headers: fieldgate.read.headers }, { warmupSec, durationSec }),
    };
  }
  const baseline = beside[key];
  if (!baseline) return undefined;
  // The spec's request shape; its answer check does not matter here.
  const spec = key === 'bare' ? bareProcessSpec() : postGraphileSpec('', []);
  return {
    server: baseline.server,
    result: { ...owner, label: spec.label },
    name,
    short: BESIDE_NAME[key],
    label: `${spec.scenarioLabel}${suffix}`,
    window: (warmupSec, durationSec) => readLoad(load, round, { url: baseline.url, method: spec.method, headers: spec.headers, body: spec.body }, { warmupSec, durationSec }),
  };
}

/**
 * Measures one round's scenario (or two, (c) and (d)) of a Fieldgate server in turn with the
 * baseline beside it, and stores each result where `store` says.
 */
async function inTurn(round: RoundId, durationSec: number, parts: { arm: InterleavedArm | undefined; store(result: ScenarioResult): void }[]): Promise<void> {
  const present = parts.filter((part): part is { arm: InterleavedArm; store(result: ScenarioResult): void } => part.arm !== undefined);
  if (present.length === 0) return;
  const measured = await measureInterleaved(
    present.map((part) => part.arm),
    warmupFor(round),
    durationSec,
  );
  present.forEach((part, index) => part.store(measured[index]!));
}

/** Where a baseline measured beside `owner` in `round` is kept. */
const besideStore = (owner: ServerResult, key: keyof Beside, round: RoundId) => (result: ScenarioResult) => {
  const perRound: PerRound = ((owner.beside ??= {})[BESIDE_RESULT[key]] ??= {});
  perRound[round] = result;
};

/**
 * The undici and cold rounds of one server (Fieldgate or oidc-provider), on a process started
 * fresh for them: flows, then the reads of the targets, (c) and (d), then (f). On Fieldgate each
 * is measured in turn with its baseline started fresh beside it (`beside`). No probes: the node
 * round checked the same answers, and in the cold round a probe would be a warm-up.
 */
async function benchLaterRounds(
  server: Child,
  load: Child,
  result: ServerResult,
  target: OAuthTarget | undefined,
  baseUrl: string,
  productId: number,
  accessToken: string,
  beside: Beside = {},
): Promise<void> {
  result.rounds ??= {};
  const slug = result.label.replace(/\W+/g, '-').toLowerCase();
  for (const round of laterRounds()) {
    const outcome: RoundResult = { read: {}, oauth: {} };
    result.rounds[round] = outcome;
    if (wanted('flows')) {
      if (target) {
        await inTurn(round, timing.oauthSec, [
          { arm: flowArm(server, result, load, round, target, `${slug}-${round}-flows`), store: (measured) => (outcome.oauth.flows = measured) },
          { arm: besideArm('peer', beside, load, round, result), store: besideStore(result, 'peer', round) },
        ]);
      } else {
        outcome.oauth.flows = unavailable(`${result.label} · flows · ${ROUND_LABEL[round]}`, 'no browser session');
      }
    }
    if (result.kind === 'fieldgate') {
      const scenarios = readScenarios(productId, accessToken);
      const arm = (id: 'c' | 'd' | 'f') => (wanted(id) ? readArm(server, result, load, round, scenarios.find((each) => each.id === id)!, baseUrl, `${slug}-${round}-read-${id}`) : undefined);
      await inTurn(round, timing.readSec, [
        { arm: arm('c'), store: (measured) => (outcome.read.c = measured) },
        { arm: arm('d'), store: (measured) => (outcome.read.d = measured) },
        { arm: besideArm('bare', beside, load, round, result), store: besideStore(result, 'bare', round) },
        { arm: besideArm('postgres', beside, load, round, result), store: besideStore(result, 'postgres', round) },
      ]);
      if (wanted('f')) {
        await inTurn(round, timing.readSec, [
          { arm: arm('f'), store: (measured) => (outcome.read.f = measured) },
          { arm: besideArm('postgraphile', beside, load, round, result), store: besideStore(result, 'postgraphile', round) },
        ]);
      }
    }
    // Refresh chains and introspection through undici too, after the warm-up (not in the cold round).
    if (round === 'undici' && target) await benchOAuth(server, load, result, target, result.kind === 'peer', ['refresh', 'introspect'], 'undici', outcome.oauth);
  }
}

/** Code flows of a server as one side of `measureInterleaved`, in a round's client stack. */
function flowArm(server: Child, result: ServerResult, load: Child, round: RoundId, target: OAuthTarget, name: string, sql?: () => Promise<SqlCount | undefined>): InterleavedArm {
  return {
    server,
    result,
    name,
    short: result.kind === 'fieldgate' ? 'Fieldgate' : result.label,
    label: round === 'node' ? OAUTH_LABELS.flows : `${OAUTH_LABELS.flows} · ${ROUND_LABEL[round]}`,
    ...(sql ? { sql } : {}),
    window: (warmupSec, durationSec) =>
      load.call<Measurement>('flows', { target, client: round === 'node' ? 'node' : 'undici', options: { concurrency: timing.flowConcurrency, warmupSec, durationSec } }),
  };
}

/** A baseline server of its own process (the bare Express route, PostGraphile), started beside a Fieldgate server. */
interface BaselineSpec {
  label: string;
  entry: string;
  node?: string;
  env: Record<string, string | undefined>;
  scenarioLabel: string;
  path: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  /** Checks a probe's answer; undefined when right. */
  check(status: number, body: string): string | undefined;
}

function bareProcessSpec(): BaselineSpec {
  return {
    label: 'Express 5 · separate process',
    entry: 'bench/peer/bare-express.ts',
    env: {},
    scenarioLabel: 'bare Express 5 route, own process, fixed JSON',
    path: '/bare',
    method: 'GET',
    headers: {},
    check: (status, body) => (status === 200 && body.startsWith('{') ? undefined : `HTTP ${status}: ${body.slice(0, 100)}`),
  };
}

/** Node 24 for PostGraphile, installed from the npm registry into bench/.node24 (ignored by git) on first use. */
function node24(): string {
  const prefix = path.join(REPO_ROOT, 'bench', '.node24');
  const binary = path.join(prefix, 'node_modules', 'node', 'bin', 'node');
  if (!existsSync(binary)) {
    log('installing Node 24 for PostGraphile into bench/.node24');
    mkdirSync(prefix, { recursive: true });
    const installed = spawnSync('npm', ['install', '--no-save', '--no-audit', '--no-fund', '--prefix', prefix, 'node@24'], { cwd: REPO_ROOT, encoding: 'utf8' });
    if (installed.status !== 0 || !existsSync(binary)) throw new Error(`npm install node@24 failed: ${(installed.stderr ?? '').trim().split('\n').slice(-1)[0]}`);
  }
  return binary;
}

/**
 * PostGraphile v5 on the bench's PostgreSQL database; its answer, brought into Fieldgate's shape,
 * must equal Fieldgate's row for row. Runs under Node 24 (`node24()`, set when it is started).
 */
function postGraphileSpec(databaseUrl: string, fieldgateRows: NestedProduct[] | string): BaselineSpec {
  const expected = typeof fieldgateRows === 'string' ? undefined : JSON.stringify(fieldgateRows);
  return {
    label: 'PostGraphile v5 · PostgreSQL',
    entry: 'bench/peer/postgraphile.ts',
    env: { DATABASE_URL: databaseUrl, PEER_POOL_SIZE: String(poolSize) },
    scenarioLabel: '`POST /graphql` nested list in PostGraphile\'s inflection',
    path: '/graphql',
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ query: POSTGRAPHILE_NESTED_LIST_QUERY }),
    check: (status, body) => {
      if (status !== 200) return `HTTP ${status}: ${body.slice(0, 200)}`;
      const rows = nestedFromPostGraphile(body);
      if (typeof rows === 'string') return rows;
      const problem = checkNested(rows);
      if (problem) return problem;
      if (expected === undefined) return `Fieldgate's answer to compare with is missing (${String(fieldgateRows)})`;
      return JSON.stringify(rows) === expected ? undefined : `answer differs from Fieldgate's: ${JSON.stringify(rows).slice(0, 160)}`;
    },
  };
}

const afterLoad = (m: { afterLoadRssMiB?: number; settledRssMiB?: number }) =>
  m.afterLoadRssMiB === undefined ? '' : `, right after load ${m.afterLoadRssMiB.toFixed(0)} MiB, settled ${m.settledRssMiB?.toFixed(0)} MiB`;

/**
 * Traffic for the memory-after-benchmark reading of the real `fieldgate serve`: REST reads, the
 * nested GraphQL list and client-credentials token requests, with a service client registered
 * through the CLI beforehand (the server holds the PGlite directory while it runs).
 */
function serviceClient(env: Record<string, string | undefined>): { id: string; secret: string } {
  const created = spawnSync(process.execPath, ['bin/fieldgate.js', 'client', 'create', '--name', 'bench-memory', '--grant', 'client_credentials', '--scope', 'products:read', '--json'], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
  if (created.status !== 0) throw new Error(`client create failed: ${created.stderr.trim().split('\n').slice(-1)[0]}`);
  const client = JSON.parse(created.stdout) as { client_id: string; client_secret: string };
  return { id: client.client_id, secret: client.client_secret };
}

function memoryLoad(load: Child, client: { id: string; secret: string }): (url: string) => Promise<void> {
  const durationSec = quick ? 3 : 8;
  return async (url) => {
    const tokenRequest = { authorization: basicAuth(client.id, client.secret), 'content-type': 'application/x-www-form-urlencoded' };
    const tokenBody = formBody({ grant_type: 'client_credentials', scope: 'products:read' });
    const issued = await request(new URL('/token', url), { method: 'POST', headers: tokenRequest, body: tokenBody });
    if (issued.status !== 200) throw new Error(`client_credentials token: ${issued.status} ${issued.body.slice(0, 200)}`);
    const bearer = { authorization: `Bearer ${(JSON.parse(issued.body) as { access_token: string }).access_token}` };
    const common = { connections: timing.readConnections, warmupSec: 0, durationSec };
    log(`memory: ${durationSec} s each of REST reads, the nested GraphQL list and token requests at ${url}`);
    await load.call<Measurement>('http', { ...common, url: new URL('/products/1?fields=id,name', url).href, headers: bearer });
    await load.call<Measurement>('http', {
      ...common,
      url: new URL('/graphql', url).href,
      method: 'POST',
      headers: { ...bearer, 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ products(limit: 20) { id name seller { name } reviews { rating } } }' }),
    });
    await load.call<Measurement>('http', { ...common, url: new URL('/token', url).href, method: 'POST', headers: tokenRequest, body: tokenBody });
  };
}

/** Targets 6 and 7 on PGlite: `npm start` and `fieldgate serve`, each on a fresh and on an existing directory. */
async function benchStartupPglite(startup: StartupResults, load: Child): Promise<void> {
  const dirs = [mkdtempSync(path.join(os.tmpdir(), 'fieldgate-start-')), mkdtempSync(path.join(os.tmpdir(), 'fieldgate-start-'))];
  const envFor = async (dataDir: string) => {
    const port = await freePort();
    return { url: `http://127.0.0.1:${port}`, env: { PORT: String(port), HOST: '127.0.0.1', ISSUER: `http://127.0.0.1:${port}`, LOG_LEVEL: logLevel, DATABASE_URL: undefined, DATA_DIR: dataDir } };
  };
  const logFile = path.join(runDir, 'startup.log');
  const idleMs = quick ? 1000 : 2000;
  try {
    // `npm start` builds first (bin/start.js, dist/ absent); its first start also fills dirs[0].
    log('start-up: npm start on a fresh PGlite directory (builds first)');
    startup.npmStartFresh = await measureStart({ argv: ['npm', 'start'], ...(await envFor(dirs[0]!)), logFile, memory: false, idleMs });
    if (!existsSync(path.join(REPO_ROOT, 'dist', 'cli.js'))) throw new Error('dist/cli.js is missing after npm start');
    const serve = [process.execPath, 'bin/fieldgate.js', 'serve'];
    log('start-up: fieldgate serve on a fresh PGlite directory, then again on it');
    startup.pgliteFirst = await measureStart({ argv: serve, ...(await envFor(dirs[1]!)), logFile, memory: true, idleMs });
    const restart = await envFor(dirs[1]!);
    const client = serviceClient(restart.env);
    startup.pgliteRestart = await measureStart({ argv: serve, ...restart, logFile, memory: true, idleMs, load: memoryLoad(load, client) });
    for (let i = 0; i < (quick ? 1 : 2); i++) {
      log('start-up: npm start on an existing PGlite directory');
      startup.npmStartExisting.push(await measureStart({ argv: ['npm', 'start'], ...(await envFor(dirs[0]!)), logFile, memory: false, idleMs }));
    }
  } catch (error) {
    startup.skipped = error instanceof Error ? error.message : String(error);
    log(`start-up: ${startup.skipped}`);
  } finally {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
  for (const m of [startup.npmStartFresh, startup.pgliteFirst, startup.pgliteRestart, ...startup.npmStartExisting]) {
    if (m) log(`start-up: ${m.command}: ${m.error ?? `ready in ${m.readyMs?.toFixed(0)} ms${m.peakRssMiB ? `, peak ${m.peakRssMiB.toFixed(0)} MiB, idle ${m.idleRssMiB?.toFixed(0)} MiB${afterLoad(m)}` : ''}`}`);
  }
}

/** Targets 6 and 7 on PostgreSQL: `fieldgate serve` memory and CLI wall times, on the bench's database. */
async function benchStartupPostgres(startup: StartupResults, databaseUrl: string, load: Child): Promise<void> {
  if (!existsSync(path.join(REPO_ROOT, 'dist', 'cli.js'))) {
    log('start-up: building dist/ for the PostgreSQL measurements');
    spawnSync('npm', ['run', 'build'], { cwd: REPO_ROOT, stdio: 'ignore' });
  }
  const port = await freePort();
  const env = { PORT: String(port), HOST: '127.0.0.1', ISSUER: `http://127.0.0.1:${port}`, LOG_LEVEL: logLevel, DATABASE_URL: databaseUrl, DATA_DIR: undefined };
  startup.postgres = await measureStart({
    argv: [process.execPath, 'bin/fieldgate.js', 'serve'],
    env,
    url: `http://127.0.0.1:${port}`,
    logFile: path.join(runDir, 'startup.log'),
    memory: true,
    idleMs: quick ? 1000 : 2000,
    load: memoryLoad(load, serviceClient(env)),
  });
  const times = quick ? 2 : 3;
  for (const args of [['--help'], ['client', 'list'], ['user', 'list']]) {
    startup.cli.push(await measureCli([process.execPath, 'bin/fieldgate.js', ...args], { DATABASE_URL: databaseUrl, DATA_DIR: undefined }, times));
  }
  const m = startup.postgres;
  log(`start-up: PostgreSQL serve: ${m.error ?? `ready in ${m.readyMs?.toFixed(0)} ms, peak ${m.peakRssMiB?.toFixed(0)} MiB, idle ${m.idleRssMiB?.toFixed(0)} MiB${afterLoad(m)}`}`);
  for (const cli of startup.cli) log(`start-up: ${cli.command}: ${cli.error ?? cli.wallMs.map((ms) => `${ms.toFixed(0)} ms`).join(', ')}`);
}

async function benchFieldgate(database: 'pglite' | 'postgres', load: Child, results: RunResults): Promise<ServerResult> {
  const label = `Fieldgate · ${database === 'pglite' ? 'PGlite' : 'PostgreSQL'}`;
  const result: ServerResult = { label, kind: 'fieldgate', database, memory: {}, read: {}, oauth: {}, setup: [], profiles: [] };
  const storage = await createBenchStorage(database);
  if ('skipped' in storage) {
    result.skipped = storage.skipped;
    log(`${label}: skipped — ${storage.skipped}`);
    return result;
  }
  if (storage.serverVersion) results.postgresVersion = storage.serverVersion;
  const { env, drop: cleanup } = storage;

  let server: Child | undefined;
  let beside: Beside = {};
  try {
    log(`${label}: setting up`);
    const port = await freePort();
    const setup = Child.start({ entry: 'bench/server.ts', env: serverEnv(port, { ...env, BENCH_PHASE: 'setup' }) });
    const credentials = (await setup.ready) as unknown as Omit<ServerInfo, 'url'> & { userId: number };
    await setup.stop();
    if (database === 'postgres' && wanted('startup') && results.startup) await benchStartupPostgres(results.startup, env.DATABASE_URL!, load);
    log(`${label}: starting`);
    const started = await startServer('bench/server.ts', label, port, env);
    server = started.server;
    const info: ServerInfo = { ...credentials, url: started.url };
    result.memory.idle = await rssMiB(server);

    const base = oauthTarget(label, info);
    let target: OAuthTarget | undefined;
    let accessToken: string;
    let oauthProblem: string | undefined;
    try {
      const signedIn = await signInAndConsent(base, info.username, info.password);
      target = { ...base, cookie: signedIn.cookie };
      accessToken = signedIn.tokens.access_token;
      result.setup.push(`signed in and consented through ${signedIn.steps.join(', ')}`);
      result.setup.push('the read benchmark uses the access token from that flow');
    } catch (error) {
      oauthProblem = error instanceof Error ? error.message.split('\n')[0]! : String(error);
      log(`${label}: sign-in failed — ${oauthProblem}`);
      accessToken = await server.call<string>('mint-token', { userId: credentials.userId, clientId: credentials.clientId });
      result.setup.push(`sign-in through the pages failed (${oauthProblem})`);
      result.setup.push('the read benchmark uses an access token minted in-process by `runtime.accessTokens.issue`');
    }

    // Fieldgate's answer to the nested list, which PostGraphile's must equal.
    const nested = readScenarios(info.productId!, accessToken).find((scenario) => scenario.id === 'f')!;
    const nestedAnswer = await request(new URL(nested.path, info.url), { method: 'POST', headers: nested.headers, body: nested.body! });
    const fieldgateRows = nestedAnswer.status === 200 ? nestedFromFieldgate(nestedAnswer.body) : `HTTP ${nestedAnswer.status}`;
    const besideWanted = {
      bare: wanted('bare') && (wanted('c') || wanted('d')),
      peer: only.has('peer') && wanted('flows') && target !== undefined,
      postgraphile: database === 'postgres' && wanted('postgraphile') && wanted('f') ? { databaseUrl: env.DATABASE_URL!, fieldgateRows } : undefined,
      postgres: database === 'pglite' && only.has('postgres') && wanted('c'),
    };

    // Each read is probed (its answer checked) and its statements counted, then measured: (c) and
    // (d) in turn with each other and the bare Express process, (f) in turn with PostGraphile.
    const probed = (scenario: ReadScenario | undefined): InterleavedArm | undefined => {
      if (!scenario) return undefined;
      const url = new URL(scenario.path, info.url).href;
      const send = () => request(url, { method: scenario.method, headers: scenario.headers, ...(scenario.body ? { body: scenario.body } : {}) });
      return readArm(server!, result, load, 'node', scenario, info.url, `${database}-read-${scenario.id}`, async () => {
        const probe = await send();
        const problem = scenario.check(probe.status, probe.body);
        if (problem) throw new Error(problem);
        return countSql(started.server, send);
      });
    };
    const scenarios = readScenarios(info.productId!, accessToken).filter((scenario) => wanted(scenario.id) && inRound('node'));
    const pick = (id: ReadScenario['id']) => scenarios.find((each) => each.id === id);
    beside = inRound('node') ? await startBeside(result, ['node'], besideWanted, true) : {};
    for (const scenario of scenarios) {
      if (scenario.id === 'd' && pick('c')) continue;
      const parts =
        scenario.id === 'c' || scenario.id === 'd'
          ? [
              { arm: probed(pick('c')), store: (measured: ScenarioResult) => (result.read.c = measured) },
              { arm: probed(pick('d')), store: (measured: ScenarioResult) => (result.read.d = measured) },
              { arm: besideArm('bare', beside, load, 'node', result), store: besideStore(result, 'bare', 'node') },
              { arm: besideArm('postgres', beside, load, 'node', result), store: besideStore(result, 'postgres', 'node') },
            ]
          : scenario.id === 'f'
            ? [
                { arm: probed(scenario), store: (measured: ScenarioResult) => (result.read.f = measured) },
                { arm: besideArm('postgraphile', beside, load, 'node', result), store: besideStore(result, 'postgraphile', 'node') },
              ]
            : [{ arm: probed(scenario), store: (measured: ScenarioResult) => (result.read[scenario.id] = measured) }];
      await inTurn('node', timing.readSec, parts);
    }
    const direct = readScenarios(info.productId!, accessToken).find((scenario) => scenario.id === 'b')!;
    if (wanted('b') && inRound('node') && result.read.b?.measurement) {
      result.bAgain = await measure(server, result, `${database}-read-b-again`, `${direct.label}, again after (f)`, async () => ({
        run: () =>
          load.call<Measurement>('http', {
            url: new URL(direct.path, info.url).href,
            method: direct.method,
            headers: direct.headers,
            connections: timing.readConnections,
            warmupSec: timing.warmupSec,
            durationSec: timing.readSec,
          }),
      }));
      const first = result.read.b.measurement.perSec;
      const again = result.bAgain.measurement?.perSec;
      if (again !== undefined) {
        const drift = Math.abs(first - again) / ((first + again) / 2);
        if (drift > 0.15) {
          results.notes.push(
            `${label}: the direct baseline (b) measured ${first.toFixed(0)} req/s before (c)–(f) and ${again.toFixed(0)} req/s after — ${(drift * 100).toFixed(0)}% apart, so the machine's load changed during the run; the ratios use the mean of both`,
          );
        }
      }
    }
    await stopBeside({ ...beside, peer: undefined });
    result.memory.afterRead = await rssMiB(server);

    if (inRound('node')) {
      if (target) await benchOAuth(server, load, result, target, false, OAUTH_GROUPS, 'node', result.oauth, { ...(beside.peer ? { peer: beside.peer } : {}) });
      else markOAuthUnavailable(result, `no browser session: ${oauthProblem}`);
      result.memory.afterOAuth = await rssMiB(server);
    }
    await stopBeside(beside);

    if (laterRounds().length) {
      await server.stop();
      log(`${label}: starting fresh for ${laterRounds().join(', ')}`);
      const fresh = await startServer('bench/server.ts', `${label} fresh`, port, env);
      server = fresh.server;
      // Signing in again, as on the fresh oidc-provider: a handful of page requests.
      let freshTarget: OAuthTarget | undefined;
      if (target) {
        const signedIn = await signInAndConsent(base, info.username, info.password);
        freshTarget = { ...base, cookie: signedIn.cookie };
      }
      // The baselines beside it start afresh too, for the cold round.
      beside = await startBeside(result, laterRounds(), { ...besideWanted, peer: besideWanted.peer && freshTarget !== undefined }, !inRound('node'));
      await benchLaterRounds(server, load, result, freshTarget, fresh.url, info.productId!, accessToken, beside);
      await stopBeside(beside);
      result.memory.afterRounds = await rssMiB(server);
    }
  } catch (error) {
    result.skipped = `failed: ${error instanceof Error ? error.message : String(error)}`;
    log(`${label}: ${result.skipped}`);
  } finally {
    await stopBeside(beside);
    await server?.stop();
    await cleanup().catch((error: unknown) => log(`${label}: cleanup failed — ${String(error)}`));
  }
  return result;
}

/**
 * oidc-provider keeps every grant, code and token in its process's heap (the in-memory
 * adapter), and it slows down as they pile up: after the flow benchmark its refresh rate was
 * about 40% lower than in a fresh process. So each OAuth scenario gets a fresh peer process
 * (signed in again); Fieldgate keeps this state in its database and runs them in one process.
 */
async function benchPeer(load: Child): Promise<ServerResult> {
  const label = 'oidc-provider · memory';
  const result: ServerResult = { label, kind: 'peer', memory: {}, read: {}, oauth: {}, setup: [], profiles: [] };
  for (const group of inRound('node') ? OAUTH_GROUPS.filter(wanted) : []) {
    let server: Child | undefined;
    try {
      log(`${label}: starting for ${group}`);
      const started = await startServer('bench/peer/oidc-provider.ts', label, await freePort(), {});
      server = started.server;
      const info = (await server.ready) as unknown as ServerInfo;
      result.memory.idle ??= await rssMiB(server);
      const base = oauthTarget(label, info);
      const signedIn = await signInAndConsent(base, info.username, info.password);
      if (result.setup.length === 0) {
        result.setup.push(`signed in and consented through ${signedIn.steps.join(', ')}`);
        result.setup.push('a fresh process (signed in again) for each of flows, refresh and introspection');
      }
      await benchOAuth(server, load, result, { ...base, cookie: signedIn.cookie }, true, [group]);
      // Resident memory after the flow benchmark, the one that leaves the most behind.
      if (group === 'flows' || result.memory.afterOAuth === undefined) result.memory.afterOAuth = await rssMiB(server);
    } catch (error) {
      result.skipped = `failed: ${error instanceof Error ? error.message : String(error)}`;
      log(`${label}: ${result.skipped}`);
      break;
    } finally {
      await server?.stop();
    }
  }
  if (laterRounds().length && wanted('flows') && !result.skipped) {
    // As the external harness runs it: one process, kept running from the cold round into the undici round.
    let server: Child | undefined;
    try {
      log(`${label}: starting fresh for ${laterRounds().join(', ')}`);
      const started = await startServer('bench/peer/oidc-provider.ts', `${label} fresh`, await freePort(), {});
      server = started.server;
      const info = (await server.ready) as unknown as ServerInfo;
      result.memory.idle ??= await rssMiB(server);
      const base = oauthTarget(label, info);
      const signedIn = await signInAndConsent(base, info.username, info.password);
      await benchLaterRounds(server, load, result, { ...base, cookie: signedIn.cookie }, info.url, 0, '');
      result.memory.afterRounds = await rssMiB(server);
    } catch (error) {
      result.skipped = `failed: ${error instanceof Error ? error.message : String(error)}`;
      log(`${label}: ${result.skipped}`);
    } finally {
      await server?.stop();
    }
  }
  return result;
}

async function main(): Promise<void> {
  const results: RunResults = {
    startedAt: startedAt.toISOString(),
    finishedAt: '',
    elapsedSec: 0,
    quick,
    experiments,
    command,
    machine: machineInfo(),
    timing,
    logLevel,
    poolSize,
    servers: [],
    rounds,
    notes: [],
  };
  log(`${command}: results in ${path.relative(REPO_ROOT, runDir)}; load average ${results.machine.loadAverageBefore.map((v) => v.toFixed(2)).join(' ')}`);
  const load = Child.start({ entry: 'bench/load-generator.ts', env: { NODE_ENV: 'production' } });
  try {
    await load.ready;
    if (wanted('startup')) {
      results.startup = { npmStartExisting: [], cli: [] };
      if (only.has('pglite')) await benchStartupPglite(results.startup, load);
    }
    if (only.has('postgres')) results.servers.push(await benchFieldgate('postgres', load, results));
    if (only.has('pglite')) results.servers.push(await benchFieldgate('pglite', load, results));
    if (only.has('peer')) results.servers.push(await benchPeer(load));
  } finally {
    await load.stop();
  }
  for (const server of results.servers) if (server.skipped) results.notes.push(`${server.label} skipped: ${server.skipped.split('\n')[0]}`);
  if (experiments.length) {
    results.notes.push(`experimental run (${experiments.join(', ')}): Fieldgate was changed inside bench/server.ts as described there; not the shipped code`);
  }
  if (profiling) {
    results.notes.push(`profiled run: CPU profiles in ${path.relative(REPO_ROOT, path.join(runDir, 'profiles'))}; the profiler slows the servers, so these numbers are not comparable with unprofiled runs`);
  }
  const finishedAt = new Date();
  results.finishedAt = finishedAt.toISOString();
  results.elapsedSec = (finishedAt.getTime() - startedAt.getTime()) / 1000;
  results.machine.loadAverageAfter = os.loadavg();

  writeFileSync(path.join(runDir, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
  if (profiling) {
    const summaries = results.servers.flatMap((server) =>
      [
        ...Object.values(server.read),
        server.bAgain,
        ...Object.values(server.oauth),
        ...Object.values(server.rounds ?? {}).flatMap((round) => [...Object.values(round.read), ...Object.values(round.oauth)]),
      ]
        .filter((scenario) => scenario?.profile)
        .map((scenario) =>
          formatSummary(
            `${server.label} · ${scenario!.label}`,
            summarize(JSON.parse(readFileSync(path.join(REPO_ROOT, scenario!.profile!), 'utf8')) as CpuProfile),
            scenario!.measurement?.totalCompleted,
          ),
        ),
    );
    writeFileSync(path.join(runDir, 'profiles', 'SUMMARY.md'), `${summaries.join('\n')}\n`);
    log(`profile summaries: ${path.relative(REPO_ROOT, path.join(runDir, 'profiles', 'SUMMARY.md'))}`);
  }
  writeReport(results, out, svgOut);
  log(`wrote ${path.relative(REPO_ROOT, out)} and ${path.relative(REPO_ROOT, svgOut)} in ${results.elapsedSec.toFixed(0)} s`);
}

await main();
