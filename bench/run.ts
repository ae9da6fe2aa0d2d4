/**
 * `npm run bench [-- --quick] [--only=postgres,pglite,peer] [--scenarios=a,b,c,d,e,flows,refresh,introspect]
 *                  [--profile] [--experiment=NAME] [--out=docs/BENCHMARKS.md]`
 *
 * Measures, in one run on one machine: the read path of Fieldgate against two baselines served
 * by the same process on the same database, and the OAuth code flow, refresh grant and
 * introspection against panva's oidc-provider; then writes docs/BENCHMARKS.md and
 * docs/benchmarks.svg. Raw results, server logs and profiles go to bench/results/<timestamp>/.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Child, REPO_ROOT } from './lib/child.js';
import { signInAndConsent } from './lib/browser.js';
import type { Measurement } from './lib/drivers.js';
import { basicAuth, formBody, request } from './lib/http.js';
import { machineInfo } from './lib/machine.js';
import { introspect, refresh, runFlow, type OAuthTarget } from './lib/oauth-client.js';
import { freePort } from '../test/support/processes.js';
import { createBenchDatabase } from './lib/postgres.js';
import { writeReport } from './lib/report.js';
import { formatSummary, summarize, type CpuProfile } from './lib/profile.js';
import type { RunResults, ScenarioResult, ServerResult, Timing } from './lib/results.js';
import { readScenarios } from './lib/scenarios.js';

const argv = process.argv.slice(2);
const option = (name: string) => argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
const quick = argv.includes('--quick');
const profiling = argv.includes('--profile');
const only = new Set((option('only') ?? 'postgres,pglite,peer').split(',').map((part) => part.trim()));
/** Scenario filter for investigations: a–e, flows, refresh, introspect. Everything by default. */
const scenarioFilter = option('scenarios')?.split(',').map((part) => part.trim());
const wanted = (id: string) => !scenarioFilter || scenarioFilter.includes(id);
/** What-if changes applied inside bench/server.ts only (see there), defined there. */
const experiments = option('experiment')?.split(',').map((part) => part.trim()).filter(Boolean) ?? [];

const logLevel = process.env.BENCH_LOG_LEVEL?.trim() || 'info';

const timing: Timing = quick
  ? { warmupSec: 1, readSec: 2, oauthSec: 2, readConnections: 32, flowConcurrency: 16 }
  : { warmupSec: 3, readSec: 10, oauthSec: 10, readConnections: 32, flowConcurrency: 16 };

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
): Promise<void> {
  const run = (group: OAuthGroup) => groups.includes(group) && wanted(group);
  const loop = { concurrency: timing.flowConcurrency, warmupSec: timing.warmupSec, durationSec: timing.oauthSec };
  const slug = result.label.replace(/\W+/g, '-').toLowerCase();
  // Statements per operation, counted on single probes before measuring (Fieldgate only).
  const probeSql = async (operation: () => Promise<unknown>): Promise<SqlCount | undefined> => {
    if (peer) {
      await operation();
      return undefined;
    }
    return countSql(server, operation);
  };

  if (run('flows')) {
    result.oauth.flows = await measure(server, result, `${slug}-flows`, OAUTH_LABELS.flows, async () => {
      await runFlow(target);
      return { sql: await probeSql(() => runFlow(target)), run: () => load.call<Measurement>('flows', { target, options: loop }) };
    });
  }
  if (run('refresh')) {
    result.oauth.refresh = await measure(server, result, `${slug}-refresh`, OAUTH_LABELS.refresh, async () => {
      const first = await runFlow(target);
      const sql = await probeSql(() => refresh(target, first.refresh_token!));
      const refreshTokens = await load.call<string[]>('mint-refresh-tokens', { target, count: timing.flowConcurrency });
      return { sql, run: () => load.call<Measurement>('refreshes', { target, refreshTokens, options: loop }) };
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
      });
    return { sql, run };
  };
  if (!run('introspect')) return;
  result.oauth.introspectRefresh = await measure(server, result, `${slug}-introspect-refresh`, OAUTH_LABELS.introspectRefresh, () => introspection('refresh'));
  result.oauth.introspectAccess = peer
    ? { label: OAUTH_LABELS.introspectAccess, unavailable: 'oidc-provider does not introspect JWT access tokens' }
    : await measure(server, result, `${slug}-introspect-access`, OAUTH_LABELS.introspectAccess, () => introspection('access'));
}

function markOAuthUnavailable(result: ServerResult, reason: string): void {
  for (const [key, label] of Object.entries(OAUTH_LABELS)) {
    result.oauth[key as keyof typeof OAUTH_LABELS] = unavailable(`${result.label} · ${label}`, reason);
  }
}

interface ServerInfo {
  url: string;
  username: string;
  password: string;
  clientId: string;
  clientSecret: string;
  redirectUri: string;
  scope: string;
  resource?: string;
  productId?: number;
}

function oauthTarget(label: string, info: ServerInfo): Omit<OAuthTarget, 'cookie'> {
  return {
    label,
    baseUrl: info.url,
    authorizePath: '/authorize',
    tokenPath: '/token',
    introspectPath: '/introspect',
    clientId: info.clientId,
    clientSecret: info.clientSecret,
    redirectUri: info.redirectUri,
    scope: info.scope,
    ...(info.resource ? { resource: info.resource } : {}),
  };
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

async function startServer(entry: string, label: string, port: number, env: Record<string, string | undefined>): Promise<{ server: Child; url: string }> {
  const slug = label.replace(/\W+/g, '-').toLowerCase();
  const server = Child.start({ entry, env: serverEnv(port, env), stdoutFile: path.join(runDir, `${slug}.log`) });
  const ready = await server.ready;
  // Let start-up settle before the idle measurement (a quick run has no time to spare).
  if (!quick) await sleep(1000);
  return { server, url: String(ready.url) };
}

async function benchFieldgate(database: 'pglite' | 'postgres', load: Child, results: RunResults): Promise<ServerResult> {
  const label = `Fieldgate · ${database === 'pglite' ? 'PGlite' : 'PostgreSQL'}`;
  const result: ServerResult = { label, kind: 'fieldgate', database, memory: {}, read: {}, oauth: {}, setup: [], profiles: [] };
  let env: Record<string, string | undefined>;
  let cleanup: () => Promise<void>;
  if (database === 'postgres') {
    const created = await createBenchDatabase();
    if ('skipped' in created) {
      result.skipped = created.skipped;
      log(`${label}: skipped — ${created.skipped}`);
      return result;
    }
    results.postgresVersion = created.serverVersion;
    env = { DATABASE_URL: created.url, DATA_DIR: undefined };
    cleanup = created.drop;
  } else {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'fieldgate-bench-'));
    env = { DATABASE_URL: undefined, DATA_DIR: dataDir };
    cleanup = async () => rmSync(dataDir, { recursive: true, force: true });
  }

  let server: Child | undefined;
  try {
    log(`${label}: setting up`);
    const port = await freePort();
    const setup = Child.start({ entry: 'bench/server.ts', env: serverEnv(port, { ...env, BENCH_PHASE: 'setup' }) });
    const credentials = (await setup.ready) as unknown as Omit<ServerInfo, 'url'> & { userId: number };
    await setup.stop();
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

    for (const scenario of readScenarios(info.productId!, accessToken)) {
      if (!wanted(scenario.id)) continue;
      const url = new URL(scenario.path, info.url).href;
      const probe = await request(url, { method: scenario.method, headers: scenario.headers, ...(scenario.body ? { body: scenario.body } : {}) });
      const problem = scenario.check(probe.status, probe.body);
      if (problem) {
        result.read[scenario.id] = unavailable(`${label} · ${scenario.label}`, problem);
        continue;
      }
      result.read[scenario.id] = await measure(server, result, `${database}-read-${scenario.id}`, scenario.label, async () => ({
        sql: await countSql(started.server, () => request(url, { method: scenario.method, headers: scenario.headers, ...(scenario.body ? { body: scenario.body } : {}) })),
        run: () =>
          load.call<Measurement>('http', {
            url,
            method: scenario.method,
            headers: scenario.headers,
            body: scenario.body,
            connections: timing.readConnections,
            warmupSec: timing.warmupSec,
            durationSec: timing.readSec,
          }),
      }));
    }
    const direct = readScenarios(info.productId!, accessToken).find((scenario) => scenario.id === 'b')!;
    if (wanted('b') && result.read.b?.measurement) {
      result.bAgain = await measure(server, result, `${database}-read-b-again`, `${direct.label}, again after (e)`, async () => ({
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
            `${label}: the direct baseline (b) measured ${first.toFixed(0)} req/s before (c)–(e) and ${again.toFixed(0)} req/s after — ${(drift * 100).toFixed(0)}% apart, so the machine's load changed during the run; the ratios use the mean of both`,
          );
        }
      }
    }
    result.memory.afterRead = await rssMiB(server);

    if (target) await benchOAuth(server, load, result, target, false);
    else markOAuthUnavailable(result, `no browser session: ${oauthProblem}`);
    result.memory.afterOAuth = await rssMiB(server);
  } catch (error) {
    result.skipped = `failed: ${error instanceof Error ? error.message : String(error)}`;
    log(`${label}: ${result.skipped}`);
  } finally {
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
  for (const group of OAUTH_GROUPS.filter(wanted)) {
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
    servers: [],
    notes: [],
  };
  log(`${command}: results in ${path.relative(REPO_ROOT, runDir)}; load average ${results.machine.loadAverageBefore.map((v) => v.toFixed(2)).join(' ')}`);
  const load = Child.start({ entry: 'bench/load-generator.ts', env: { NODE_ENV: 'production' } });
  try {
    await load.ready;
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
      [...Object.values(server.read), server.bAgain, ...Object.values(server.oauth)]
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
