/** What the token, revocation and introspection endpoints share: CORS, the form body, 405, RFC 6749 §5.2 errors. */
import type express from 'express';
import type { RequestHandler } from 'express';
import type { Logger } from '../../logger.js';
import { jsonErrorHandler, onlyPost } from '../json-response.js';
import { formBody } from '../params.js';

export interface PostEndpoint {
  path: string;
  cors: RequestHandler;
  logger: Logger;
  steps: RequestHandler[];
}

export function addPostEndpoint(router: express.Router, { path, cors, logger, steps }: PostEndpoint): void {
  router
    .route(path)
    .options(cors)
    .post(cors, ...formBody, ...steps)
    .all(cors, onlyPost);
  router.use(path, jsonErrorHandler(logger));
}
