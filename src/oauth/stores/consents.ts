/**
 * What each user has allowed each client. A consent only grows: allowing more scopes later
 * adds them to what was allowed before, so a request for scopes already allowed is not asked again.
 */
import { sql } from 'drizzle-orm';
import type { Db } from '../../db/database.js';
import { consents, users } from '../../db/schema.js';
import { formatScope, parseScope } from '../scopes.js';
import { queryRows } from './rows.js';
import { isForeignKeyViolation } from '../../db/errors.js';

export interface SignedInUser {
  userId: number;
  username: string;
  /** Scopes this user has already allowed the client. */
  consentedScopes: ReadonlySet<string>;
}

export class ConsentStore {
  constructor(private readonly db: Db) {}

  /**
   * The user (if the account still exists) and what they have allowed `clientId`, in one query:
   * a session outliving its account reads as signed out.
   */
  async lookup(userId: number, clientId: string): Promise<SignedInUser | undefined> {
    const [row] = await queryRows<{ id: number; username: string; scope: string | null }>(
      this.db,
      sql`select u.id, u.username, c.scope
          from ${users} u left join ${consents} c on c.user_id = u.id and c.client_id = ${clientId}
          where u.id = ${userId}`,
    );
    if (!row) return undefined;
    return { userId: row.id, username: row.username, consentedScopes: new Set(parseScope(row.scope)) };
  }

  /** Records that `userId` allows `clientId` the given scopes (added to any allowed before); false if either no longer exists. */
  async grant(userId: number, clientId: string, scopes: readonly string[]): Promise<boolean> {
    return this.db.execute(sql`
      insert into ${consents} (user_id, client_id, scope) values (${userId}, ${clientId}, ${formatScope(scopes)})
      on conflict (user_id, client_id) do update set
        scope = array_to_string(array(
          select distinct s from unnest(string_to_array(${consents.scope}, ' ') || string_to_array(excluded.scope, ' ')) s
          where s <> '' order by s), ' '),
        updated_at = now()`).then(
      () => true,
      (error: unknown) => {
        // The account or the client was deleted meanwhile: nothing to record.
        if (isForeignKeyViolation(error)) return false;
        throw error;
      },
    );
  }
}
