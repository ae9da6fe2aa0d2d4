/**
 * Matches as an Express router does, with its `next` semantics, without its per-layer dispatch:
 * case-sensitively by default (`/PRODUCTS` is not `/products`, as in Google's APIs, an Express router
 * with `caseSensitive: true`), or ignoring the case of ASCII letters, as Express's default does.
 * Measured gain and removal condition: docs/PERFORMANCE.md.
 */
import type { ErrorRequestHandler, NextFunction, Request, RequestHandler } from 'express';
import { callErrorHandler, callHandler } from './middleware-sequence.js';

interface Route {
  method: string;
  path: string;
  segments: (string | { param: string })[];
  handlers: readonly RequestHandler[];
}

export interface RouteTableOptions {
  /** Default true. False: `/TOKEN` is `/token`, as an Express router's default (`caseSensitive: false`). */
  caseSensitive?: boolean;
}

export class RouteTable {
  private readonly routes: Route[] = [];
  private readonly caseSensitive: boolean;

  constructor(
    private readonly onError: ErrorRequestHandler,
    options: RouteTableOptions = {},
  ) {
    this.caseSensitive = options.caseSensitive ?? true;
  }

  add(method: string, path: string, handlers: readonly RequestHandler[]): this {
    if (!path.startsWith('/')) throw new Error(`a route path starts with "/": "${path}"`);
    const segments = path
      .slice(1)
      .split('/')
      .map((segment) => (segment.startsWith(':') ? { param: segment.slice(1) } : this.caseSensitive ? segment : segment.toLowerCase()));
    this.routes.push({ method: method.toUpperCase(), path, segments, handlers });
    return this;
  }

  readonly handler: RequestHandler = (req, res, next) => {
    const segments = segmentsOf(req.path);
    let routeIndex = -1;
    let handlerIndex = 0;
    let route: Route | undefined;

    const fail = (error: unknown) => callErrorHandler(this.onError, error, req, res, next);

    const step: NextFunction = (error?: unknown) => {
      if (error !== undefined && error !== null && error !== 'route' && error !== 'router') return fail(error);
      if (error === 'router') return next();
      if (error === 'route' || !route || handlerIndex >= route.handlers.length) {
        let found;
        try {
          found = this.find(req, segments, routeIndex + 1);
        } catch (decodeError) {
          return fail(decodeError);
        }
        if (!found) return next();
        ({ index: routeIndex, route } = found);
        handlerIndex = 0;
        req.params = found.params;
        (req as { route?: unknown }).route = { path: route.path, methods: { [route.method.toLowerCase()]: true } };
      }
      callHandler(route.handlers[handlerIndex++]!, req, res, step);
    };
    step();
  };

  private find(req: Request, segments: string[], from: number): { index: number; route: Route; params: Request['params'] } | undefined {
    for (let index = from; index < this.routes.length; index++) {
      const route = this.routes[index]!;
      if (!methodMatches(route.method, req.method) || route.segments.length !== segments.length) continue;
      let params: Request['params'] | undefined;
      let matches = true;
      for (let i = 0; i < segments.length && matches; i++) {
        const expected = route.segments[i]!;
        const actual = segments[i]!;
        if (typeof expected === 'string') matches = this.caseSensitive ? expected === actual : equalsIgnoringAsciiCase(expected, actual);
        else if (actual === '') matches = false;
        else (params ??= {})[expected.param] = decodeParam(actual);
      }
      if (matches) return { index, route, params: params ?? {} };
    }
    return undefined;
  }
}

function methodMatches(routeMethod: string, method: string): boolean {
  return routeMethod === method || routeMethod === 'ALL' || (routeMethod === 'GET' && method === 'HEAD');
}

/**
 * `lower` (lower case) against `actual`, ASCII letters in any case: a path-to-regexp pattern with its `i` flag (no `u`)
 * folds no other letter onto an ASCII one (`/to\u212Aen`, with a Kelvin sign, is not `/token`), where `toLowerCase` would.
 */
function equalsIgnoringAsciiCase(lower: string, actual: string): boolean {
  if (lower.length !== actual.length) return false;
  for (let i = 0; i < lower.length; i++) {
    const expected = lower.charCodeAt(i);
    const code = actual.charCodeAt(i);
    if (code !== expected && !(code >= 65 && code <= 90 && code + 32 === expected)) return false;
  }
  return true;
}

/** `/products/7/` → `['products', '7']`: one trailing slash is ignored, as Express's non-strict routing does. */
function segmentsOf(path: string): string[] {
  const end = path.length > 1 && path.endsWith('/') ? path.length - 1 : path.length;
  return path.slice(1, end).split('/');
}

/** Express answers a parameter that does not decode with 400 (`err.status`). */
function decodeParam(value: string): string {
  if (!value.includes('%')) return value;
  try {
    return decodeURIComponent(value);
  } catch (error) {
    throw Object.assign(error as Error, { message: `Failed to decode param '${value}'`, status: 400 });
  }
}
