import express from 'express';
import type { Runtime } from '../runtime.js';
import type { GraphQLService } from '../graphql/index.js';

/** The REST compatibility layer, translated into GraphQL operations. */
export function createRestRouter(_runtime: Runtime, _graphql: GraphQLService): express.Router {
  return express.Router();
}
