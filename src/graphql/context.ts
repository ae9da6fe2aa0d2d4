/**
 * What every resolver receives: the authenticated caller and the database. One fresh object
 * per operation — plugin-drizzle keys its per-request caches on it.
 */
import type { Db } from '../db/database.js';
import type { RelationalQueryCache } from '../db/performance/relational-query-cache.js';
import type { PageTokens } from '../api/page-token.js';
import type { Logger } from '../logger.js';
import type { Principal } from '../tokens/access-token.js';
import { GqlUserRequired } from './errors.js';

export interface GraphQLContext {
  principal: Principal;
  db: Db;
  /** Relational queries kept built across requests (see relational-query-cache.ts). */
  queries: RelationalQueryCache;
  logger: Logger;
  /** Signs and checks list cursors / REST page tokens (see api/page-token.ts). */
  pageTokens: PageTokens;
  /** Root lists load one row past `limit` (see pagination.ts `page`); only the REST layer asks. */
  pageLookahead?: boolean;
}

/** The signed-in user the caller acts for; FORBIDDEN for a client acting for itself. */
export function userIdOf(context: GraphQLContext): number {
  if (context.principal.userId === null) throw new GqlUserRequired('orders');
  return context.principal.userId;
}
