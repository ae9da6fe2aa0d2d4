/**
 * A grant that no longer exists counts as revoked: deleting a client or user cascades, and that must end every token.
 * Answers are cached per token for REVOCATION_CACHE_MS; another instance's revocation is seen within that time. Their age
 * is read on the monotonic clock: a wall clock set back (NTP stepping it, a resumed VM) would otherwise keep an answer for
 * as long as it went back.
 */
import { and, eq, isNull, lt, sql } from 'drizzle-orm';
import type { Db } from '../db/database.js';
import { grants, revokedAccessTokens } from '../db/schema.js';
import { queryRows } from '../oauth/stores/rows.js';
import { POLICY } from '../policy.js';
import { CLOCK_SKEW_MARGIN_MS } from './jti-replay.js';

export const REVOCATION_CACHE_MS = POLICY.revocationCacheMs.value;
const MAX_CACHE_ENTRIES = POLICY.revocationCacheEntries.value;

export class Revocations {
  private readonly cache = new Map<string, { revoked: boolean; checkedAt: number }>();
  /** Raised by every revocation here: an answer read while one ran may predate it, and is then not kept. */
  private generation = 0;

  constructor(private readonly db: Db) {}

  cachedAnswer(grantId: string, jti: string): boolean | undefined {
    const cached = this.cache.get(`${grantId} ${jti}`);
    return cached && performance.now() - cached.checkedAt < REVOCATION_CACHE_MS ? cached.revoked : undefined;
  }

  async isRevoked(grantId: string, jti: string): Promise<boolean> {
    const cached = this.cachedAnswer(grantId, jti);
    return cached ?? this.isRevokedNow(grantId, jti);
  }

  /**
   * Read from the database whatever the cache holds: `/introspect` is the answer a resource server asks the server
   * for, and may not lag a revocation made on another instance as the resource side's own check may.
   */
  async isRevokedNow(grantId: string, jti: string): Promise<boolean> {
    const checkedAt = performance.now();
    const generation = this.generation;
    const [row] = await queryRows<{ revoked: boolean }>(this.db, sql`
      select (
        not exists(select 1 from ${grants} where ${grants.id} = ${grantId} and ${grants.revokedAt} is null)
        or exists(select 1 from ${revokedAccessTokens} where ${revokedAccessTokens.jti} = ${jti})
      ) as revoked`);
    const revoked = Boolean(row?.revoked);
    if (generation !== this.generation) return revoked;
    if (this.cache.size >= MAX_CACHE_ENTRIES) this.cache.clear();
    this.cache.set(`${grantId} ${jti}`, { revoked, checkedAt });
    return revoked;
  }

  /** Revokes a whole grant: its refresh tokens stop rotating and its access tokens stop working. */
  async revokeGrant(grantId: string, db: Db = this.db): Promise<void> {
    await db
      .update(grants)
      .set({ revokedAt: sql`now()` })
      .where(and(eq(grants.id, grantId), sql`${grants.revokedAt} is null`));
    this.forget((key) => key.startsWith(`${grantId} `));
  }

  async revokeAccessToken(jti: string, expiresAt: Date): Promise<void> {
    // Kept past the token's expiry, for an instance whose clock lags the database's: it still takes the token as unexpired.
    await this.db
      .insert(revokedAccessTokens)
      .values({ jti, expiresAt: new Date(expiresAt.getTime() + CLOCK_SKEW_MARGIN_MS) })
      .onConflictDoNothing();
    await this.db.delete(revokedAccessTokens).where(lt(revokedAccessTokens.expiresAt, sql`now()`));
    this.forget((key) => key.endsWith(` ${jti}`));
  }

  private forget(match: (key: string) => boolean): void {
    this.generation++;
    for (const key of this.cache.keys()) if (match(key)) this.cache.delete(key);
  }
}
