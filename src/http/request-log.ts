/**
 * One structured log line per request: request id, method, path (never the query string: it
 * can carry codes), status and response time. Written when the response finishes, or marked
 * `aborted` when the client goes away first.
 *
 * This replaces pino-http, whose per-request child logger and serializers cost more than the
 * rest of a cached REST read; the main logger's destination and level still write every line.
 */
import type { RequestHandler } from 'express';
import { accessLogger, type Logger } from '../logger.js';
import { requestId } from './request-id.js';

declare module 'http' {
  interface IncomingMessage {
    /** The request id (X-Request-Id), set by the request log middleware. */
    id?: string;
  }
}

export function requestLog(parent: Logger): RequestHandler {
  const logger = accessLogger(parent);
  return function logRequest(req, res, next) {
    const started = performance.now();
    const id = requestId(req, res);
    req.id = id;
    const url = req.originalUrl ?? req.url ?? '';
    const query = url.indexOf('?');
    const path = query === -1 ? url : url.slice(0, query);
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
