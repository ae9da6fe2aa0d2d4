/** A consent only grows: allowing more scopes adds them, so scopes already allowed are not asked again. */
import { and, eq, inArray, sql } from 'drizzle-orm';
import type { PgAsyncRaw } from 'drizzle-orm/pg-core/async/raw';
import type { Db } from '../../db/database.js';
import { clients, consents, grants, users } from '../../db/schema.js';
import { formatScope, parseScope } from '../scopes.js';
import { queryRows, rowsOf, toDate } from './rows.js';
import { isForeignKeyViolation } from '../../db/errors.js';
import { notEnded, type SessionCheck } from './ended-sessions.js';
import { withdrawDeviceApprovals } from './device-codes.js';

export interface SignedInUser {
  userId: number;
  username: string;
  consentedScopes: ReadonlySet<string>;
}

/**
 * The signed-in user and their consent to one client, read on every /authorize: built once with placeholders, so Drizzle
 * binds values instead of assembling the text per request (see stores/codes.ts).
 */
function signedInStatement(db: Db) {
  const p = sql.placeholder;
  return db.execute(sql`select u.id, u.username, c.scope
    from ${users} u left join ${consents} c on c.user_id = u.id and c.client_id = ${p('clientId')}
    where u.id = ${p('userId')} and u.session_epoch = ${p('sessionEpoch')} and ${notEnded(p('sessionId'))}`) as PgAsyncRaw<unknown>;
}

export class ConsentStore {
  private readonly signedIn: ReturnType<typeof signedInStatement>;

  constructor(private readonly db: Db) {
    this.signedIn = signedInStatement(db);
  }

  backchannelLogoutTargets(userId: number) {
    return queryRows<{
      id: string;
      subject_type: string;
      redirect_uris: string[];
      backchannel_logout_uri: string;
      backchannel_logout_session_required: boolean;
      id_token_signed_response_alg: string | null;
    }>(
      this.db,
      sql`select cl.id, cl.subject_type, cl.redirect_uris, cl.backchannel_logout_uri, cl.backchannel_logout_session_required,
                 cl.id_token_signed_response_alg
          from ${consents} c join ${clients} cl on cl.id = c.client_id
          where c.user_id = ${userId} and cl.backchannel_logout_uri is not null`,
    );
  }

  /**
   * Which of `sids` (each a client's `sid` of one browser session, see session-id.ts) name a grant of the user: the clients
   * that took part in that session. A `sid` is unique to its client, so it alone says which.
   */
  async sessionsWithGrants(userId: number, sids: string[]): Promise<Set<string>> {
    if (sids.length === 0) return new Set();
    const rows = await this.db
      .selectDistinct({ sid: grants.sid })
      .from(grants)
      .where(and(eq(grants.userId, userId), inArray(grants.sid, sids)));
    return new Set(rows.map((row) => row.sid!));
  }

  /** The allowed clients that asked to be told in the browser (Front-Channel Logout 1.0). */
  frontchannelLogoutTargets(userId: number) {
    return queryRows<{ id: string; frontchannel_logout_uri: string; frontchannel_logout_session_required: boolean }>(
      this.db,
      sql`select cl.id, cl.frontchannel_logout_uri, cl.frontchannel_logout_session_required
          from ${consents} c join ${clients} cl on cl.id = c.client_id
          where c.user_id = ${userId} and cl.frontchannel_logout_uri is not null
          order by cl.id`,
    );
  }

  /** One query; a session outliving its account, or signed out, reads as signed out. */
  async lookup(session: SessionCheck, clientId: string): Promise<SignedInUser | undefined> {
    const [row] = rowsOf<{ id: number; username: string; scope: string | null }>(
      await this.signedIn.execute({ clientId, userId: session.userId, sessionEpoch: session.epoch, sessionId: session.sid }),
    );
    if (!row) return undefined;
    return { userId: row.id, username: row.username, consentedScopes: new Set(parseScope(row.scope)) };
  }

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
        if (isForeignKeyViolation(error)) return false;
        throw error;
      },
    );
  }

  async connectedApps(userId: number): Promise<ConnectedApp[]> {
    const rows = await queryRows<{ client_id: string; name: string; redirect_uris: string[]; scope: string; updated_at: Date | string; last_used_at: Date | string | null }>(
      this.db,
      sql`select c.client_id, cl.name, cl.redirect_uris, c.scope, c.updated_at,
                 (select max(g.last_used_at) from ${grants} g where g.user_id = c.user_id and g.client_id = c.client_id) as last_used_at
          from ${consents} c join ${clients} cl on cl.id = c.client_id
          where c.user_id = ${userId}
          order by last_used_at desc nulls last, c.updated_at desc`,
    );
    return rows.map((r) => ({
      clientId: r.client_id,
      clientName: r.name,
      redirectUris: r.redirect_uris,
      scope: r.scope,
      allowedAt: toDate(r.updated_at),
      lastUsedAt: r.last_used_at === null ? null : toDate(r.last_used_at),
    }));
  }

  /**
   * Refresh tokens and approved device codes stop at once, access tokens within the revocation cache time. Returns the
   * revoked grant ids for the caller's revocation cache.
   */
  async revokeApp(userId: number, clientId: string): Promise<{ consentDeleted: boolean; grantIds: string[] }> {
    return this.db.transaction(async (tx) => {
      await withdrawDeviceApprovals(tx, sql`user_id = ${userId} and client_id = ${clientId}`);
      const rows = await queryRows<{ consent_deleted: boolean; grant_id: string | null }>(
        tx,
        sql`with deleted as (
              delete from ${consents} where user_id = ${userId} and client_id = ${clientId} returning 1
            ), revoked as (
              update ${grants} set revoked_at = now()
              where user_id = ${userId} and client_id = ${clientId} and revoked_at is null
              returning id
            )
            select exists(select 1 from deleted) as consent_deleted, r.id as grant_id
            from (select 1) one left join revoked r on true`,
      );
      return { consentDeleted: Boolean(rows[0]?.consent_deleted), grantIds: rows.flatMap((r) => (r.grant_id === null ? [] : [r.grant_id])) };
    });
  }

  async list(filter: { username?: string; clientId?: string } = {}): Promise<ConsentRecord[]> {
    const rows = await queryRows<{ username: string; user_id: number; client_id: string; client_name: string; scope: string; updated_at: Date | string; live_grants: number }>(
      this.db,
      sql`select u.username, c.user_id, c.client_id, cl.name as client_name, c.scope, c.updated_at,
                 (select count(*)::int from ${grants} g
                  where g.user_id = c.user_id and g.client_id = c.client_id and g.revoked_at is null) as live_grants
          from ${consents} c join ${users} u on u.id = c.user_id join ${clients} cl on cl.id = c.client_id
          where (${filter.username ?? null}::text is null or u.username = ${filter.username ?? null})
            and (${filter.clientId ?? null}::text is null or c.client_id = ${filter.clientId ?? null})
          order by u.username, c.client_id`,
    );
    return rows.map((r) => ({
      username: r.username,
      userId: r.user_id,
      clientId: r.client_id,
      clientName: r.client_name,
      scope: r.scope,
      updatedAt: toDate(r.updated_at),
      liveGrants: r.live_grants,
    }));
  }

  /** `fieldgate consent revoke`: as Revoke on /account (revokeApp), by user name; undefined when there is no such user. */
  async revoke(username: string, clientId: string): Promise<{ consentDeleted: boolean; grantsRevoked: number } | undefined> {
    const [user] = await this.db.select({ id: users.id }).from(users).where(eq(users.username, username.trim()));
    if (!user) return undefined;
    const { consentDeleted, grantIds } = await this.revokeApp(user.id, clientId);
    return { consentDeleted, grantsRevoked: grantIds.length };
  }
}

export interface ConnectedApp {
  clientId: string;
  clientName: string;
  redirectUris: string[];
  scope: string;
  allowedAt: Date;
  lastUsedAt: Date | null;
}

export interface ConsentRecord {
  username: string;
  userId: number;
  clientId: string;
  clientName: string;
  scope: string;
  updatedAt: Date;
  liveGrants: number;
}
