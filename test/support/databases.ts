/**
 * The databases every integration suite runs on: in-memory PGlite always, and PostgreSQL when
 * TEST_DATABASE_URL is set (each suite gets its own freshly created database, dropped after).
 * Under CI=true a missing TEST_DATABASE_URL is an error, never a silent skip.
 */
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { openDatabase, type Database } from '../../src/db/database.js';

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL?.trim() || undefined;

if (!TEST_DATABASE_URL) {
  if (process.env.CI === 'true') {
    throw new Error('TEST_DATABASE_URL must be set under CI=true: the PostgreSQL variant of the suites may not skip');
  }
  const g = globalThis as { __fieldgatePgNotice?: boolean };
  if (!g.__fieldgatePgNotice) {
    g.__fieldgatePgNotice = true;
    console.warn('[fieldgate tests] TEST_DATABASE_URL is not set: the PostgreSQL variant of the suites is skipped.');
  }
}

export type DatabaseKind = 'pglite' | 'postgres';

export interface TestDatabase {
  kind: DatabaseKind;
  /** `postgres://…` of the fresh database, or undefined for in-memory PGlite. */
  url: string | undefined;
  /** Opens a new connection to this database (PGlite: only once; it lives in this process). */
  open(): Promise<Database>;
  /** Drops the database (PostgreSQL); call after every connection is closed. */
  drop(): Promise<void>;
}

/** Creates an empty PostgreSQL database on the TEST_DATABASE_URL server. */
export async function createPostgresDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  if (!TEST_DATABASE_URL) throw new Error('TEST_DATABASE_URL is not set');
  const name = `fieldgate_test_${randomBytes(6).toString('hex')}`;
  const admin = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  return {
    url: url.href,
    async drop() {
      const conn = postgres(TEST_DATABASE_URL!, { max: 1, onnotice: () => {} });
      try {
        await conn.unsafe(`drop database if exists "${name}" with (force)`);
      } finally {
        await conn.end();
      }
    },
  };
}

export async function createTestDatabase(kind: DatabaseKind, { poolSize = 5 }: { poolSize?: number } = {}): Promise<TestDatabase> {
  if (kind === 'pglite') {
    return {
      kind,
      url: undefined,
      open: () => openDatabase({ dataDir: 'memory://' }),
      drop: async () => {},
    };
  }
  const created = await createPostgresDatabase();
  return {
    kind,
    url: created.url,
    open: () => openDatabase({ databaseUrl: created.url, poolSize }),
    drop: created.drop,
  };
}

/** The database kinds to run suites against in this environment. */
export const DATABASE_KINDS: DatabaseKind[] = TEST_DATABASE_URL ? ['pglite', 'postgres'] : ['pglite'];
