/**
 * The user behind an access token whose `sub` is a pairwise identifier (OIDC Core §8.1): the token names only its
 * grant, and the grant row names the user, so the identifier never has to be reversible. Public-subject tokens never
 * come here. A grant's client and user never change, so an answer is kept; a deleted grant is refused by the
 * revocation check anyway.
 */
import { eq } from 'drizzle-orm';
import { LRUCache } from 'lru-cache';
import type { Db } from '../db/database.js';
import { grants } from '../db/schema.js';
import { POLICY } from '../policy.js';

export interface GrantOwner {
  clientId: string;
  /** Null for a client_credentials grant. */
  userId: number | null;
}

export class GrantOwners {
  private readonly known = new LRUCache<string, GrantOwner>({ max: POLICY.verifiedTokenCacheEntries.value });

  constructor(private readonly db: Db) {}

  /** Undefined when the grant no longer exists (its client or user was deleted). */
  async find(grantId: string): Promise<GrantOwner | undefined> {
    const cached = this.known.get(grantId);
    if (cached) return cached;
    const [row] = await this.db.select({ clientId: grants.clientId, userId: grants.userId }).from(grants).where(eq(grants.id, grantId));
    if (row) this.known.set(grantId, row);
    return row;
  }
}
