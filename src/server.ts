/** Graceful shutdown: stop accepting, let in-flight requests finish (bounded), then close the database. */
import http from 'node:http';
import v8 from 'node:v8';
import type { AddressInfo } from 'node:net';
import { createApp } from './app.js';
import type { Runtime } from './runtime.js';
import { answerClientErrors } from './http/client-error.js';
import { janitorPolicy, sweep, sweptRows } from './oauth/janitor.js';
import { startMetricsServer } from './http/metrics.js';

export const SHUTDOWN_TIMEOUT_MS = 10_000;

export interface RunningServer {
  url: string;
  port: number;
  metricsPort?: number;
  server: http.Server;
  close(timeoutMs?: number): Promise<void>;
}

/** Bounds for slow or idle clients: headers within 10 s, a whole request within 30 s. */
export function applyConnectionBounds(server: http.Server): void {
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  server.keepAliveTimeout = 5_000;
}

/** Read by V8 each time it sets the next full-collection limit, so it applies from the next collection on. */
export const SERVER_HEAP_FLAGS = '--heap-growing-percent=20';

/**
 * Lets the server's old generation grow only a fifth past what survived the last full collection.
 * Under concurrent requests short-lived objects get promoted, and V8's default factor (up to 4×)
 * lets old space fill with tens of MiB of garbage that stays resident once the server goes idle,
 * since V8 collects again only when something allocates. The live heap of a server is small and
 * steady, so the tighter limit costs few extra collections. Measured: docs/PERFORMANCE.md.
 */
export function limitHeapGrowth(): void {
  v8.setFlagsFromString(SERVER_HEAP_FLAGS);
}

/** Sweeps expired rows every JANITOR_INTERVAL seconds; the returned function stops it and waits for a sweep under way. */
function startJanitor(runtime: Runtime): () => Promise<void> {
  const seconds = runtime.config.janitorInterval;
  if (seconds === 0) return async () => {};
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    running ??= sweep(runtime.db, janitorPolicy(runtime.config))
      .then((result) => {
        if (sweptRows(result) > 0) runtime.logger.info({ janitor: result }, 'janitor deleted expired rows');
      })
      .catch((error) => runtime.logger.warn({ err: error }, 'janitor sweep failed'))
      .finally(() => (running = undefined));
  }, seconds * 1000);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}

export function reservePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = http.createServer();
    probe.once('error', reject);
    probe.listen(0, host, () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/** Node checks the header and request timeouts only this often (30 s by default), and only set at creation. */
export const CONNECTIONS_CHECKING_INTERVAL_MS = 1_000;

export async function startServer(runtime: Runtime): Promise<RunningServer> {
  let shuttingDown = false;
  const app = createApp(runtime, { isShuttingDown: () => shuttingDown });
  const server = http.createServer({ connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL_MS }, app);
  applyConnectionBounds(server);
  answerClientErrors(server);

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(runtime.config.port, runtime.config.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const stopJanitor = startJanitor(runtime);
  const { port } = server.address() as AddressInfo;
  const metrics = runtime.config.metricsPort === undefined ? undefined : await startMetricsServer(runtime.config.metricsPort, runtime.config.host);
  const host = runtime.config.host.includes(':') ? `[${runtime.config.host}]` : runtime.config.host;

  let closing: Promise<void> | undefined;
  const close = (timeoutMs = SHUTDOWN_TIMEOUT_MS) =>
    (closing ??= (async () => {
      shuttingDown = true;
      const drained = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          runtime.logger.warn('shutdown timeout reached; closing remaining connections');
          server.closeAllConnections();
          resolve();
        }, timeoutMs);
      });
      await Promise.race([drained, timedOut]);
      clearTimeout(timer);
      await stopJanitor();
      await metrics?.close();
      await runtime.close();
    })());

  return { url: `http://${host}:${port}`, port, ...(metrics && { metricsPort: metrics.port }), server, close };
}
