/**
 * Prometheus metrics, by route template (never the raw path, so label values stay bounded). Served on METRICS_PORT, or
 * at /metrics behind METRICS_TOKEN; off unless one of them is set.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RequestHandler } from 'express';
import { createHash, timingSafeEqual } from 'node:crypto';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { PoolLoad } from '../db/pool-admission.js';
import { listen } from './listen.js';

export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: 'fieldgate_' });

const httpRequests = new Counter({
  name: 'fieldgate_http_requests_total',
  help: 'HTTP requests by method, route template and status.',
  labelNames: ['method', 'route', 'status'] as const,
  registers: [registry],
});

const httpDuration = new Histogram({
  name: 'fieldgate_http_request_duration_seconds',
  help: 'HTTP request latency by method, route template and status.',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  registers: [registry],
});

export const securityEventCounter = new Counter({
  name: 'fieldgate_security_events_total',
  help: 'OAuth security events (token issuance, refresh, revocation, reuse, login failures and lockouts) by event and reason.',
  labelNames: ['event', 'reason'] as const,
  registers: [registry],
});

export const graphqlOperationCost = new Histogram({
  name: 'fieldgate_graphql_operation_cost',
  help: 'Cost of the GraphQL operations checked against GRAPHQL_MAX_COST (REST requests included).',
  buckets: [1, 10, 50, 100, 500, 1000, 5000, 10_000, 50_000],
  registers: [registry],
});

/** The pool /metrics reports on: the last one observed (one runtime per process, but for tests). */
let poolLoad: (() => PoolLoad) | undefined;

/** Reports the PostgreSQL pool's load on /metrics: how full it is, and how often a statement waited too long. */
export function observeDatabasePool(load: () => PoolLoad): void {
  poolLoad = load;
}

/** A gauge read off the observed pool at each scrape. */
function poolGauge(name: string, help: string, read: (load: PoolLoad) => number): void {
  new Gauge({
    name,
    help,
    registers: [registry],
    collect() {
      if (poolLoad) this.set(read(poolLoad()));
    },
  });
}

poolGauge('fieldgate_database_pool_slots', 'Statements the PostgreSQL pool takes in flight at once (DATABASE_POOL_SIZE connections, four each).', (load) => load.slots);
poolGauge('fieldgate_database_pool_in_flight', 'Statements in flight on the PostgreSQL pool (a transaction counts as a whole connection).', (load) => load.running);
poolGauge(
  'fieldgate_database_pool_waiting',
  'Statements waiting for a slot on the PostgreSQL pool (one that gave up counts until the queue passes it).',
  (load) => load.waiting,
);

new Counter({
  name: 'fieldgate_database_pool_wait_timeouts_total',
  help: 'Statements refused (503) for waiting longer than DATABASE_POOL_WAIT_MS for a slot on the PostgreSQL pool.',
  registers: [registry],
  collect() {
    if (!poolLoad) return;
    // The pool keeps the count; a counter cannot be set, so it is rebuilt from it.
    this.reset();
    this.inc(poolLoad().refused);
  },
});

const METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS']);

/**
 * The route template of the request: the path of the last route that matched it, prefixed by the base of its router
 * at that moment. It is read when Express assigns `req.route`, because an error handler mounted with `router.use(path)`
 * later replaces `req.baseUrl` with the path as the client spelled it (`/ToKeN`), which would make every spelling a
 * label of its own. A base is a mount path matched regardless of case, so it is lower-cased.
 */
function captureRouteTemplate(req: Parameters<RequestHandler>[0]): () => string {
  let route: unknown = req.route;
  let template = 'unmatched';
  Object.defineProperty(req, 'route', {
    configurable: true,
    enumerable: true,
    get: () => route,
    set(value: { path?: unknown } | undefined) {
      route = value;
      if (value && typeof value.path === 'string') template = `${req.baseUrl.toLowerCase()}${value.path}` || '/';
    },
  });
  return () => template;
}

export const httpMetrics: RequestHandler = (req, res, next) => {
  const started = process.hrtime.bigint();
  const route = captureRouteTemplate(req);
  res.once('finish', () => {
    const labels = { method: METHODS.has(req.method) ? req.method : 'OTHER', route: route(), status: String(res.statusCode) };
    httpRequests.inc(labels);
    httpDuration.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
  });
  next();
};

async function send(res: http.ServerResponse): Promise<void> {
  const body = await registry.metrics();
  res.writeHead(200, { 'Content-Type': registry.contentType, 'Cache-Control': 'no-store' }).end(body);
}

const digest = (value: string) => createHash('sha256').update(value).digest();

export function metricsEndpoint(token: string): RequestHandler {
  return (req, res, next) => {
    if (req.path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) return next();
    const presented = /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1] ?? '';
    if (!timingSafeEqual(digest(presented), digest(token))) {
      res.setHeader('WWW-Authenticate', 'Bearer realm="metrics"');
      res.status(401).json({ error: { code: 401, status: 'UNAUTHENTICATED', message: 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>', details: [] } });
      return;
    }
    void send(res).catch(next);
  };
}

export async function startMetricsServer(port: number, host: string): Promise<{ port: number; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    if (req.method === 'GET' && (req.url ?? '').split('?')[0] === '/metrics') {
      send(res).catch(() => res.writeHead(500).end());
      return;
    }
    res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found\n');
  });
  // The bounds of the main listener: a client that never finishes its request headers cannot hold a socket for long.
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  await listen(server, port, host, 'METRICS_PORT');
  return {
    port: (server.address() as AddressInfo).port,
    // Closed once the main listener has drained: a scrape is not worth waiting for, and a half-sent request on this
    // port would otherwise hold the process past its stop timeout.
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
