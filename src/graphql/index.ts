/**
 * The GraphQL face: /graphql over graphql-yoga, and the same schema, validation cache, limits
 * and authorization for in-process execution by the REST layer.
 *
 * @example
 *   const graphql = createGraphQL(runtime);
 *   app.use(graphql.router);
 *   const result = await graphql.execute({ document, variables: { limit: 10 }, principal });
 */
import type express from 'express';
import type { DocumentNode, ExecutionResult, GraphQLSchema } from 'graphql';
import type { Runtime } from '../runtime.js';
import type { Principal } from '../tokens/access-token.js';
import { PageTokens } from '../api/page-token.js';
import { Executor } from './executor.js';
import { createGraphQLRouter } from './http.js';
import type { GraphQLLimits } from './limits.js';
import { schema } from './schema/index.js';

export type { GraphQLLimits } from './limits.js';

export interface ExecuteRequest {
  /** A document built as an AST (never by pasting user text into a query string). */
  document: DocumentNode;
  variables?: Record<string, unknown>;
  operationName?: string;
  /** The caller, already authenticated from its bearer token. */
  principal: Principal;
  /** Root lists return one item past `limit`, loaded by the same statement, so a pager knows whether another page follows. */
  pageLookahead?: boolean;
}

export interface GraphQLService {
  router: express.RequestHandler;
  /** Executes in-process with the limits and authorization of /graphql; errors as an HTTP client sees them. */
  execute(request: ExecuteRequest): Promise<ExecutionResult>;
  /** The executable schema (printed into schema.graphql). */
  schema: GraphQLSchema;
  limits: Readonly<GraphQLLimits>;
}

export interface GraphQLOptions {
  limits?: Partial<GraphQLLimits>;
}

export function createGraphQL(runtime: Runtime, options: GraphQLOptions = {}): GraphQLService {
  const limits = { ...runtime.config.graphqlLimits, ...options.limits };
  const executor = new Executor({
    schema,
    db: runtime.db,
    logger: runtime.logger,
    limits,
    pageTokens: new PageTokens(runtime.pageTokenSecret),
    ...(!runtime.config.graphqlCompiledQueries && { compiledQueries: false }),
  });
  return {
    router: createGraphQLRouter(runtime, executor),
    execute: (request) => executor.run(request),
    schema,
    limits,
  };
}
