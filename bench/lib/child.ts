/**
 * Child processes of the benchmark (the servers and the load generator) run a TypeScript entry
 * through bin/run-ts.js and talk to the orchestrator over Node's IPC channel: the child sends
 * one `ready` event, then answers `{ id, method, params }` calls with `{ id, result | error }`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const RUN_TS = fileURLToPath(new URL('../../bin/run-ts.js', import.meta.url));

interface Reply {
  id?: number;
  event?: string;
  result?: unknown;
  error?: string;
  [key: string]: unknown;
}

export interface ChildOptions {
  /** Entry point relative to the repository root, e.g. `bench/server.ts`. */
  entry: string;
  env?: Record<string, string | undefined>;
  /** The node binary (default: the orchestrator's own), e.g. Node 24 for PostGraphile. */
  node?: string;
  /** Extra node flags, e.g. `--cpu-prof`. */
  execArgv?: string[];
  /** File that receives the child's stdout (server logs); discarded when absent. */
  stdoutFile?: string;
  readyTimeoutMs?: number;
}

export class Child {
  readonly process: ChildProcess;
  readonly exited: Promise<number | null>;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
  private stderrText = '';
  private running = true;

  private constructor(
    private readonly options: ChildOptions,
    readonly ready: Promise<Record<string, unknown>>,
    child: ChildProcess,
  ) {
    this.process = child;
    this.exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
    void this.exited.then(() => {
      this.running = false;
      for (const { reject } of this.pending.values()) reject(new Error(`${options.entry} exited\n${this.stderr()}`));
      this.pending.clear();
    });
  }

  static start(options: ChildOptions): Child {
    const stdoutFd = options.stdoutFile ? openSync(options.stdoutFile, 'a') : 'ignore';
    const child = spawn(options.node ?? process.execPath, [...(options.execArgv ?? []), RUN_TS, options.entry], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...options.env },
      stdio: ['ignore', stdoutFd, 'pipe', 'ipc'],
    });
    if (typeof stdoutFd === 'number') closeSync(stdoutFd);
    let onReady: (value: Record<string, unknown>) => void = () => {};
    let onFail: (error: Error) => void = () => {};
    const ready = new Promise<Record<string, unknown>>((resolve, reject) => {
      onReady = resolve;
      onFail = reject;
    });
    const handle = new Child(options, ready, child);
    child.stderr!.on('data', (chunk: Buffer) => {
      handle.stderrText = (handle.stderrText + chunk.toString('utf8')).slice(-20_000);
    });
    child.on('message', (message: Reply) => {
      if (message.event === 'ready') onReady(message);
      else if (message.event === 'failed') onFail(new Error(`${options.entry} failed to start: ${message.error}\n${handle.stderr()}`));
      else if (typeof message.id === 'number') {
        const waiter = handle.pending.get(message.id);
        handle.pending.delete(message.id);
        if (!waiter) return;
        if (message.error !== undefined) waiter.reject(new Error(message.error));
        else waiter.resolve(message.result);
      }
    });
    const timer = setTimeout(() => onFail(new Error(`${options.entry} was not ready within ${options.readyTimeoutMs ?? 90_000} ms\n${handle.stderr()}`)), options.readyTimeoutMs ?? 90_000);
    void ready.finally(() => clearTimeout(timer)).catch(() => {});
    void handle.exited.then((code) => onFail(new Error(`${options.entry} exited with ${code} before it was ready\n${handle.stderr()}${handle.logTail()}`)));
    return handle;
  }

  get pid(): number {
    return this.process.pid!;
  }

  stderr(): string {
    return this.stderrText;
  }

  logTail(): string {
    if (!this.options.stdoutFile) return '';
    try {
      return `\n--- last lines of ${this.options.stdoutFile}\n${readFileSync(this.options.stdoutFile, 'utf8').split('\n').slice(-20).join('\n')}`;
    } catch {
      return '';
    }
  }

  call<T>(method: string, params?: unknown): Promise<T> {
    if (!this.running) return Promise.reject(new Error(`${this.options.entry} is not running`));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.process.send({ id, method, params });
    });
  }

  /** Asks the child to shut down cleanly (so a CPU profile gets written), then forces it. */
  async stop(timeoutMs = 20_000): Promise<number | null> {
    if (!this.running) return this.exited;
    this.call('shutdown').catch(() => {});
    const timer = setTimeout(() => this.process.kill('SIGKILL'), timeoutMs);
    const code = await this.exited;
    clearTimeout(timer);
    return code;
  }
}

type Handler = (params: never) => unknown;

/** The child side: answers calls from the orchestrator. `shutdown` is always understood. */
export function serveCalls(handlers: Record<string, Handler>, shutdown: () => Promise<void>): void {
  process.on('message', async (message: { id: number; method: string; params?: unknown }) => {
    const reply = (body: Omit<Reply, 'id'>) => process.send?.({ id: message.id, ...body });
    if (message.method === 'shutdown') {
      try {
        await shutdown();
      } finally {
        process.exit(0);
      }
    }
    const handler = handlers[message.method];
    if (!handler) {
      reply({ error: `unknown method ${message.method}` });
      return;
    }
    try {
      reply({ result: await handler(message.params as never) });
    } catch (error) {
      reply({ error: error instanceof Error ? `${error.message}` : String(error) });
    }
  });
  // The orchestrator went away: do not linger.
  process.on('disconnect', () => {
    void shutdown().finally(() => process.exit(0));
  });
}

export function announceReady(details: Record<string, unknown>): void {
  process.send?.({ event: 'ready', ...details });
}

export function announceFailure(error: unknown): void {
  console.error(error);
  const message = { event: 'failed', error: error instanceof Error ? (error.stack ?? error.message) : String(error) };
  if (process.send) process.send(message, () => process.exit(1));
  else process.exit(1);
}
