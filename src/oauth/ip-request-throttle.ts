/**
 * A per-IP limit on an endpoint that creates rows for anyone who asks (POST /register, POST /device_authorization, and
 * /authorize when it fetches a client ID metadata document),
 * counted in the login throttle's table under `<endpoint>:<ip>` keys so it holds across instances; its 15-minute
 * window matches the janitor's sweep of stale throttle rows.
 */
import { sql } from 'drizzle-orm';
import type { RequestHandler } from 'express';
import type { Db } from '../db/database.js';
import { loginThrottle } from '../db/schema.js';
import { RateLimited } from './errors.js';
import { queryRows } from './stores/rows.js';

export const THROTTLE_WINDOW_SECONDS = 15 * 60;

export class IpRequestThrottle {
  constructor(
    private readonly db: Db,
    /** The key prefix: each endpoint counts on its own. */
    private readonly endpoint: 'register' | 'device' | 'client-metadata',
    private readonly maxPerWindow: number,
  ) {}

  async count(ip: string | undefined): Promise<{ allowed: true } | { allowed: false; retryAfterSeconds: number }> {
    const window = sql`make_interval(secs => ${THROTTLE_WINDOW_SECONDS})`;
    const stale = sql`${loginThrottle.windowStartedAt} <= now() - ${window}`;
    // now() is the transaction's start: a request that began just before another opened the window sees a window that
    // starts after its now(), and would announce a wait longer than the window itself.
    const [row] = await queryRows<{ failures: number; retry_after: number | null }>(
      this.db,
      sql`insert into ${loginThrottle} (key, failures, window_started_at)
          values (${`${this.endpoint}:${ip ?? 'unknown'}`}, 1, now())
          on conflict (key) do update set
            failures = case when ${stale} then 1 else ${loginThrottle.failures} + 1 end,
            window_started_at = case when ${stale} then now() else ${loginThrottle.windowStartedAt} end
          returning failures,
            least(ceil(extract(epoch from window_started_at + ${window} - now())), ${THROTTLE_WINDOW_SECONDS})::int as retry_after`,
    );
    if ((row?.failures ?? 0) <= this.maxPerWindow) return { allowed: true };
    return { allowed: false, retryAfterSeconds: Math.max(1, row?.retry_after ?? 1) };
  }

  /** Counts the request and refuses it with 429 `temporarily_unavailable` and Retry-After once the IP is over the limit. */
  limit(refusal: string): RequestHandler {
    return async (req, _res, next) => {
      const state = await this.count(req.ip);
      if (!state.allowed) throw new RateLimited(refusal, state.retryAfterSeconds);
      next();
    };
  }
}
