/**
 * Device authorization requests (RFC 8628). Redeeming is one statement, so of concurrent polls exactly one gets the
 * tokens; a poll records itself under a row lock, so concurrent too-fast polls each see the one before them.
 */
import { randomInt } from 'node:crypto';
import { and, eq, gt, inArray, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../../db/database.js';
import { deviceCodes, grants } from '../../db/schema.js';
import { isForeignKeyViolation } from '../../db/errors.js';
import { randomToken, sha256 } from '../../crypto/secrets.js';
import { insertRefreshTokenFrom } from './refresh-tokens.js';
import type { NewRefreshToken } from './codes.js';
import { queryRows } from './rows.js';

/** The twenty consonants of RFC 8628 §6.1's example: no vowels, so no words, and no digits to mistake for letters. */
export const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
export const USER_CODE_LENGTH = 8;
/** Seconds a client must wait between polls (RFC 8628 §3.2 `interval`), until slow_down raises it. */
export const POLLING_INTERVAL_SECONDS = 5;
export const SLOW_DOWN_SECONDS = 5;
/**
 * How much sooner than its interval a poll may arrive and still count as waiting it: a client that waits its interval
 * between requests sees the arrivals drift by network and queueing delay, and should not be slowed down for that.
 */
export const POLL_ARRIVAL_TOLERANCE_SECONDS = 1;

export function generateUserCode(): string {
  let code = '';
  for (let i = 0; i < USER_CODE_LENGTH; i++) code += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)];
  return code;
}

/**
 * Approvals not yet redeemed, withdrawn where the user's grants are revoked (the app revoked, the password changed): the
 * device then hears access_denied instead of getting tokens. In a statement of its own and before the grants: it waits
 * for a redemption under way, whose new grant the revoking statement after it then sees.
 */
export async function withdrawDeviceApprovals(db: Pick<Db, 'execute'>, owner: SQL): Promise<void> {
  await db.execute(sql`update ${deviceCodes} set status = 'denied' where status = 'approved' and ${owner}`);
}

export function formatUserCode(code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

/**
 * A typed user code in its stored form, or undefined when it cannot be one of ours (so it costs no lookup). RFC 8628
 * §6.1: case, spaces and punctuation are no part of the code, whichever dash or dot a phone or a paste put there;
 * NFKC turns full-width letters into ours. Other letters and digits stay, and make the code invalid.
 */
export function normalizeUserCode(input: string): string | undefined {
  if (input.length > 32) return undefined;
  const code = input
    .normalize('NFKC')
    .replace(/[a-z]/g, (char) => char.toUpperCase())
    .replace(/[^\p{L}\p{N}]/gu, '');
  if (code.length !== USER_CODE_LENGTH) return undefined;
  for (const char of code) if (!USER_CODE_ALPHABET.includes(char)) return undefined;
  return code;
}

export interface IssuedDeviceCode {
  deviceCode: string;
  userCode: string;
  expiresIn: number;
  interval: number;
}

export interface PendingDeviceCode {
  clientId: string;
  scope: string;
}

export interface RedeemedDeviceCode {
  grantId: string;
  userId: number;
  scope: string;
  /** RFC 8707 resources of the device authorization request, now the grant's; empty: the default audience. */
  resources: string[];
}

export interface DevicePoll {
  status: (typeof deviceCodes.$inferSelect)['status'];
  expired: boolean;
  tooFast: boolean;
  interval: number;
}

/** Attempts at a user code nobody holds yet; a collision is one in 2.5e10 per live code. */
const USER_CODE_ATTEMPTS = 5;

export class DeviceCodeStore {
  constructor(
    private readonly db: Db,
    private readonly ttlSeconds: number,
  ) {}

  /** `resources`: the RFC 8707 resources of the request, already resolved; empty for the default audience. */
  async issue(clientId: string, scope: string, resources: readonly string[] = []): Promise<IssuedDeviceCode> {
    const deviceCode = randomToken(32);
    for (let attempt = 0; attempt < USER_CODE_ATTEMPTS; attempt++) {
      const userCode = generateUserCode();
      const inserted = await this.db
        .insert(deviceCodes)
        .values({
          deviceCodeHash: sha256(deviceCode),
          userCodeHash: sha256(userCode),
          clientId,
          scope,
          resources: [...resources],
          intervalSeconds: POLLING_INTERVAL_SECONDS,
          expiresAt: sql`now() + make_interval(secs => ${this.ttlSeconds})`,
        })
        .onConflictDoNothing({ target: deviceCodes.userCodeHash })
        .returning({ hash: deviceCodes.deviceCodeHash });
      if (inserted.length > 0) return { deviceCode, userCode, expiresIn: this.ttlSeconds, interval: POLLING_INTERVAL_SECONDS };
    }
    throw new Error('could not find a free user code');
  }

  async findPending(userCode: string): Promise<PendingDeviceCode | undefined> {
    const [row] = await this.db
      .select({ clientId: deviceCodes.clientId, scope: deviceCodes.scope })
      .from(deviceCodes)
      .where(and(eq(deviceCodes.userCodeHash, sha256(userCode)), eq(deviceCodes.status, 'pending'), gt(deviceCodes.expiresAt, sql`now()`)));
    return row;
  }

  async decide(userCode: string, clientId: string, userId: number, decision: 'approved' | 'denied'): Promise<PendingDeviceCode | undefined> {
    try {
      const [row] = await this.db
        .update(deviceCodes)
        .set({ status: decision, userId })
        .where(
          and(
            eq(deviceCodes.userCodeHash, sha256(userCode)),
            eq(deviceCodes.clientId, clientId),
            eq(deviceCodes.status, 'pending'),
            gt(deviceCodes.expiresAt, sql`now()`),
          ),
        )
        .returning({ clientId: deviceCodes.clientId, scope: deviceCodes.scope });
      return row;
    } catch (error) {
      if (isForeignKeyViolation(error)) return undefined;
      throw error;
    }
  }

  /**
   * The resources of a device code this client may still redeem (pending or approved, not expired), read before
   * redeeming it (RFC 8707 §2.2); undefined for any other code, which the poll then answers for what it is.
   */
  async requestedResources(deviceCode: string, clientId: string): Promise<string[] | undefined> {
    const [row] = await this.db
      .select({ resources: deviceCodes.resources })
      .from(deviceCodes)
      .where(
        and(
          eq(deviceCodes.deviceCodeHash, sha256(deviceCode)),
          eq(deviceCodes.clientId, clientId),
          inArray(deviceCodes.status, ['pending', 'approved']),
          gt(deviceCodes.expiresAt, sql`now()`),
        ),
      );
    return row?.resources;
  }

  async redeem(deviceCode: string, clientId: string, refreshToken?: NewRefreshToken): Promise<RedeemedDeviceCode | undefined> {
    const grantId = randomToken(16);
    try {
      const [row] = await queryRows<{ grant_id: string; user_id: number; scope: string; resources: string[] | null }>(
        this.db,
        sql`
          with redeemed as (
            update ${deviceCodes} set status = 'consumed'
            where device_code_hash = ${sha256(deviceCode)} and client_id = ${clientId}
              and status = 'approved' and expires_at > now()
            returning client_id, user_id, scope, resources
          ), new_grant as (
            insert into ${grants} (id, client_id, user_id, scope, resources)
            select ${grantId}, client_id, user_id, scope, resources from redeemed
            returning id as grant_id, client_id, user_id, scope, resources
          )${refreshToken ? sql`, issued as (${insertRefreshTokenFrom(sql`new_grant`, refreshToken)})` : sql``}
          select grant_id, user_id, scope, resources from new_grant`,
      );
      return row && { grantId: row.grant_id, userId: row.user_id, scope: row.scope, resources: row.resources ?? [] };
    } catch (error) {
      if (isForeignKeyViolation(error)) return undefined;
      throw error;
    }
  }

  /**
   * A poll sooner than the interval (less POLL_ARRIVAL_TOLERANCE_SECONDS) raises it by SLOW_DOWN_SECONDS for good; another
   * client's code is left untouched.
   */
  async poll(deviceCode: string, clientId: string): Promise<DevicePoll | undefined> {
    const [row] = await queryRows<{ status: DevicePoll['status']; expired: boolean; too_fast: boolean; interval_seconds: number }>(
      this.db,
      sql`
        with previous as (
          select device_code_hash, status, expires_at, interval_seconds,
                 (status = 'pending' and last_polled_at is not null
                  and last_polled_at > now() - make_interval(secs => interval_seconds - ${sql.raw(String(POLL_ARRIVAL_TOLERANCE_SECONDS))})) as too_fast
          from ${deviceCodes}
          where device_code_hash = ${sha256(deviceCode)} and client_id = ${clientId}
          for update
        )
        update ${deviceCodes} d
        set last_polled_at = now(),
            interval_seconds = case when p.too_fast then p.interval_seconds + ${SLOW_DOWN_SECONDS} else p.interval_seconds end
        from previous p
        where d.device_code_hash = p.device_code_hash
        returning p.status, p.expires_at <= now() as expired, p.too_fast, d.interval_seconds`,
    );
    return row && { status: row.status, expired: row.expired, tooFast: row.too_fast, interval: row.interval_seconds };
  }
}
