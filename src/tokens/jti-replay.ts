/**
 * Single use of signed JWTs across every instance: DPoP proofs (RFC 9449 §11.1) and client
 * assertions (RFC 7523 §3, RFC 7521 §5.2). `use` is one insert into the shared `used_jtis`
 * table; the primary key (signer, jti) makes a replay — on this instance or any other — conflict,
 * so of any number of concurrent uses exactly one wins. The janitor deletes expired rows.
 */
import type { Db } from '../db/database.js';
import { usedJtis } from '../db/schema.js';
import { sha256 } from '../crypto/secrets.js';

export class JtiReplayStore {
  constructor(private readonly db: Db) {}

  /**
   * Records `jti` as used by `signer` until `expiresAt`; false when it was used before (a replay).
   * A row past its expiry still counts until the janitor removes it: the JWT it stood for is
   * refused as stale by then anyway.
   */
  async use(signer: string, jti: string, expiresAt: Date): Promise<boolean> {
    const rows = await this.db
      .insert(usedJtis)
      .values({ signer, jtiHash: sha256(jti), expiresAt })
      .onConflictDoNothing()
      .returning({ signer: usedJtis.signer });
    return rows.length === 1;
  }
}
