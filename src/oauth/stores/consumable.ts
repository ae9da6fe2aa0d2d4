/**
 * The one "consume if unused" UPDATE of refresh tokens (node-oidc-provider's consumable): one statement, so two
 * concurrent redemptions cannot both succeed.
 */
import { sql, type Placeholder, type SQL } from 'drizzle-orm';
import { grants, refreshTokens } from '../../db/schema.js';
import { isDeadlock, isForeignKeyViolation } from '../../db/errors.js';

export interface Consumption {
  hash: string | Placeholder;
  clientId: string | Placeholder;
  /** Column list of the RETURNING clause (constant SQL, never user input). */
  returning: SQL;
  andAlso?: SQL;
}

export function consumeIfUnused({ hash, clientId, returning, andAlso }: Consumption): SQL {
  return sql`update ${refreshTokens} set consumed_at = now()
    where ${refreshTokens.tokenHash} = ${hash} and client_id = ${clientId}
      and consumed_at is null and expires_at > now()
      and not exists (select 1 from ${grants} g where g.id = ${refreshTokens.grantId} and g.revoked_at is not null)
      ${andAlso ? sql`and ${andAlso}` : sql``}
    returning ${returning}`;
}

/**
 * Runs a redemption that also issues a refresh token (or creates a code's grant), answering no rows when the grant's
 * user or client is deleted while it runs: the successor's foreign key to the grant (or the new grant's) then fails, or PostgreSQL aborts it as a deadlock with the delete's
 * cascade (the redemption locks the credential, then the grant; the cascade the grant, then the credentials). A
 * deadlock is tried once more, as it may have had another cause; an aborted statement consumed nothing.
 */
export async function whileOwnerExists<T>(redemption: () => Promise<T[]>): Promise<T[]> {
  const gone = (error: unknown): T[] => {
    if (isForeignKeyViolation(error) || isDeadlock(error)) return [];
    throw error;
  };
  return redemption().catch((error: unknown) => (isDeadlock(error) ? redemption().catch(gone) : gone(error)));
}
