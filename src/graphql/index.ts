/**
 * The GraphQL face: /graphql over graphql-yoga, and the same schema, validation cache, limits
 * and authorization for in-process execution by the REST layer.
 *
 * PLACEHOLDER — being implemented for issue 4. The contract below is what src/rest relies on.
 */
import express from 'express';
import type { DocumentNode, ExecutionResult } from 'graphql';
import type { Runtime } from '../runtime.js';
import type { Principal } from '../oauth/access-token.js';

export interface ExecuteRequest {
  /** A document built as an AST (never by pasting user text into a query string). */
  document: DocumentNode;
  variables?: Record<string, unknown>;
  operationName?: string;
  /** The caller, already authenticated from its bearer token. */
  principal: Principal;
}

export interface GraphQLService {
  /** Mounts POST/GET /graphql. */
  router: express.Router;
  /**
   * Validates (cached by document) and executes in-process, with the same limits and
   * authorization as /graphql. Errors come back in `errors` with `extensions.code`
   * (UNAUTHENTICATED, FORBIDDEN with `extensions.requiredScope`, NOT_FOUND, INVALID_ARGUMENT,
   * FAILED_PRECONDITION) exactly as an HTTP client of /graphql would see them.
   */
  execute(request: ExecuteRequest): Promise<ExecutionResult>;
}

export function createGraphQL(_runtime: Runtime): GraphQLService {
  return {
    router: express.Router(),
    execute: async () => ({ errors: [] }),
  };
}
