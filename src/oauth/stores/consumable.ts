/**
 * The one "consume if unused" statement shared by authorization codes and refresh tokens (what
 * node-oidc-provider calls a consumable): a single UPDATE marks the row used only if it belongs
 * to the client, is unused, unexpired and its grant is not revoked, so two concurrent
 * redemptions cannot both succeed. Used as the first CTE of a larger statement.
 */
import { sql, type SQL } from 'drizzle-orm';
import { authorizationCodes, grants, refreshTokens } from '../../db/schema.js';

export interface Consumption {
  table: typeof authorizationCodes | typeof refreshTokens;
  /** The row's key: the SHA-256 of the presented code or token, in its hash column. */
  hashColumn: typeof authorizationCodes.codeHash | typeof refreshTokens.tokenHash;
  hash: string;
  clientId: string;
  /** Column list of the RETURNING clause (constant SQL, never user input). */
  returning: SQL;
  /** A further condition the row must meet (e.g. its DPoP key binding). */
  andAlso?: SQL;
}

/** `UPDATE … SET consumed_at = now() WHERE <the client's, unused, unexpired, live grant> RETURNING …`. */
export function consumeIfUnused({ table, hashColumn, hash, clientId, returning, andAlso }: Consumption): SQL {
  return sql`update ${table} set consumed_at = now()
    where ${hashColumn} = ${hash} and client_id = ${clientId}
      and consumed_at is null and expires_at > now()
      and not exists (select 1 from ${grants} g where g.id = ${table.grantId} and g.revoked_at is not null)
      ${andAlso ? sql`and ${andAlso}` : sql``}
    returning ${returning}`;
}
