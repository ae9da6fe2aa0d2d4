/**
 * Middleware run one after another as a single Express layer, with the `next` semantics an Express router gives each
 * of its layers: an error skips the rest, `next('route')` goes on, `next('router')` leaves, a throw or a rejected
 * promise becomes an error. Express's router allocates a match, a parameter object and a closure per layer it walks;
 * walking the app-wide middleware every request passes as separate layers was about a quarter of its garbage on a REST read.
 * Measured gain and removal condition: docs/PERFORMANCE.md.
 */
import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from 'express';

/** Calls one handler as an Express layer does: a throw or a rejected promise goes to `next` as an error. */
export function callHandler(handler: RequestHandler, req: Request, res: Response, next: NextFunction): void {
  try {
    const result = handler(req, res, next) as unknown;
    if (result instanceof Promise) result.then(undefined, (rejection: unknown) => next(rejection ?? new Error('Rejected promise')));
  } catch (thrown) {
    next(thrown);
  }
}

/** Calls an error handler as an Express error layer does: a throw or a rejected promise goes on to `next`. */
export function callErrorHandler(handler: ErrorRequestHandler, error: unknown, req: Request, res: Response, next: NextFunction): void {
  try {
    const result = handler(error, req, res, next) as unknown;
    if (result instanceof Promise) result.then(undefined, (rejection: unknown) => next(rejection ?? new Error('Rejected promise')));
  } catch (thrown) {
    next(thrown);
  }
}

export function inSequence(handlers: readonly RequestHandler[]): RequestHandler {
  const list = [...handlers];
  return function runInSequence(req, res, next) {
    let index = 0;
    const step: NextFunction = (error?: unknown) => {
      if (error === 'router' || (error && error !== 'route')) return next(error);
      const handler = list[index++];
      if (handler) callHandler(handler, req, res, step);
      else next();
    };
    step();
  };
}
