/** What the token, revocation and introspection endpoints share: CORS, the form body, 405, RFC 6749 §5.2 errors. */
import type { RequestHandler } from 'express';
import { RouteTable } from '../../http/route-table.js';
import type { Logger } from '../../logger.js';
import { jsonErrorHandler, onlyPost } from '../json-response.js';
import { formBody } from '../params.js';

export interface PostEndpoint {
  path: string;
  cors: RequestHandler;
  logger: Logger;
  steps: RequestHandler[];
}

/** The endpoint's routes, matched as the OAuth routers' Express default (any case, one trailing slash). */
export function createPostEndpoint({ path, cors, logger, steps }: PostEndpoint): RequestHandler {
  return new RouteTable(jsonErrorHandler(logger), { caseSensitive: false })
    .add('OPTIONS', path, [cors])
    .add('POST', path, [cors, ...formBody, ...steps])
    .add('ALL', path, [cors, onlyPost]).handler;
}
