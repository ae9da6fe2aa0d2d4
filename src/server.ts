/** Graceful shutdown: stop accepting, let in-flight requests finish (bounded), then close the database. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from './app.js';
import type { Runtime } from './runtime.js';
import { answerClientErrors } from './http/client-error.js';
import { janitorPolicy, sweep, sweptRows } from './oauth/janitor.js';
import { startMetricsServer } from './http/metrics.js';
import { listen } from './http/listen.js';
import { startIdleCollection } from './idle-collection.js';
import { createAppServer } from './http/app-server.js';
import type { ReservedPort } from './http/reserved-port.js';

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

/** Node checks the header and request timeouts only this often (30 s by default), and only set at creation. */
export const CONNECTIONS_CHECKING_INTERVAL_MS = 1_000;

/** Starts serving on runtime's PORT and HOST, or on `options.reserved`, a port reservePort picked for PORT=0. */
export async function startServer(runtime: Runtime, options: { reserved?: ReservedPort } = {}): Promise<RunningServer> {
  let shuttingDown = false;
  const app = createApp(runtime, { isShuttingDown: () => shuttingDown });
  // A request without Host is refused by the app (src/http/request-target.ts), in the Google error shape, not by Node with an empty body.
  const server = createAppServer(app, { connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL_MS, requireHostHeader: false });
  applyConnectionBounds(server);
  answerClientErrors(server, runtime.logger);

  if (options.reserved) await options.reserved.handTo(server);
  else await listen(server, runtime.config.port, runtime.config.host, 'PORT');
  let metrics: Awaited<ReturnType<typeof startMetricsServer>> | undefined;
  try {
    metrics = runtime.config.metricsPort === undefined ? undefined : await startMetricsServer(runtime.config.metricsPort, runtime.config.host);
  } catch (error) {
    // The main listener is open already: left open, it would keep a process that cannot serve alive forever.
    await new Promise<void>((resolve) => server.close(() => resolve()));
    throw error;
  }
  const stopJanitor = startJanitor(runtime);
  const stopIdleCollection = startIdleCollection({ idleSeconds: runtime.config.idleCollectionAfter });
  const { port } = server.address() as AddressInfo;
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
      stopIdleCollection();
      await metrics?.close();
      await runtime.close();
    })());

  return { url: `http://${host}:${port}`, port, ...(metrics && { metricsPort: metrics.port }), server, close };
}
