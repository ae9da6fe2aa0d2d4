/** Assembles the Express app: request logging, health checks, the OAuth server, GraphQL, REST and the demo pages. */
import express, { type RequestHandler } from 'express';
import type { Runtime } from './runtime.js';
import { issuerPath, stripIssuerPath } from './http/issuer-path.js';
import { DATABASE_RETRY_AFTER_SECONDS } from './db/errors.js';
import { requestLog } from './http/request-log.js';
import { SegmentDispatcher } from './http/dispatch.js';
import { inSequence } from './http/middleware-sequence.js';
import { refuseLongUrl } from './http/client-error.js';
import { answerServerWideOptions, readAbsoluteForm, refuseInvalidHost } from './http/request-target.js';
import { createOAuthRouter, OAUTH_PATHS } from './oauth/router.js';
import { createGraphQL } from './graphql/index.js';
import { GRAPHQL_PATH } from './graphql/http.js';
import { createRestRouter } from './rest/router.js';
import { createDemoRouter, DEMO_PATHS } from './demo/router.js';
import { RestNotFound, restErrorHandler } from './rest/errors.js';
import { createFrontDoorRouter } from './front-door/router.js';
import { httpMetrics, metricsEndpoint, observeDatabasePool } from './http/metrics.js';

const READY_TIMEOUT_MS = 2_000;

export interface AppOptions {
  isShuttingDown?: () => boolean;
  /** Embedder routes (the benchmark's baselines): `bare` before anything else, `served` after the app-wide middleware. */
  embedderRoutes?: { bare?: RequestHandler; served?: RequestHandler };
  clientMetadataCa?: string;
}

const HEALTH_PATHS = ['/healthz', '/readyz'];

function healthRoutes(runtime: Runtime, isShuttingDown: () => boolean): express.Router {
  const router = express.Router();
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    // A load balancer probing over a kept-alive connection must take this instance out before it stops answering.
    if (isShuttingDown()) {
      res.status(503).json({ status: 'shutting_down', database: runtime.database.kind });
      return;
    }
    try {
      await Promise.race([
        runtime.database.ping(),
        new Promise((_, reject) => setTimeout(() => reject(new Error('database ping timed out')), READY_TIMEOUT_MS).unref()),
      ]);
      res.json({ status: 'ok', database: runtime.database.kind });
    } catch (error) {
      runtime.logger.warn({ err: error }, 'readiness check failed');
      res.setHeader('Retry-After', String(DATABASE_RETRY_AFTER_SECONDS));
      res.status(503).json({ status: 'unavailable', database: runtime.database.kind });
    }
  });
  return router;
}

const notFound: RequestHandler = (req, _res, next) => {
  next(new RestNotFound(`no route for ${req.method} ${req.path}`, { reason: 'NO_SUCH_ROUTE' }));
};

export function createApp(runtime: Runtime, options: AppOptions = {}): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.set('trust proxy', runtime.config.trustProxy);
  // The middleware every request passes runs as one layer of the app's router (see middleware-sequence.ts).
  const everyRequest: RequestHandler[] = [readAbsoluteForm];
  const prefix = issuerPath(runtime.config.issuer);
  if (prefix) everyRequest.push(stripIssuerPath(prefix));
  if (options.embedderRoutes?.bare) everyRequest.push(options.embedderRoutes.bare);
  everyRequest.push(requestLog(runtime.logger));
  const { metricsPort, metricsToken } = runtime.config;
  if (metricsPort !== undefined || metricsToken !== undefined) {
    everyRequest.push(httpMetrics);
    if (runtime.database.poolLoad) observeDatabasePool(runtime.database.poolLoad);
  }
  if (metricsToken !== undefined) everyRequest.push(metricsEndpoint(metricsToken));
  if (options.isShuttingDown) {
    const isShuttingDown = options.isShuttingDown;
    everyRequest.push((_req, res, next) => {
      if (isShuttingDown()) res.setHeader('Connection', 'close');
      next();
    });
  }
  everyRequest.push(refuseInvalidHost, answerServerWideOptions, refuseLongUrl([GRAPHQL_PATH]));
  if (options.embedderRoutes?.served) everyRequest.push(options.embedderRoutes.served);
  const graphql = createGraphQL(runtime);
  const rest = createRestRouter(runtime, graphql);
  const faces = new SegmentDispatcher()
    .mount(HEALTH_PATHS, healthRoutes(runtime, options.isShuttingDown ?? (() => false)))
    .mount([GRAPHQL_PATH], graphql.router)
    .mount(rest.paths, rest.router)
    .mount(OAUTH_PATHS, createOAuthRouter(runtime, options.clientMetadataCa === undefined ? {} : { clientMetadataCa: options.clientMetadataCa }));
  if (runtime.config.demo) faces.mount(DEMO_PATHS, createDemoRouter(runtime));
  everyRequest.push(faces.handler);
  app.use(inSequence(everyRequest));
  if (runtime.config.frontDoor) app.use(createFrontDoorRouter(runtime));
  app.use(notFound);
  // Last resort for anything a face did not answer itself.
  app.use(restErrorHandler(runtime.logger, 'unhandled error'));
  return app;
}
