/**
 * Targets 6 and 7, measured on the real commands rather than on bench/server.ts: how long
 * `npm start` and `fieldgate serve` take until /healthz answers, how much memory the server
 * holds while starting (peak) and idle after start, and the wall time of CLI commands.
 * Resident memory comes from /proc/<pid>/status (VmHWM is the peak, VmRSS the current).
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { REPO_ROOT } from './child.js';
import { request } from './http.js';

export interface StartMeasurement {
  /** What was run, for the report. */
  command: string;
  /** From spawn until GET /healthz answered 200. */
  readyMs?: number;
  /** Peak resident memory of the server process up to ready (when it is the spawned process). */
  peakRssMiB?: number;
  /** Resident memory after `idleMs` idle after ready. */
  idleRssMiB?: number;
  error?: string;
}

export interface CliMeasurement {
  command: string;
  /** Wall time of each run, in order. */
  wallMs: number[];
  exitCode?: number | null;
  error?: string;
}

function procStatusMiB(pid: number, field: 'VmHWM' | 'VmRSS'): number | undefined {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

export interface StartOptions {
  /** The program and its arguments, e.g. ['npm', 'start'] or [node, 'bin/fieldgate.js', 'serve']. */
  argv: string[];
  env: Record<string, string | undefined>;
  /** Base URL the server will listen on. */
  url: string;
  logFile: string;
  /** Measure the spawned process's memory (only meaningful when it is the server itself). */
  memory: boolean;
  idleMs: number;
  timeoutMs?: number;
}

/** Starts a server command in its own process group, waits for /healthz, measures, stops it. */
export async function measureStart(options: StartOptions): Promise<StartMeasurement> {
  const command = options.argv.join(' ').replace(process.execPath, 'node');
  const out = openSync(options.logFile, 'a');
  const began = performance.now();
  const child = spawn(options.argv[0]!, options.argv.slice(1), {
    cwd: REPO_ROOT,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', out, out],
    detached: true,
  });
  closeSync(out);
  let exited: number | null | undefined;
  const exit = new Promise<void>((resolve) =>
    child.on('exit', (code) => {
      exited = code;
      resolve();
    }),
  );
  const result: StartMeasurement = { command };
  try {
    const deadline = began + (options.timeoutMs ?? 180_000);
    for (;;) {
      if (exited !== undefined) throw new Error(`exited with ${exited} before it answered /healthz (log: ${options.logFile})`);
      if (performance.now() > deadline) throw new Error(`no answer from /healthz within ${options.timeoutMs ?? 180_000} ms`);
      const ok = await request(new URL('/healthz', options.url), { timeoutMs: 1_000 }).then(
        (res) => res.status === 200,
        () => false,
      );
      if (ok) break;
      await sleep(20);
    }
    result.readyMs = performance.now() - began;
    if (options.memory) {
      result.peakRssMiB = procStatusMiB(child.pid!, 'VmHWM');
      await sleep(options.idleMs);
      result.idleRssMiB = procStatusMiB(child.pid!, 'VmRSS');
    }
  } catch (error) {
    result.error = error instanceof Error ? error.message : String(error);
  } finally {
    if (exited === undefined) {
      // The whole group: `npm start` runs the server as a grandchild.
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {}
      const killer = setTimeout(() => {
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {}
      }, 15_000);
      await exit;
      clearTimeout(killer);
    }
  }
  return result;
}

/** Runs a CLI command `times` times and records each wall time. */
export async function measureCli(argv: string[], env: Record<string, string | undefined>, times: number): Promise<CliMeasurement> {
  const result: CliMeasurement = { command: argv.join(' ').replace(process.execPath, 'node'), wallMs: [] };
  for (let i = 0; i < times; i++) {
    const began = performance.now();
    const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(argv[0]!, argv.slice(1), { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
      let text = '';
      child.stderr!.on('data', (chunk: Buffer) => (text = (text + chunk.toString('utf8')).slice(-2_000)));
      child.on('exit', (exitCode) => resolve({ code: exitCode, stderr: text }));
    });
    result.wallMs.push(performance.now() - began);
    result.exitCode = code;
    if (code !== 0) {
      result.error = `exit ${code}: ${stderr.trim().split('\n').slice(-1)[0] ?? ''}`;
      break;
    }
  }
  return result;
}

export function median(values: number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length / 2;
  return Number.isInteger(middle) ? (sorted[middle - 1]! + sorted[middle]!) / 2 : sorted[Math.floor(middle)];
}
