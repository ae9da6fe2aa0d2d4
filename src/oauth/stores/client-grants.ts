/**
 * Grants of clients acting for themselves (client_credentials): one row per token, with no user, so that token is revoked
 * like every other, by its grant, and goes with its client.
 */
import type { Db } from '../../db/database.js';
import { grants } from '../../db/schema.js';
import { isForeignKeyViolation } from '../../db/errors.js';
import { randomToken } from '../../crypto/secrets.js';

export class ClientGrantStore {
  constructor(private readonly db: Db) {}

  /** The new grant's id; undefined when the client no longer exists. */
  async create(clientId: string, scope: string): Promise<string | undefined> {
    const id = randomToken(16);
    try {
      await this.db.insert(grants).values({ id, clientId, userId: null, scope });
      return id;
    } catch (error) {
      if (isForeignKeyViolation(error)) return undefined;
      throw error;
    }
  }
}
