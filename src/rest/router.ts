/**
 * The REST compatibility layer: each route authenticates the bearer token, reads its
 * parameters, and runs one GraphQL operation in-process (see selection.ts). Errors are
 * answered here in Google's JSON shape, with `WWW-Authenticate` on 401/403.
 */
import express from 'express';
import type { Runtime } from '../runtime.js';
import type { GraphQLService } from '../graphql/index.js';
import { restErrorHandler, RestUnimplemented } from './errors.js';
import { RestExecutor } from './execute.js';
import type { RestRoute } from './http.js';
import { productRoutes } from './products.js';
import { orderRoutes } from './orders.js';
import { serveOpenApi } from './openapi.js';
import { taggedRepresentations } from './etag.js';
import { RouteTable } from '../http/route-table.js';

const OPENAPI_PATH = '/openapi.json';

/** Every REST operation, in the order the OpenAPI document lists them. */
export function restRoutes(runtime: Runtime, rest: RestExecutor): RestRoute[] {
  return [...productRoutes(runtime, rest), ...orderRoutes(runtime, rest)];
}

const METHOD_ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/**
 * Answers a method a served path does not support with 405 and `Allow` (RFC 9110 §15.5.6),
 * and OPTIONS with 204 and `Allow`; GET implies HEAD, as Express serves it.
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
    next(new RestUnimplemented(`the method ${req.method} is not allowed here; allowed: ${allowed}`, { httpStatus: 405, headers: { Allow: allowed } }));
  };
}

export interface RestRouter {
  router: express.RequestHandler;
  /** The first path segments the router serves (`/products`, `/orders`, `/openapi.json`). */
  paths: string[];
}

export function createRestRouter(runtime: Runtime, graphql: GraphQLService): RestRouter {
  const rest = new RestExecutor(graphql);
  const routes = restRoutes(runtime, rest);
  const table = new RouteTable(restErrorHandler(runtime.logger, 'REST request failed', { resourceMetadataUrl: runtime.resources.rest.metadataUrl }));
  table.add('GET', OPENAPI_PATH, [serveOpenApi(runtime, rest, () => routes)]);
  for (const route of routes) table.add(route.method, route.path, [taggedRepresentations(), ...route.handlers]);
  const methodsByPath = new Map<string, string[]>([[OPENAPI_PATH, ['GET']]]);
  for (const route of routes) methodsByPath.set(route.path, [...(methodsByPath.get(route.path) ?? []), route.method.toUpperCase()]);
  for (const [path, methods] of methodsByPath) table.add('ALL', path, [methodNotAllowed(methods)]);
  const paths = new Set([OPENAPI_PATH, ...routes.map((route) => `/${route.path.split('/')[1]}`)]);
  return { router: table.handler, paths: [...paths] };
}
