/**
 * Deletes rows nothing needs any more, in bounded batches so no statement holds many locks or
 * runs long: expired authorization codes, device codes and refresh tokens (used or not) once `retentionSeconds`
 * have passed since they expired, grants left with neither, revoked grants once
 * `retentionSeconds` have passed since their revocation, revoked access tokens past their expiry
 * and stale login-throttle counters.
 *
 * What this keeps, and why:
 * - A used code is kept until it has expired (plus the retention): a replay until then is still
 *   recognised and revokes its grant.
 * - A rotated refresh token is kept until it has expired (plus the retention): presenting it
 *   again until then still counts as reuse and revokes its family.
 * - The retention is never less than ACCESS_TOKEN_TTL: access tokens carry their grant id, and a
 *   revoked grant's row is what makes them fail, so it must outlive every token issued under it;
 *   likewise a grant stays while an access token issued with its last code or refresh token may
 *   still be live, so revoking the consent still reaches it.
 *
 * Each batch runs in its own transaction holding a PostgreSQL advisory lock: of several
 * instances sweeping at once, one deletes and the others stop (`skipped`). Rows are also picked
 * with SKIP LOCKED, so a sweep never waits on rows a request is updating.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { Config } from '../config.js';
import type { Db } from '../db/database.js';
import { authorizationCodes, deviceCodes, grants, loginThrottle, refreshTokens, revokedAccessTokens } from '../db/schema.js';
import { DEFAULT_LOGIN_THROTTLE_POLICY } from './browser/login-throttle.js';
import { queryRows } from './stores/rows.js';

/** Key of the advisory lock held by the batch being swept ("fiem", next to the migration lock's "fiel"). */
export const JANITOR_LOCK_KEY = 0x6669656d;

export interface JanitorPolicy {
  /** Seconds a row is kept after it expired or was revoked (raised to `accessTokenTtl`). */
  retentionSeconds: number;
  accessTokenTtl: number;
  /** Most rows one statement deletes. */
  batchSize: number;
}

export function janitorPolicy(config: Config): JanitorPolicy {
  return { retentionSeconds: config.janitorRetention, accessTokenTtl: config.accessTokenTtl, batchSize: config.janitorBatchSize };
}

export interface SweepResult {
  authorizationCodes: number;
  deviceCodes: number;
  refreshTokens: number;
  grants: number;
  revokedAccessTokens: number;
  loginThrottle: number;
  /** True when another instance held the lock, so this sweep stopped early. */
  skipped: boolean;
}

/** Stale counters restart on the next failure anyway, so deleting them changes nothing. */
const THROTTLE_STALE_SECONDS = Math.max(
  DEFAULT_LOGIN_THROTTLE_POLICY.account.windowSeconds,
  DEFAULT_LOGIN_THROTTLE_POLICY.ip.windowSeconds,
);

interface Target {
  name: Exclude<keyof SweepResult, 'skipped'>;
  /** `delete … returning 1` of at most `limit` due rows. */
  statement(retention: SQL, limit: number): SQL;
}

/** Deletes up to `limit` rows of `table` whose `expires_at` passed more than `retention` ago. */
function expiredRows(table: typeof authorizationCodes | typeof refreshTokens | typeof deviceCodes, key: string): Target['statement'] {
  return (retention, limit) => sql`
      delete from ${table} where ${sql.identifier(key)} in (
        select ${sql.identifier(key)} from ${table} where expires_at < now() - ${retention}
        limit ${limit} for update skip locked)
      returning 1`;
}

const TARGETS: Target[] = [
  { name: 'authorizationCodes', statement: expiredRows(authorizationCodes, 'code_hash') },
  { name: 'refreshTokens', statement: expiredRows(refreshTokens, 'token_hash') },
  // Kept past expiry like codes, so a late poll still hears expired_token rather than invalid_grant.
  { name: 'deviceCodes', statement: expiredRows(deviceCodes, 'device_code_hash') },
  {
    // Codes and refresh tokens go first, so a grant whose last ones just went goes in the same sweep.
    name: 'grants',
    statement: (retention, limit) => sql`
      delete from ${grants} where id in (
        select g.id from ${grants} g
        where (g.revoked_at is not null and g.revoked_at < now() - ${retention})
           or (g.revoked_at is null and g.created_at < now() - ${retention}
               and not exists (select 1 from ${authorizationCodes} c where c.grant_id = g.id)
               and not exists (select 1 from ${refreshTokens} t where t.grant_id = g.id))
        limit ${limit} for update skip locked)
      returning 1`,
  },
  {
    name: 'revokedAccessTokens',
    statement: (_retention, limit) => sql`
      delete from ${revokedAccessTokens} where jti in (
        select jti from ${revokedAccessTokens} where expires_at < now()
        limit ${limit} for update skip locked)
      returning 1`,
  },
  {
    name: 'loginThrottle',
    statement: (_retention, limit) => sql`
      delete from ${loginThrottle} where key in (
        select key from ${loginThrottle}
        where window_started_at < now() - make_interval(secs => ${THROTTLE_STALE_SECONDS})
          and (locked_until is null or locked_until < now())
        limit ${limit} for update skip locked)
      returning 1`,
  },
];

/** One batch under the advisory lock: the rows deleted, or undefined when another sweep holds the lock. */
async function deleteBatch(db: Db, statement: SQL): Promise<number | undefined> {
  return db.transaction(async (tx) => {
    const [lock] = await queryRows<{ locked: boolean }>(tx as unknown as Db, sql`select pg_try_advisory_xact_lock(${JANITOR_LOCK_KEY}) as locked`);
    if (!lock?.locked) return undefined;
    return (await queryRows<unknown>(tx as unknown as Db, statement)).length;
  });
}

/** Deletes everything due, batch by batch, until nothing is left or another instance is sweeping. */
export async function sweep(db: Db, policy: JanitorPolicy): Promise<SweepResult> {
  const retention = sql`make_interval(secs => ${Math.max(policy.retentionSeconds, policy.accessTokenTtl)})`;
  const result: SweepResult = { authorizationCodes: 0, deviceCodes: 0, refreshTokens: 0, grants: 0, revokedAccessTokens: 0, loginThrottle: 0, skipped: false };
  for (const target of TARGETS) {
    for (;;) {
      const deleted = await deleteBatch(db, target.statement(retention, policy.batchSize));
      if (deleted === undefined) return { ...result, skipped: true };
      result[target.name] += deleted;
      if (deleted < policy.batchSize) break;
    }
  }
  return result;
}

/** Total rows a sweep deleted. */
export function sweptRows(result: SweepResult): number {
  return result.authorizationCodes + result.deviceCodes + result.refreshTokens + result.grants + result.revokedAccessTokens + result.loginThrottle;
}
