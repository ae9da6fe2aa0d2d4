/**
 * Failed-login throttling in the database, so every instance shares the counters: per account name (against guessing one
 * password) and per client IP (against spraying many accounts). Unknown names get counters like real ones, so a lock reveals
 * nothing; names are stored hashed, since a password typed into the wrong field must not land in a table.
 */
import { eq, sql } from 'drizzle-orm';
import type { Db } from '../../db/database.js';
import { loginThrottle } from '../../db/schema.js';
import { sha256 } from '../../crypto/secrets.js';
import { POLICY, type ThrottleRule } from '../../policy.js';
import { queryRows } from '../stores/rows.js';

export type { ThrottleRule };

export interface LoginThrottlePolicy {
  account: ThrottleRule;
  ip: ThrottleRule;
}

export const DEFAULT_LOGIN_THROTTLE_POLICY: LoginThrottlePolicy = POLICY.loginThrottle.value;

export type ThrottleState = { locked: false } | { locked: true; retryAfterSeconds: number };

/** Share of failures that also sweep out stale counters (keeps the table small without a job). */
const PURGE_PROBABILITY = 0.01;

function accountKey(username: string): string {
  return `account:${sha256(username.trim().toLowerCase())}`;
}

function ipKey(ip: string | undefined): string {
  return `ip:${ip ?? 'unknown'}`;
}

export class LoginThrottle {
  constructor(
    private readonly db: Db,
    readonly policy: LoginThrottlePolicy = DEFAULT_LOGIN_THROTTLE_POLICY,
  ) {}

  async check(username: string, ip: string | undefined): Promise<ThrottleState> {
    const [row] = await queryRows<{ retry_after: number | null }>(
      this.db,
      sql`select ceil(extract(epoch from max(locked_until) - now()))::int as retry_after
          from ${loginThrottle}
          where key in (${accountKey(username)}, ${ipKey(ip)}) and locked_until > now()`,
    );
    const retryAfter = row?.retry_after;
    return retryAfter ? { locked: true, retryAfterSeconds: Math.max(1, retryAfter) } : { locked: false };
  }

  async recordAttempt(username: string, ip: string | undefined): Promise<ThrottleState> {
    const [account, address] = await Promise.all([
      this.count(accountKey(username), this.policy.account),
      this.count(ipKey(ip), this.policy.ip),
    ]);
    if (Math.random() < PURGE_PROBABILITY) await this.purge();
    const refused = [account, address].filter((c) => !c.allowed);
    if (refused.length === 0) return { locked: false };
    return { locked: true, retryAfterSeconds: Math.max(1, ...refused.map((c) => c.retryAfter)) };
  }

  async recordFailure(username: string, ip: string | undefined): Promise<ThrottleState> {
    const state = await this.recordAttempt(username, ip);
    return state.locked ? state : this.check(username, ip);
  }

  /** A success clears the account's counter and gives the IP back only this attempt: one good account must not unlock a spraying IP. */
  async recordSuccess(username: string, ip?: string | undefined): Promise<void> {
    await this.db.delete(loginThrottle).where(eq(loginThrottle.key, accountKey(username)));
    if (ip === undefined) return;
    await this.giveBack(ipKey(ip), this.policy.ip);
  }

  async unlock(username: string): Promise<boolean> {
    const deleted = await this.db.delete(loginThrottle).where(eq(loginThrottle.key, accountKey(username))).returning({ key: loginThrottle.key });
    return deleted.length > 0;
  }

  /** Takes back one attempt counted under `key` (it turned out to be no guess), lifting the lock if back under the limit. */
  async giveBack(key: string, rule: ThrottleRule): Promise<void> {
    await this.db.execute(
      sql`update ${loginThrottle} set failures = greatest(failures - 1, 0),
            locked_until = case when failures - 1 >= ${rule.maxFailures} then locked_until end
          where key = ${key}`,
    );
  }

  /**
   * Also the device flow's user codes. The attempt that reaches the limit starts the lock and is still checked. The wait
   * is capped at the lock: an attempt that waited on the row for a concurrent one that began after it (now() is each
   * transaction's start) would measure that one's lock from an earlier instant.
   */
  async count(key: string, rule: ThrottleRule): Promise<{ allowed: boolean; retryAfter: number }> {
    const window = sql`make_interval(secs => ${rule.windowSeconds})`;
    const lock = sql`make_interval(secs => ${rule.lockSeconds})`;
    const stale = sql`(${loginThrottle.windowStartedAt} <= now() - ${window}
                       or (${loginThrottle.lockedUntil} is not null and ${loginThrottle.lockedUntil} <= now()))`;
    // Capped one past the limit: an attempt refused under a lock checked no password, so it is no guess to count, and a
    // burst of them must not outweigh the give-backs of the attempts that were checked and succeeded.
    const attempts = sql`case when ${stale} then 1 else least(${loginThrottle.failures} + 1, ${rule.maxFailures} + 1) end`;
    const [row] = await queryRows<{ failures: number; retry_after: number | null }>(
      this.db,
      sql`insert into ${loginThrottle} (key, failures, window_started_at, locked_until)
          values (${key}, 1, now(), case when 1 >= ${rule.maxFailures} then now() + ${lock} end)
          on conflict (key) do update set
            failures = ${attempts},
            window_started_at = case when ${stale} then now() else ${loginThrottle.windowStartedAt} end,
            locked_until = case when ${stale} then (case when 1 >= ${rule.maxFailures} then now() + ${lock} end)
                                when ${loginThrottle.lockedUntil} is not null then ${loginThrottle.lockedUntil}
                                when ${attempts} >= ${rule.maxFailures} then now() + ${lock} end
          returning failures, least(ceil(extract(epoch from locked_until - now())), ${rule.lockSeconds})::int as retry_after`,
    );
    return { allowed: (row?.failures ?? 0) <= rule.maxFailures, retryAfter: Math.max(0, row?.retry_after ?? 0) };
  }

  private async purge(): Promise<void> {
    await this.db.execute(
      sql`delete from ${loginThrottle}
          where window_started_at < now() - interval '1 day' and (locked_until is null or locked_until < now())`,
    );
  }
}
