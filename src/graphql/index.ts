import express from 'express';
import type { Runtime } from '../runtime.js';

export interface GraphQLService {
  /** Mounts /graphql. */
  router: express.Router;
}

export function createGraphQL(_runtime: Runtime): GraphQLService {
  return { router: express.Router() };
}
