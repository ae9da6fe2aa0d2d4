import { describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { openDatabase, type Database } from '../../src/db/database.js';
import { ensureSigningKey, hasSigningKeys } from '../../src/tokens/signing-keys.js';
import postgres from 'postgres';
import { createTestDatabase, DATABASE_KINDS, TEST_DATABASE_URL } from '../support/databases.js';

const EXPECTED_TABLES = [
  'clients',
  'consents',
  'device_codes',
  'ended_sessions',
  'grants',
  'idempotency_keys',
  'instance_secrets',
  'login_throttle',
  'order_items',
  'orders',
  'products',
  'refresh_tokens',
  'registration_tokens',
  'reviews',
  'revoked_access_tokens',
  'sellers',
  'shipping_policies',
  'signing_keys',
  'used_jtis',
  'users',
];

function rows<T>(result: unknown): T[] {
  return ((result as { rows?: T[] }).rows ?? result) as T[];
}

async function tables(database: Database): Promise<string[]> {
  const result = await database.db.execute(
    sql`select table_name from information_schema.tables where table_schema = 'public' order by table_name`,
  );
  return rows<{ table_name: string }>(result).map((r) => r.table_name);
}

async function appliedMigrations(database: Database): Promise<number> {
  const result = await database.db.execute(sql`select count(*)::int as n from drizzle.__drizzle_migrations`);
  return rows<{ n: number }>(result)[0]!.n;
}

for (const kind of DATABASE_KINDS) {
  describe(`migrations [${kind}]`, () => {
    it('create every table and are idempotent', async () => {
      const testDatabase = await createTestDatabase(kind);
      const database = await testDatabase.open();
      try {
        await database.migrate();
        expect(await tables(database)).toEqual(EXPECTED_TABLES);
        const applied = await appliedMigrations(database);
        expect(applied).toBeGreaterThan(0);
        await database.migrate();
        expect(await appliedMigrations(database)).toBe(applied);
      } finally {
        await database.close();
        await testDatabase.drop();
      }
    });

    it('run the bootstrap once: exactly one current signing key per algorithm', async () => {
      const testDatabase = await createTestDatabase(kind);
      const database = await testDatabase.open();
      try {
        await database.migrate(ensureSigningKey);
        await database.migrate(ensureSigningKey);
        const result = await database.db.execute(sql`select alg from signing_keys where retired_at is null order by alg`);
        expect(rows<{ alg: string }>(result).map((r) => r.alg)).toEqual(['ES256', 'RS256']);
      } finally {
        await database.close();
        await testDatabase.drop();
      }
    });
  });
}

describe.runIf(TEST_DATABASE_URL)('migrations from several instances at once [postgres]', () => {
  it('serialize on the advisory lock: all succeed, each migration is applied once, one signing key per algorithm', async () => {
    const testDatabase = await createTestDatabase('postgres');
    const instances = await Promise.all(Array.from({ length: 4 }, () => openDatabase({ databaseUrl: testDatabase.url, poolSize: 2 })));
    try {
      await Promise.all(instances.map((instance) => instance.migrate(ensureSigningKey)));
      const [first] = instances;
      expect(await tables(first!)).toEqual(EXPECTED_TABLES);
      const result = await first!.db.execute(sql`select count(*)::int as n, count(distinct hash)::int as d from drizzle.__drizzle_migrations`);
      const { n, d } = rows<{ n: number; d: number }>(result)[0]!;
      expect(n).toBe(d);
      const keys = await first!.db.execute(sql`select alg from signing_keys where retired_at is null order by alg`);
      expect(rows<{ alg: string }>(keys).map((r) => r.alg)).toEqual(['ES256', 'RS256']);
    } finally {
      await Promise.all(instances.map((instance) => instance.close()));
      await testDatabase.drop();
    }
  });
});

// A restart on a current schema needs neither DDL rights nor the session-level advisory lock, which a pooler in
// transaction mode cannot hold: it must not wait for that lock, held here by another session (an instance migrating,
// or a lock leaked through such a pooler).
describe.runIf(TEST_DATABASE_URL)('a start on a migrated database [postgres]', () => {
  it('takes no migration lock and changes nothing when every migration is applied and the bootstrap is done', async () => {
    const testDatabase = await createTestDatabase('postgres');
    const first = await openDatabase({ databaseUrl: testDatabase.url, poolSize: 1 });
    const holder = postgres(testDatabase.url!, { max: 1, onnotice: () => {} });
    let second: Database | undefined;
    try {
      await first.migrate(ensureSigningKey, hasSigningKeys);
      await holder`select pg_advisory_lock(${0x6669656c})`;
      second = await openDatabase({ databaseUrl: testDatabase.url, poolSize: 1 });
      let waited = false;
      const fallback = setTimeout(() => {
        waited = true;
        holder`select pg_advisory_unlock(${0x6669656c})`.then(() => {}, () => {}); // postgres.js runs a query once awaited
      }, 20_000);
      await second.migrate(ensureSigningKey, hasSigningKeys);
      clearTimeout(fallback);
      expect(waited, 'the start waited for the migration lock').toBe(false);
      expect(await appliedMigrations(second)).toBe(await appliedMigrations(first));
    } finally {
      await holder.end();
      await second?.close();
      await first.close();
      await testDatabase.drop();
    }
  }, 60_000);

  it('still migrates under the lock when a migration is missing', async () => {
    const testDatabase = await createTestDatabase('postgres');
    const first = await openDatabase({ databaseUrl: testDatabase.url, poolSize: 1 });
    try {
      await first.migrate(ensureSigningKey, hasSigningKeys);
      const latest = rows<{ name: string }>(await first.db.execute(sql`select name from drizzle.__drizzle_migrations order by id desc limit 1`))[0]!.name;
      // Forget the latest migration and what it made: the next start must apply it again.
      await first.db.execute(sql`delete from drizzle.__drizzle_migrations where name = ${latest}`);
      const before = await appliedMigrations(first);
      // The latest migration drops the table of stored authorization codes (sealed since).
      await first.db.execute(sql`create table authorization_codes (code_hash text primary key)`);
      await first.migrate(ensureSigningKey, hasSigningKeys);
      expect(await appliedMigrations(first)).toBe(before + 1);
      expect(rows(await first.db.execute(sql`select to_regclass('authorization_codes') as t`))[0]).toEqual({ t: null });
    } finally {
      await first.close();
      await testDatabase.drop();
    }
  }, 60_000);
});
