/**
 * Revocation as the resource side sees it. A grant (one consent's family of codes, refresh
 * tokens and access tokens) or a single access token can be revoked; resource requests ask
 * `isRevoked` for each token they accept.
 *
 * A grant that no longer exists counts as revoked: deleting a client or a user (by the CLI or
 * directly in SQL) cascades to its grants, and that must end every token of theirs.
 *
 * Answers are cached per token for at most REVOCATION_CACHE_MS so hot tokens cost no query
 * per request. A revocation made by this instance clears its cache at once; one made by
 * another instance is seen within REVOCATION_CACHE_MS (documented in README).
 */
import { and, eq, isNull, lt, sql } from 'drizzle-orm';
import type { Db } from '../db/database.js';
import { grants, revokedAccessTokens } from '../db/schema.js';
import { queryRows } from '../oauth/stores/rows.js';
import { POLICY } from '../policy.js';

export const REVOCATION_CACHE_MS = POLICY.revocationCacheMs.value;
const MAX_CACHE_ENTRIES = POLICY.revocationCacheEntries.value;

export class Revocations {
  private readonly cache = new Map<string, { revoked: boolean; checkedAt: number }>();

  constructor(private readonly db: Db) {}

  /** `isRevoked`'s answer while it is cached, without a promise; undefined when it must be asked. */
  cachedAnswer(grantId: string, jti: string): boolean | undefined {
    const cached = this.cache.get(`${grantId} ${jti}`);
    return cached && Date.now() - cached.checkedAt < REVOCATION_CACHE_MS ? cached.revoked : undefined;
  }

  async isRevoked(grantId: string, jti: string): Promise<boolean> {
    const key = `${grantId} ${jti}`;
    const cached = this.cache.get(key);
    const now = Date.now();
    if (cached && now - cached.checkedAt < REVOCATION_CACHE_MS) return cached.revoked;
    const [row] = await queryRows<{ revoked: boolean }>(this.db, sql`
      select (
        not exists(select 1 from ${grants} where ${grants.id} = ${grantId} and ${grants.revokedAt} is null)
        or exists(select 1 from ${revokedAccessTokens} where ${revokedAccessTokens.jti} = ${jti})
      ) as revoked`);
    const revoked = Boolean(row?.revoked);
    if (this.cache.size >= MAX_CACHE_ENTRIES) this.cache.clear();
    this.cache.set(key, { revoked, checkedAt: now });
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
    await this.db.insert(revokedAccessTokens).values({ jti, expiresAt }).onConflictDoNothing();
    await this.db.delete(revokedAccessTokens).where(lt(revokedAccessTokens.expiresAt, sql`now()`));
    this.forget((key) => key.endsWith(` ${jti}`));
  }

  private forget(match: (key: string) => boolean): void {
    for (const key of this.cache.keys()) if (match(key)) this.cache.delete(key);
  }
}
