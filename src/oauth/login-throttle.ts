/**
 * Failed-login throttling, counted in the database so every instance shares the counters.
 * Two counters apply to each attempt: one per account name (against guessing one password)
 * and one per client IP (against spraying many accounts). Each locks for a while after too
 * many failures inside a window. Counters exist for unknown account names exactly as for real
 * ones, so the lock itself reveals nothing about which accounts exist; account names are
 * stored only as hashes (a password typed into the wrong field must not land in a table).
 */
import { eq, sql } from 'drizzle-orm';
import type { Db } from '../db/database.js';
import { loginThrottle } from '../db/schema.js';
import { sha256 } from './secrets.js';
import { queryRows } from './stores/rows.js';

export interface ThrottleRule {
  maxFailures: number;
  windowSeconds: number;
  lockSeconds: number;
}

export interface LoginThrottlePolicy {
  account: ThrottleRule;
  ip: ThrottleRule;
}

export const DEFAULT_LOGIN_THROTTLE_POLICY: LoginThrottlePolicy = {
  account: { maxFailures: 5, windowSeconds: 15 * 60, lockSeconds: 15 * 60 },
  ip: { maxFailures: 20, windowSeconds: 15 * 60, lockSeconds: 15 * 60 },
};

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

  /** Whether this account name or this IP is locked out right now. */
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

  /** Counts a failed attempt against the account name and the IP; answers whether either is now locked. */
  async recordFailure(username: string, ip: string | undefined): Promise<ThrottleState> {
    const [account, address] = await Promise.all([
      this.count(accountKey(username), this.policy.account),
      this.count(ipKey(ip), this.policy.ip),
    ]);
    if (Math.random() < PURGE_PROBABILITY) await this.purge();
    const retryAfter = Math.max(account, address);
    return retryAfter > 0 ? { locked: true, retryAfterSeconds: retryAfter } : { locked: false };
  }

  /** A successful sign-in clears the account's counter (not the IP's: one good account must not unlock a spraying IP). */
  async recordSuccess(username: string): Promise<void> {
    await this.db.delete(loginThrottle).where(eq(loginThrottle.key, accountKey(username)));
  }

  /** Adds one failure; returns the seconds the key is now locked for (0 when not locked). */
  private async count(key: string, rule: ThrottleRule): Promise<number> {
    const window = sql`make_interval(secs => ${rule.windowSeconds})`;
    const lock = sql`make_interval(secs => ${rule.lockSeconds})`;
    // A counter starts afresh when its window has passed or its lock has run out.
    const stale = sql`(${loginThrottle.windowStartedAt} <= now() - ${window}
                       or (${loginThrottle.lockedUntil} is not null and ${loginThrottle.lockedUntil} <= now()))`;
    const failures = sql`case when ${stale} then 1 else ${loginThrottle.failures} + 1 end`;
    const [row] = await queryRows<{ retry_after: number | null }>(
      this.db,
      sql`insert into ${loginThrottle} (key, failures, window_started_at, locked_until)
          values (${key}, 1, now(), case when 1 >= ${rule.maxFailures} then now() + ${lock} end)
          on conflict (key) do update set
            failures = ${failures},
            window_started_at = case when ${stale} then now() else ${loginThrottle.windowStartedAt} end,
            locked_until = case when ${failures} >= ${rule.maxFailures} then now() + ${lock}
                                when ${stale} then null
                                else ${loginThrottle.lockedUntil} end
          returning ceil(extract(epoch from locked_until - now()))::int as retry_after`,
    );
    return Math.max(0, row?.retry_after ?? 0);
  }

  private async purge(): Promise<void> {
    await this.db.execute(
      sql`delete from ${loginThrottle}
          where window_started_at < now() - interval '1 day' and (locked_until is null or locked_until < now())`,
    );
  }
}
