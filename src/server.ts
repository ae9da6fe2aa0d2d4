/** Graceful shutdown: stop accepting, let in-flight requests finish (bounded), then close the database. */
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { createApp } from './app.js';
import type { Runtime } from './runtime.js';
import { answerClientErrors } from './http/client-error.js';
import { janitorPolicy, sweep, sweptRows } from './oauth/janitor.js';
import { startMetricsServer } from './http/metrics.js';
import { listen, ListenError } from './http/listen.js';
import { startIdleCollection } from './idle-collection.js';
import { createAppServer } from './http/app-server.js';

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

/** A port picked for PORT=0 and held open until the server takes it over, so no other process can take it in between. */
export interface ReservedPort {
  port: number;
  /** The listening socket; `startServer` listens on it. */
  socket: net.Server;
  /** Gives the port back when the start failed before the server took it; does nothing once the server has it. */
  release(): Promise<void>;
  /** Set by startServer as it takes the socket over. */
  takenOver: boolean;
}

export function reservePort(host: string): Promise<ReservedPort> {
  return new Promise((resolve, reject) => {
    const socket = net.createServer();
    // Until the server takes the socket over, a client that finds the port is hung up on rather than left waiting.
    socket.on('connection', (client) => client.destroy());
    // The first listen of PORT=0: a HOST that is no address of this host fails here, and names the setting as listen() does.
    socket.once('error', (error) => reject(new ListenError('PORT', host, 0, { cause: error })));
    socket.listen(0, host, () => {
      const { port } = socket.address() as AddressInfo;
      const reserved: ReservedPort = {
        port,
        socket,
        takenOver: false,
        // Closing it after the takeover would close the server's own listening handle.
        release: () => new Promise<void>((done) => (reserved.takenOver || !socket.listening ? done() : socket.close(() => done()))),
      };
      resolve(reserved);
    });
  });
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

  if (options.reserved) {
    options.reserved.takenOver = true;
    await listen(server, options.reserved.socket, runtime.config.host, 'PORT');
  }
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
