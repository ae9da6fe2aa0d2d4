/**
 * The load drivers, run inside the load process, in two client stacks:
 * - `node`: single requests through autocannon; chained requests (authorize → token, a chain
 *   of rotated refresh tokens) through a closed loop of `concurrency` async workers on a
 *   keep-alive node:http agent;
 * - `undici`: both through a closed loop on a keep-alive undici Agent.
 * Each warms up first (unless warm-up is 0, the cold round) and then counts only what
 * completes inside the measured window.
 */
import autocannon from 'autocannon';
import { performance } from 'node:perf_hooks';
import { createAgent, nodeSender, type Sender } from './http.js';
import { refresh, runFlow, type OAuthTarget } from './oauth-client.js';
import { createUndiciAgent, undiciSender } from './undici.js';

export type ClientStack = 'node' | 'undici';

export interface Measurement {
  /** Completed operations (requests or flows) per second in the measured window. */
  perSec: number;
  p50Ms: number;
  p99Ms: number;
  completed: number;
  /** Failed operations: transport errors, timeouts and non-2xx answers. */
  errors: number;
  firstError?: string;
  durationSec: number;
  concurrency: number;
  /** Operations completed including the warm-up (to divide the server's CPU time by). */
  totalCompleted: number;
}

/**
 * One measurement from the windows of a scenario measured in turn with others (bench/run.ts,
 * `measureInterleaved`): counts and durations add up; p50 is the mean of the windows' medians
 * weighted by their requests, p99 the worst window's (the windows' latencies are not kept).
 */
export function combineWindows(windows: Measurement[]): Measurement {
  if (windows.length === 0) throw new Error('no windows to combine');
  const completed = windows.reduce((sum, m) => sum + m.completed, 0);
  const durationSec = windows.reduce((sum, m) => sum + m.durationSec, 0);
  const firstError = windows.find((m) => m.firstError)?.firstError;
  return {
    perSec: completed / durationSec,
    p50Ms: completed > 0 ? windows.reduce((sum, m) => sum + (m.completed > 0 ? m.p50Ms * m.completed : 0), 0) / completed : Number.NaN,
    p99Ms: Math.max(...windows.map((m) => (m.completed > 0 ? m.p99Ms : 0))),
    completed,
    errors: windows.reduce((sum, m) => sum + m.errors, 0),
    ...(firstError ? { firstError } : {}),
    durationSec,
    concurrency: windows[0]!.concurrency,
    totalCompleted: windows.reduce((sum, m) => sum + m.totalCompleted, 0),
  };
}

export interface HttpScenario {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  connections: number;
  warmupSec: number;
  durationSec: number;
}

/** Single requests through either stack. */
export function runHttp(scenario: HttpScenario, client: ClientStack = 'node'): Promise<Measurement> {
  return client === 'undici' ? runUndici(scenario) : runAutocannon(scenario);
}

/** `connections` closed loops over one undici Agent; a non-2xx answer counts as failed. */
async function runUndici(scenario: HttpScenario): Promise<Measurement> {
  const agent = createUndiciAgent(scenario.connections);
  const send = undiciSender(agent);
  const options = { method: scenario.method ?? 'GET', headers: scenario.headers ?? {}, ...(scenario.body === undefined ? {} : { body: scenario.body }), timeoutMs: 10_000 };
  try {
    return await closedLoop({ concurrency: scenario.connections, warmupSec: scenario.warmupSec, durationSec: scenario.durationSec }, async () => {
      const res = await send(scenario.url, options);
      if (res.status < 200 || res.status >= 300) throw new Error(`HTTP ${res.status}: ${res.body.slice(0, 120)}`);
    });
  } finally {
    await agent.close();
  }
}

/** One keep-alive client of `connections` sockets in the given stack, and how to release it. */
export function createSender(client: ClientStack, connections: number): { send: Sender; close(): Promise<void> } {
  if (client === 'undici') {
    const agent = createUndiciAgent(connections);
    return { send: undiciSender(agent), close: () => agent.close() };
  }
  const agent = createAgent(connections);
  return { send: nodeSender(agent), close: async () => agent.destroy() };
}

export async function runAutocannon(scenario: HttpScenario): Promise<Measurement> {
  const options = {
    url: scenario.url,
    method: scenario.method ?? 'GET',
    headers: scenario.headers ?? {},
    connections: scenario.connections,
    pipelining: 1,
    timeout: 10,
    ...(scenario.body === undefined ? {} : { body: scenario.body }),
  };
  const warmup = scenario.warmupSec > 0 ? await autocannon({ ...options, duration: scenario.warmupSec }) : undefined;
  const result = await autocannon({ ...options, duration: scenario.durationSec });
  const failed = result.errors + result.timeouts + result.non2xx;
  return {
    perSec: result.requests.total / result.duration,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    completed: result.requests.total,
    errors: failed,
    ...(failed > 0 ? { firstError: `${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts` } : {}),
    durationSec: result.duration,
    concurrency: scenario.connections,
    totalCompleted: result.requests.total + (warmup?.requests.total ?? 0),
  };
}

export interface LoopOptions {
  concurrency: number;
  warmupSec: number;
  durationSec: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** Runs `operation(worker)` in `concurrency` closed loops; measures the window after warm-up. */
async function closedLoop(options: LoopOptions, operation: (worker: number) => Promise<void>): Promise<Measurement> {
  const start = performance.now();
  const windowStart = start + options.warmupSec * 1000;
  const windowEnd = windowStart + options.durationSec * 1000;
  const latencies: number[] = [];
  let errors = 0;
  let successes = 0;
  let firstError: string | undefined;

  const worker = async (index: number) => {
    while (performance.now() < windowEnd) {
      const began = performance.now();
      try {
        await operation(index);
        successes++;
        const ended = performance.now();
        if (ended >= windowStart && ended < windowEnd) latencies.push(ended - began);
      } catch (error) {
        errors++;
        firstError ??= error instanceof Error ? error.message : String(error);
        // A server that only fails is not worth measuring for the whole window.
        if (successes === 0 && errors >= 20) throw new Error(`every operation failed; first error: ${firstError}`);
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, (_, index) => worker(index)));
  latencies.sort((a, b) => a - b);
  return {
    perSec: latencies.length / options.durationSec,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    completed: latencies.length,
    errors,
    ...(firstError ? { firstError } : {}),
    durationSec: options.durationSec,
    concurrency: options.concurrency,
    totalCompleted: successes,
  };
}

/** Flows per second: authorize (session cookie, existing consent) → code → token. */
export async function runFlows(target: OAuthTarget, options: LoopOptions, client: ClientStack = 'node'): Promise<Measurement> {
  const { send, close } = createSender(client, options.concurrency);
  try {
    return await closedLoop(options, async () => {
      await runFlow(target, send);
    });
  } finally {
    await close();
  }
}

/**
 * Refresh-grant requests per second. Each worker owns one token family and always presents
 * the newest refresh token, as a well-behaved client under rotation does.
 */
export async function runRefreshes(target: OAuthTarget, refreshTokens: string[], options: LoopOptions, client: ClientStack = 'node'): Promise<Measurement> {
  if (refreshTokens.length < options.concurrency) throw new Error(`need ${options.concurrency} refresh tokens, got ${refreshTokens.length}`);
  const current = [...refreshTokens];
  const { send, close } = createSender(client, options.concurrency);
  try {
    return await closedLoop(options, async (worker) => {
      const tokens = await refresh(target, current[worker]!, send);
      if (tokens.refresh_token) current[worker] = tokens.refresh_token;
    });
  } finally {
    await close();
  }
}
