/**
 * Per-IP limit on POST /register, counted in the login throttle's table under `register:` keys so it holds across
 * instances; its 15-minute window matches the janitor's sweep of stale throttle rows.
 */
import { sql } from 'drizzle-orm';
import type { Db } from '../db/database.js';
import { loginThrottle } from '../db/schema.js';
import { queryRows } from './stores/rows.js';

export const REGISTRATION_WINDOW_SECONDS = 15 * 60;

export class RegistrationThrottle {
  constructor(
    private readonly db: Db,
    private readonly maxPerWindow: number,
  ) {}

  /** Counts one request from `ip` (one atomic statement); the seconds to wait when over the limit. */
  async count(ip: string | undefined): Promise<{ allowed: true } | { allowed: false; retryAfterSeconds: number }> {
    const window = sql`make_interval(secs => ${REGISTRATION_WINDOW_SECONDS})`;
    const stale = sql`${loginThrottle.windowStartedAt} <= now() - ${window}`;
    const [row] = await queryRows<{ failures: number; retry_after: number | null }>(
      this.db,
      sql`insert into ${loginThrottle} (key, failures, window_started_at)
          values (${`register:${ip ?? 'unknown'}`}, 1, now())
          on conflict (key) do update set
            failures = case when ${stale} then 1 else ${loginThrottle.failures} + 1 end,
            window_started_at = case when ${stale} then now() else ${loginThrottle.windowStartedAt} end
          returning failures, ceil(extract(epoch from window_started_at + ${window} - now()))::int as retry_after`,
    );
    if ((row?.failures ?? 0) <= this.maxPerWindow) return { allowed: true };
    return { allowed: false, retryAfterSeconds: Math.max(1, row?.retry_after ?? 1) };
  }
}
