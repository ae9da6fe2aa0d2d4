/**
 * Rotation retires a token and inserts its successor in one statement. A successor is HMAC(deployment key,
 * predecessor), so a retry within the grace window gets the same successor back instead of a second live branch;
 * without the key, a stolen retired token says nothing about its successor.
 */
import { eq, sql, type Placeholder, type SQL } from 'drizzle-orm';
import type { Db } from '../../db/database.js';
import { grants, refreshTokens } from '../../db/schema.js';
import { hmacSha256, randomToken, sha256 } from '../../crypto/secrets.js';
import { queryRows, toDate } from './rows.js';
import { consumeIfUnused, whileOwnerExists } from './consumable.js';

export interface RefreshTokenFamily {
  grantId: string;
  clientId: string;
  userId: number;
  scope: string;
  /** The grant's RFC 8707 resources (empty: the default audience), the most any refresh may ask for. */
  resources: string[];
}

/** A refresh token that could not be rotated keeps its binding in its record (RFC 9449 §5). */
export interface DpopBinding {
  dpopJkt: string | null;
}

export interface RotatedRefreshToken extends RefreshTokenFamily {
  refreshToken: string;
  authTime: number | null;
  /** The grant's OpenID `sid`, for the refreshed ID Token. */
  sid: string | null;
}

export interface RefreshTokenRecord extends RefreshTokenFamily, DpopBinding {
  createdAt: Date;
  expiresAt: Date;
  expired: boolean;
  consumed: boolean;
  grantRevoked: boolean;
  authTime: number | null;
  sid: string | null;
  /** The "lost response" retry the optional grace window forgives. */
  withinGrace: boolean;
}

/** A successor keeps its predecessor's binding; retiring the old credential and storing the new one is one statement. */
export function insertRefreshTokenFrom(
  source: SQL,
  token: { tokenHash: string | Placeholder; ttlSeconds: number | Placeholder; dpopJkt?: string | null | Placeholder },
): SQL {
  const dpopJkt = token.dpopJkt === undefined ? sql`dpop_jkt` : sql`${token.dpopJkt}`;
  return sql`insert into ${refreshTokens} (token_hash, grant_id, client_id, user_id, scope, dpop_jkt, expires_at)
    select ${token.tokenHash}, grant_id, client_id, user_id, scope, ${dpopJkt}, now() + make_interval(secs => ${token.ttlSeconds})
    from ${source}`;
}

export class RefreshTokenStore {
  constructor(
    private readonly db: Db,
    private readonly ttlSeconds: number,
    private readonly successorKey: string,
  ) {}

  private successorOf(token: string): string {
    return hmacSha256(this.successorKey, `refresh-token-successor:${token}`);
  }

  mint(dpopJkt: string | null = null): { token: string; tokenHash: string; ttlSeconds: number; dpopJkt: string | null } {
    const token = randomToken(32);
    return { token, tokenHash: sha256(token), ttlSeconds: this.ttlSeconds, dpopJkt };
  }

  async discard(token: string): Promise<void> {
    await this.db.delete(refreshTokens).where(eq(refreshTokens.tokenHash, sha256(token)));
  }

  /** Read only, so concurrent retries within the grace window agree and the family keeps one live branch. */
  async liveSuccessor(token: string): Promise<string | undefined> {
    const successor = this.successorOf(token);
    const [row] = await queryRows<{ live: number }>(
      this.db,
      sql`select 1 as live from ${refreshTokens} t join ${grants} g on g.id = t.grant_id
          where t.token_hash = ${sha256(successor)} and t.consumed_at is null
            and t.expires_at > now() and g.revoked_at is null`,
    );
    return row ? successor : undefined;
  }

  /**
   * A DPoP-bound token rotates only with its key (RFC 9449 §5). `bindSuccessor` binds the successor to `dpopJkt` even
   * when the token was not bound: a public client that sends a proof gets a bound refresh token whatever it held before.
   */
  async rotate(
    token: string,
    clientId: string,
    { dpopJkt, bindSuccessor = false }: { dpopJkt?: string | undefined; bindSuccessor?: boolean } = {},
  ): Promise<RotatedRefreshToken | undefined> {
    const successor = this.successorOf(token);
    const rotation = () => queryRows<{ grant_id: string; client_id: string; user_id: number; scope: string; auth_time: number | null; resources: string[] | null; sid: string | null }>(
      this.db,
      sql`
        with retired as (${consumeIfUnused({
          hash: sha256(token),
          clientId,
          returning: sql.raw('grant_id, client_id, user_id, scope, dpop_jkt'),
          andAlso: sql`(dpop_jkt is null or dpop_jkt = ${dpopJkt ?? null})`,
        })}), touched as (
          update ${grants} set last_used_at = now() where id = (select grant_id from retired)
          returning extract(epoch from auth_time)::float8 as auth_time, resources, sid
        ), issued as (
          ${insertRefreshTokenFrom(sql`retired`, {
            tokenHash: sha256(successor),
            ttlSeconds: this.ttlSeconds,
            ...(bindSuccessor && dpopJkt !== undefined ? { dpopJkt } : {}),
          })}
          returning grant_id, client_id, user_id, scope
        )
        select grant_id, client_id, user_id, scope, (select auth_time from touched) as auth_time, (select resources from touched) as resources,
               (select sid from touched) as sid
        from issued`,
    );
    const [row] = await whileOwnerExists(rotation);
    if (!row) return undefined;
    return {
      refreshToken: successor,
      grantId: row.grant_id,
      clientId: row.client_id,
      userId: row.user_id,
      scope: row.scope,
      authTime: row.auth_time === null ? null : Math.floor(Number(row.auth_time)),
      resources: row.resources ?? [],
      sid: row.sid,
    };
  }

  async find(token: string, graceSeconds = 0): Promise<RefreshTokenRecord | undefined> {
    const [row] = await queryRows<{
      grant_id: string;
      client_id: string;
      user_id: number;
      scope: string;
      created_at: Date | string;
      expires_at: Date | string;
      expired: boolean;
      consumed: boolean;
      grant_revoked: boolean;
      auth_time: number | null;
      sid: string | null;
      within_grace: boolean;
      dpop_jkt: string | null;
      resources: string[] | null;
    }>(
      this.db,
      sql`
        select t.grant_id, t.client_id, t.user_id, t.scope, t.created_at, t.expires_at, t.dpop_jkt, g.resources,
               t.expires_at <= now() as expired,
               t.consumed_at is not null as consumed,
               g.revoked_at is not null as grant_revoked, extract(epoch from g.auth_time)::float8 as auth_time, g.sid,
               (t.consumed_at is not null
                and t.consumed_at > now() - make_interval(secs => ${graceSeconds})
                and not exists (select 1 from ${refreshTokens} later
                                where later.grant_id = t.grant_id and later.consumed_at > t.consumed_at)) as within_grace
        from ${refreshTokens} t join ${grants} g on g.id = t.grant_id
        where t.token_hash = ${sha256(token)}`,
    );
    if (!row) return undefined;
    return {
      grantId: row.grant_id,
      clientId: row.client_id,
      userId: row.user_id,
      scope: row.scope,
      resources: row.resources ?? [],
      createdAt: toDate(row.created_at),
      expiresAt: toDate(row.expires_at),
      expired: row.expired,
      consumed: row.consumed,
      grantRevoked: row.grant_revoked,
      authTime: row.auth_time === null ? null : Math.floor(Number(row.auth_time)),
      sid: row.sid,
      withinGrace: graceSeconds > 0 && row.within_grace,
      dpopJkt: row.dpop_jkt,
    };
  }

  async scopeOf(token: string): Promise<{ clientId: string; scope: string; resources: string[]; consumed: boolean } | undefined> {
    const [row] = await this.db
      .select({
        clientId: refreshTokens.clientId,
        scope: refreshTokens.scope,
        resources: grants.resources,
        consumed: sql<boolean>`${refreshTokens.consumedAt} is not null`,
      })
      .from(refreshTokens)
      .innerJoin(grants, eq(grants.id, refreshTokens.grantId))
      .where(eq(refreshTokens.tokenHash, sha256(token)));
    return row;
  }
}
