/**
 * A statement timeout shorter than postgres.js's own first statement on a new connection (the array-type catalog
 * query `fetch_types` runs) must fail that connection's first transaction as an ordinary rejection of `sql.begin`,
 * which Fieldgate answers like any statement timeout. Unpatched, the driver also drops the failed catalog query's
 * promise, and the unhandled rejection ends the process (Node's default --unhandled-rejections=throw).
 * patches/postgres+3.4.9.patch covers both copies of the driver: the ESM one the service imports and the CommonJS one.
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresDatabase, TEST_DATABASE_URL } from '../support/databases.js';
import { openDatabase } from '../../src/db/database.js';

const require = createRequire(import.meta.url);
const drivers: Array<[string, typeof postgres]> = [
  ['ESM', postgres],
  ['CommonJS', require('postgres') as typeof postgres],
];

describe.skipIf(!TEST_DATABASE_URL)('sql.begin under a role statement_timeout of 1ms [postgres]', () => {
  const name = `helper_begin_${randomBytes(6).toString('hex')}`;
  let url: string;

  beforeAll(async () => {
    const admin = postgres(TEST_DATABASE_URL!, { max: 1, onnotice: () => {} });
    try {
      await admin.unsafe(`create role "${name}" login`);
      await admin.unsafe(`alter role "${name}" set statement_timeout = '1ms'`);
      await admin.unsafe(`create database "${name}" owner "${name}"`);
    } finally {
      await admin.end();
    }
    const server = new URL(TEST_DATABASE_URL!);
    server.username = name;
    server.password = '';
    server.pathname = `/${name}`;
    url = server.href;
  });

  afterAll(async () => {
    const admin = postgres(TEST_DATABASE_URL!, { max: 1, onnotice: () => {} });
    try {
      await admin.unsafe(`drop database if exists "${name}" with (force)`);
      await admin.unsafe(`drop role if exists "${name}"`);
    } finally {
      await admin.end();
    }
  });

  for (const [copy, driver] of drivers) {
    for (const [max, prepare] of [[10, true], [1, false]] as const) {
      it(`settles every transaction with its caller, and nothing else rejects (${copy}, max ${max}, prepare ${prepare})`, async () => {
        const unhandled: unknown[] = [];
        const onUnhandled = (reason: unknown) => unhandled.push(reason);
        process.on('unhandledRejection', onUnhandled);
        let catalogCancelled = 0;
        try {
          for (let round = 0; round < 3; round++) {
            // A fresh client each round: every new connection runs the catalog query first.
            const sql = driver(url, { max, prepare, onnotice: () => {} });
            try {
              const settled = await Promise.allSettled(Array.from({ length: 50 }, () => sql.begin((tx) => tx`select 1 as one`)));
              for (const outcome of settled) {
                if (outcome.status === 'fulfilled') {
                  expect(outcome.value).toEqual([{ one: 1 }]);
                } else {
                  const error = outcome.reason as { code?: string; query?: string };
                  expect(error.code).toBe('57014');
                  if (error.query?.includes('pg_catalog.pg_type')) catalogCancelled++;
                }
              }
            } finally {
              await sql.end({ timeout: 5 });
            }
          }
          // Let any dropped promise report before the listener goes.
          await new Promise((resolve) => setTimeout(resolve, 50));
        } finally {
          process.off('unhandledRejection', onUnhandled);
        }
        // The case under test did happen: the driver's catalog query was cancelled, and its transaction got the error.
        expect(catalogCancelled).toBeGreaterThan(0);
        expect(unhandled).toEqual([]);
      });
    }

  }
});

describe.skipIf(!TEST_DATABASE_URL)('a pool that could not learn the array types [postgres]', () => {
  it('keeps the service from starting, rather than reading text[] columns as strings', async () => {
    const created = await createPostgresDatabase();
    const locker = postgres(created.url, { max: 1, onnotice: () => {} });
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    // The driver's catalog query waits for this lock on pg_type until the pool's statement timeout cancels it.
    const holding = locker.begin(async (tx) => {
      await tx`lock table pg_catalog.pg_type in access exclusive mode`;
      await released;
    });
    const database = await openDatabase({ databaseUrl: created.url, poolSize: 1, statementTimeoutMs: 300 });
    try {
      await new Promise((resolve) => setTimeout(resolve, 100));
      // Once the pool's first catalog query has been cancelled, the lock goes: migrating (on a connection of its own,
      // without the timeout) proceeds, and only the pool is left without array types.
      setTimeout(release, 1_000);
      await expect(database.migrate()).rejects.toThrow(/array types/);
    } finally {
      release();
      await holding.catch(() => {});
      await database.close();
      await locker.end({ timeout: 5 });
      await created.drop();
    }
  });
});
