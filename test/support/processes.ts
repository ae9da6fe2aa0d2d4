/**
 * Runs the real `fieldgate` executable: one-shot CLI commands, and servers started as
 * separate processes (for restart, kill -9 and multi-instance tests).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

export const FIELDGATE_BIN = fileURLToPath(new URL('../../bin/fieldgate-dev.js', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment for a child: ours minus anything that would point it elsewhere. */
export function childEnv(env: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const base = { ...process.env };
  for (const key of ['DATABASE_URL', 'DATA_DIR', 'PORT', 'ISSUER', 'DEMO', 'LOG_LEVEL']) delete base[key];
  return { ...base, ...env };
}

export function runCli(args: string[], env: Record<string, string | undefined>, input?: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [FIELDGATE_BIN, ...args], { env: childEnv(env), stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input ?? '');
  });
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  port: number;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code once the process has exited. */
  exited: Promise<number | null>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `fieldgate serve` and resolves once /readyz answers 200. */
export async function startServerProcess(env: Record<string, string | undefined>, timeoutMs = 60_000): Promise<ServerProcess> {
  const port = env.PORT ? Number(env.PORT) : await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, [FIELDGATE_BIN, 'serve'], {
    env: childEnv({ ISSUER: url, LOG_LEVEL: 'info', ...env, PORT: String(port) }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (chunk) => (out += chunk));
  child.stderr!.on('data', (chunk) => (err += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let running = true;
  void exited.then(() => (running = false));

  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (!running) throw new Error(`fieldgate serve exited early:\n${out}\n${err}`);
    // Only once the child says it listens: freePort's port may meanwhile have been taken by another suite's server,
    // whose /readyz would answer for a child that is still starting (or about to fail to bind).
    if (err.includes('Fieldgate is listening on')) {
      try {
        const res = await fetch(`${url}/readyz`);
        if (res.ok) break;
      } catch {
        // not answering yet
      }
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`fieldgate serve did not become ready:\n${out}\n${err}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    child,
    url,
    port,
    stdout: () => out,
    stderr: () => err,
    exited,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (running) child.kill(signal);
      return exited;
    },
  };
}
