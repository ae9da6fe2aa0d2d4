/**
 * The one "consume if unused" UPDATE of codes and refresh tokens (node-oidc-provider's consumable): one statement,
 * so two concurrent redemptions cannot both succeed.
 */
import { sql, type Placeholder, type SQL } from 'drizzle-orm';
import { authorizationCodes, grants, refreshTokens } from '../../db/schema.js';

export interface Consumption {
  table: typeof authorizationCodes | typeof refreshTokens;
  hashColumn: typeof authorizationCodes.codeHash | typeof refreshTokens.tokenHash;
  hash: string | Placeholder;
  clientId: string | Placeholder;
  /** Column list of the RETURNING clause (constant SQL, never user input). */
  returning: SQL;
  andAlso?: SQL;
}

export function consumeIfUnused({ table, hashColumn, hash, clientId, returning, andAlso }: Consumption): SQL {
  return sql`update ${table} set consumed_at = now()
    where ${hashColumn} = ${hash} and client_id = ${clientId}
      and consumed_at is null and expires_at > now()
      and not exists (select 1 from ${grants} g where g.id = ${table.grantId} and g.revoked_at is not null)
      ${andAlso ? sql`and ${andAlso}` : sql``}
    returning ${returning}`;
}
