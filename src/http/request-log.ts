/**
 * One log line per request: never the query string or fragment (they can carry codes), nor the scheme and authority
 * of an absolute-form target, whose userinfo can carry a password. Replaces pino-http, whose per-request child logger
 * and serializers were the costliest part of a cached read; the main logger still writes every line.
 */
import type { RequestHandler } from 'express';
import { accessLogger, type Logger } from '../logger.js';
import { requestId } from './request-id.js';

declare module 'http' {
  interface IncomingMessage {
    id?: string;
  }
}

/**
 * The path of a request target. A client may send the absolute form (`GET http://user:pass@host/token`, RFC 9112
 * §3.2.2), which Express routes by its path; only that path is logged, as for the usual origin form.
 */
export function loggedPath(target: string): string {
  // A fragment has no place in a request target, but Node passes one on: it goes with the query.
  let end = target.indexOf('?');
  const fragment = target.indexOf('#');
  if (fragment !== -1 && (end === -1 || fragment < end)) end = fragment;
  const path = end === -1 ? target : target.slice(0, end);
  if (path.charCodeAt(0) === 0x2f || path === '*') return path;
  try {
    return new URL(path).pathname;
  } catch {
    return '(not a path)';
  }
}

export function requestLog(parent: Logger): RequestHandler {
  const logger = accessLogger(parent);
  return function logRequest(req, res, next) {
    const started = performance.now();
    const id = requestId(req, res);
    req.id = id;
    const path = loggedPath(req.originalUrl ?? req.url ?? '');
    const write = (aborted: boolean) => {
      const statusCode = res.statusCode;
      const record = {
        req: { id, method: req.method, path },
        res: { statusCode },
        responseTime: Math.round(performance.now() - started),
        ...(aborted && { aborted: true }),
      };
      const message = `${req.method} ${path} ${statusCode}${aborted ? ' (aborted)' : ''}`;
      if (statusCode >= 500) logger.error(record, message);
      else logger.info(record, message);
    };
    // A response emits 'close' after 'finish', or alone when the client went away first.
    res.once('close', () => write(!res.writableFinished));
    next();
  };
}
