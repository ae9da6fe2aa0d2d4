/**
 * The registration the token, revocation and introspection endpoints share: CORS and its
 * preflight, the form body, the endpoint's own steps, 405 for any other method, and every
 * error as the RFC 6749 §5.2 JSON object.
 */
import type express from 'express';
import type { RequestHandler } from 'express';
import type { Logger } from '../../logger.js';
import { jsonErrorHandler, onlyPost } from '../json-response.js';
import { formBody } from '../params.js';

export interface PostEndpoint {
  path: string;
  cors: RequestHandler;
  logger: Logger;
  /** What runs after the form body is read, in order. */
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
