/**
 * Single use of DPoP proofs (RFC 9449 §11.1) and client assertions (RFC 7523 §3) across instances: the primary key
 * (signer, jti) makes a replay conflict, so of any number of concurrent uses exactly one wins.
 */
import type { Db } from '../db/database.js';
import { usedJtis } from '../db/schema.js';
import { sha256 } from '../crypto/secrets.js';

/**
 * How long a row outlives its JWT: the janitor deletes on the database's clock, and an instance whose clock lags it would
 * otherwise accept the JWT again once the row was gone. Revoked access tokens keep the same margin (revocation.ts).
 */
export const CLOCK_SKEW_MARGIN_MS = 5 * 60_000;

export class JtiReplayStore {
  constructor(private readonly db: Db) {}

  /** A row past its expiry still counts until the janitor removes it: its JWT is refused as stale by then anyway. */
  async use(signer: string, jti: string, expiresAt: Date): Promise<boolean> {
    const rows = await this.db
      .insert(usedJtis)
      .values({ signer, jtiHash: sha256(jti), expiresAt: new Date(expiresAt.getTime() + CLOCK_SKEW_MARGIN_MS) })
      .onConflictDoNothing()
      .returning({ signer: usedJtis.signer });
    return rows.length === 1;
  }
}
