/** RFC 7591 §3 initial access tokens for REGISTRATION=token, usable until they expire or are deleted; stored as SHA-256 only. */
import { sql } from 'drizzle-orm';
import type { Db } from '../../db/database.js';
import { registrationTokens } from '../../db/schema.js';
import { randomToken, sha256 } from '../../crypto/secrets.js';
import { queryRows, toDate } from './rows.js';

export interface RegistrationTokenRecord {
  /** The first characters of the token's hash: names it in `list` and `delete` without revealing it. */
  id: string;
  label: string | null;
  createdAt: Date;
  expiresAt: Date | null;
}

const ID_LENGTH = 12;

export class RegistrationTokenStore {
  constructor(private readonly db: Db) {}

  async create(options: { label?: string; ttlSeconds?: number }): Promise<{ token: string; record: RegistrationTokenRecord }> {
    const token = randomToken(32);
    const expires = options.ttlSeconds === undefined ? sql`null` : sql`now() + make_interval(secs => ${options.ttlSeconds})`;
    const [row] = await queryRows<{ token_hash: string; label: string | null; created_at: Date | string; expires_at: Date | string | null }>(
      this.db,
      sql`insert into ${registrationTokens} (token_hash, label, expires_at)
          values (${sha256(token)}, ${options.label ?? null}, ${expires})
          returning token_hash, label, created_at, expires_at`,
    );
    return { token, record: toRecord(row!) };
  }

  async isValid(token: string): Promise<boolean> {
    const rows = await queryRows<{ ok: number }>(
      this.db,
      sql`select 1 as ok from ${registrationTokens}
          where token_hash = ${sha256(token)} and (expires_at is null or expires_at > now())`,
    );
    return rows.length > 0;
  }

  async list(): Promise<RegistrationTokenRecord[]> {
    const rows = await queryRows<{ token_hash: string; label: string | null; created_at: Date | string; expires_at: Date | string | null }>(
      this.db,
      sql`select token_hash, label, created_at, expires_at from ${registrationTokens} order by created_at`,
    );
    return rows.map(toRecord);
  }

  async delete(id: string): Promise<boolean> {
    if (!/^[A-Za-z0-9_-]{12}$/.test(id)) return false;
    const rows = await queryRows<{ ok: number }>(
      this.db,
      sql`delete from ${registrationTokens} where left(token_hash, ${ID_LENGTH}) = ${id} returning 1 as ok`,
    );
    return rows.length > 0;
  }
}

function toRecord(row: { token_hash: string; label: string | null; created_at: Date | string; expires_at: Date | string | null }): RegistrationTokenRecord {
  return {
    id: row.token_hash.slice(0, ID_LENGTH),
    label: row.label,
    createdAt: toDate(row.created_at),
    expiresAt: row.expires_at === null ? null : toDate(row.expires_at),
  };
}
