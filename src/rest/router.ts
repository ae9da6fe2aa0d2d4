/** The REST layer: each route authenticates, reads its parameters and runs one GraphQL operation in-process. */
import express from 'express';
import type { Runtime } from '../runtime.js';
import type { GraphQLService } from '../graphql/index.js';
import { restErrorHandler, RestInvalidArgument } from './errors.js';
import { RestExecutor } from './execute.js';
import { restCors } from './cors.js';
import type { RestRoute } from './http.js';
import { productRoutes } from './products.js';
import { orderRoutes } from './orders.js';
import { serveOpenApi } from './openapi.js';
import { taggedRepresentations } from './etag.js';
import { RouteTable } from '../http/route-table.js';

const OPENAPI_PATH = '/openapi.json';

export function restRoutes(runtime: Runtime, rest: RestExecutor): RestRoute[] {
  return [...productRoutes(runtime, rest), ...orderRoutes(runtime, rest)];
}

const METHOD_ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/**
 * 405 with `Allow` (RFC 9110 §15.5.6), OPTIONS 204; GET implies HEAD, as Express serves it. The
 * status is INVALID_ARGUMENT, as GraphQL's 405: no google.rpc.Code maps to 405, and UNIMPLEMENTED
 * (501) would tell the client the server lacks something, where it is the request that is wrong.
 */
function methodNotAllowed(methods: readonly string[]): express.RequestHandler {
  const served = new Set(methods.flatMap((method) => (method === 'GET' ? ['GET', 'HEAD'] : [method])));
  const allowed = [...METHOD_ORDER.filter((method) => served.has(method)), 'OPTIONS'].join(', ');
  return function answerMethodNotAllowed(req, res, next) {
    res.setHeader('Allow', allowed);
    if (req.method === 'OPTIONS') {
      res.status(204).end();
      return;
    }
    next(new RestInvalidArgument(`the method ${req.method} is not allowed here; allowed: ${allowed}`, { httpStatus: 405, reason: 'METHOD_NOT_ALLOWED', headers: { Allow: allowed } }));
  };
}

export interface RestRouter {
  router: express.RequestHandler;
  paths: string[];
}

export function createRestRouter(runtime: Runtime, graphql: GraphQLService): RestRouter {
  const rest = new RestExecutor(graphql);
  const routes = restRoutes(runtime, rest);
  const table = new RouteTable(restErrorHandler(runtime.logger, 'REST request failed', { resourceMetadataUrl: runtime.resources.rest.metadataUrl }));
  const methodsByPath = new Map<string, string[]>([[OPENAPI_PATH, ['GET']]]);
  for (const route of routes) methodsByPath.set(route.path, [...(methodsByPath.get(route.path) ?? []), route.method.toUpperCase()]);
  const corsByPath = new Map([...methodsByPath].map(([path, methods]) => [path, restCors(runtime.config.corsOrigins, methods)]));
  table.add('GET', OPENAPI_PATH, [corsByPath.get(OPENAPI_PATH)!, serveOpenApi(runtime, rest, () => routes)]);
  for (const route of routes) table.add(route.method, route.path, [corsByPath.get(route.path)!, taggedRepresentations(), ...route.handlers]);
  for (const [path, methods] of methodsByPath) table.add('ALL', path, [corsByPath.get(path)!, methodNotAllowed(methods)]);
  const paths = new Set([OPENAPI_PATH, ...routes.map((route) => `/${route.path.split('/')[1]}`)]);
  return { router: table.handler, paths: [...paths] };
}
