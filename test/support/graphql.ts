/** Helpers for the GraphQL suites: POST /graphql with a token, or run in-process. */
import request from 'supertest';
import { parse, type ExecutionResult } from 'graphql';
import type { Express } from 'express';
import type { GraphQLService } from '../../src/graphql/index.js';
import type { Principal } from '../../src/tokens/access-token.js';

export interface GraphQLResponse {
  status: number;
  headers: Record<string, string>;
  body: { data?: Record<string, unknown> | null; errors?: { message: string; path?: unknown[]; extensions?: Record<string, unknown> }[] };
}

/** POST /graphql as JSON, with `Authorization: Bearer <token>` when a token is given. */
export async function postGraphQL(
  app: Express,
  token: string | undefined,
  query: string,
  variables?: Record<string, unknown>,
  operationName?: string,
): Promise<GraphQLResponse> {
  let req = request(app).post('/graphql').set('Content-Type', 'application/json').set('Accept', 'application/json');
  if (token !== undefined) req = req.set('Authorization', `Bearer ${token}`);
  const res = await req.send(JSON.stringify({ query, variables, operationName }));
  return { status: res.status, headers: res.headers as Record<string, string>, body: res.body };
}

/** Runs through `execute()` (the REST layer's path) and returns a JSON-shaped result. */
export async function executeGraphQL(
  graphql: GraphQLService,
  principal: Principal,
  query: string,
  variables?: Record<string, unknown>,
): Promise<ExecutionResult> {
  return graphql.execute({ document: parse(query), variables, principal });
}
