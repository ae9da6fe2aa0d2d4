/**
 * Deletes rows nothing needs any more, in bounded batches. Rotated refresh tokens stay until expiry plus the retention, so
 * a replay still revokes its grant; the retention is never below ACCESS_TOKEN_TTL, since a revoked grant's row is what
 * makes its access tokens fail. A grant stays at least as long as an authorization code lives (AUTH_CODE_TTL), revoked
 * or not: its row is the mark that its code was used (stores/codes.ts). An advisory lock and SKIP LOCKED keep a sweep
 * from ever waiting on a request.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { Config } from '../config.js';
import type { Db } from '../db/database.js';
import { grants, loginThrottle, refreshTokens, revokedAccessTokens, usedJtis, idempotencyKeys, clients, consents, deviceCodes, endedSessions } from '../db/schema.js';
import { POLICY } from '../policy.js';
import { queryRows } from './stores/rows.js';

/** Key of the advisory lock held by the batch being swept ("fiem", next to the migration lock's "fiel"). */
export const JANITOR_LOCK_KEY = 0x6669656d;

export interface JanitorPolicy {
  retentionSeconds: number;
  accessTokenTtl: number;
  authCodeTtl: number;
  batchSize: number;
  dynamicClientTtl?: number;
}

export function janitorPolicy(config: Config): JanitorPolicy {
  return {
    retentionSeconds: config.janitorRetention,
    accessTokenTtl: config.accessTokenTtl,
    authCodeTtl: config.authCodeTtl,
    batchSize: config.janitorBatchSize,
    dynamicClientTtl: config.dynamicClientTtl,
  };
}

export interface SweepResult {
  deviceCodes: number;
  refreshTokens: number;
  grants: number;
  revokedAccessTokens: number;
  loginThrottle: number;
  usedJtis: number;
  endedSessions: number;
  idempotencyKeys: number;
  unusedClients: number;
  skipped: boolean;
}

/** Stale counters restart on the next failure anyway, so deleting them changes nothing. */
const THROTTLE_STALE_SECONDS = Math.max(POLICY.loginThrottle.value.account.windowSeconds, POLICY.loginThrottle.value.ip.windowSeconds);

interface Target {
  name: Exclude<keyof SweepResult, 'skipped'>;
  statement(retention: SQL, limit: number, policy: JanitorPolicy): SQL | undefined;
}

function expiredRows(table: typeof refreshTokens | typeof deviceCodes | typeof endedSessions, key: string): Target['statement'] {
  return (retention, limit) => sql`
      delete from ${table} where ${sql.identifier(key)} in (
        select ${sql.identifier(key)} from ${table} where expires_at < now() - ${retention}
        limit ${limit} for update skip locked)
      returning 1`;
}

const TARGETS: Target[] = [
  { name: 'refreshTokens', statement: expiredRows(refreshTokens, 'token_hash') },
  // Kept past expiry like refresh tokens, so a late poll still hears expired_token rather than invalid_grant.
  { name: 'deviceCodes', statement: expiredRows(deviceCodes, 'device_code_hash') },
  {
    // Refresh tokens go first, so a grant whose last ones just went goes in the same sweep. A grant younger than a code's
    // lifetime stays, so that its code presented again is still seen as a replay.
    name: 'grants',
    statement: (retention, limit, policy) => sql`
      delete from ${grants} where id in (
        select g.id from ${grants} g
        where g.created_at < now() - make_interval(secs => ${policy.authCodeTtl})
          and ((g.revoked_at is not null and g.revoked_at < now() - ${retention})
            or (g.revoked_at is null and g.created_at < now() - ${retention}
                and not exists (select 1 from ${refreshTokens} t where t.grant_id = g.id)))
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
    name: 'usedJtis',
    statement: (_retention, limit) => sql`
      delete from ${usedJtis} where (signer, jti_hash) in (
        select signer, jti_hash from ${usedJtis} where expires_at < now()
        limit ${limit} for update skip locked)
      returning 1`,
  },
  // Past its expiry a cookie is refused by its own expiresAt (browser/session.ts), checked on the app's clock; the
  // retention keeps the row past the database's, so an instance whose clock lags it cannot take a copy back.
  { name: 'endedSessions', statement: expiredRows(endedSessions, 'sid') },
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
  {
    // A key replays its first answer until it expires; after that it is free for a new request anyway.
    name: 'idempotencyKeys',
    statement: (_retention, limit) => sql`
      delete from ${idempotencyKeys} where (user_id, client_id, key) in (
        select user_id, client_id, key from ${idempotencyKeys} where expires_at < now()
        limit ${limit} for update skip locked)
      returning 1`,
  },
  {
    name: 'unusedClients',
    statement: (_retention, limit, policy) =>
      policy.dynamicClientTtl
        ? sql`
      delete from ${clients} where id in (
        select c.id from ${clients} c
        where c.registration_type in ('dynamic', 'metadata_document')
          and c.created_at < now() - make_interval(secs => ${policy.dynamicClientTtl})
          and not exists (select 1 from ${consents} k where k.client_id = c.id)
          and not exists (select 1 from ${grants} g where g.client_id = c.id)
        limit ${limit} for update skip locked)
      returning 1`
        : undefined,
  },
];

async function deleteBatch(db: Db, statement: SQL): Promise<number | undefined> {
  return db.transaction(async (tx) => {
    const [lock] = await queryRows<{ locked: boolean }>(tx, sql`select pg_try_advisory_xact_lock(${JANITOR_LOCK_KEY}) as locked`);
    if (!lock?.locked) return undefined;
    return (await queryRows<unknown>(tx, statement)).length;
  });
}

export async function sweep(db: Db, policy: JanitorPolicy): Promise<SweepResult> {
  const retention = sql`make_interval(secs => ${Math.max(policy.retentionSeconds, policy.accessTokenTtl)})`;
  const result: SweepResult = { deviceCodes: 0, refreshTokens: 0, grants: 0, revokedAccessTokens: 0, loginThrottle: 0, usedJtis: 0, endedSessions: 0, idempotencyKeys: 0, unusedClients: 0, skipped: false };
  for (const target of TARGETS) {
    for (;;) {
      const statement = target.statement(retention, policy.batchSize, policy);
      if (statement === undefined) break;
      const deleted = await deleteBatch(db, statement);
      if (deleted === undefined) return { ...result, skipped: true };
      result[target.name] += deleted;
      if (deleted < policy.batchSize) break;
    }
  }
  return result;
}

export function sweptRows(result: SweepResult): number {
  return result.deviceCodes + result.refreshTokens + result.grants + result.revokedAccessTokens + result.loginThrottle + result.usedJtis + result.endedSessions + result.idempotencyKeys + result.unusedClients;
}
