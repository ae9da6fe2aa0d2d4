import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq, sql } from 'drizzle-orm';
import { PGlite } from '@electric-sql/pglite';
import { openDatabase, type Database } from '../../../src/db/database.js';
import { Executor } from '../../../src/graphql/executor.js';
import { DEFAULT_LIMITS } from '../../../src/graphql/limits.js';
import { schema } from '../../../src/graphql/schema/index.js';
import { createTestRuntime, type TestRuntime } from '../../support/runtime.js';
import { buildProduct } from '../../support/factories.js';
import { issueTestToken } from '../../support/tokens.js';
import { PreparedStatementPolicy } from '../../../src/db/performance/prepared-statements.js';
import { withPgliteStatements, type PgliteQueryClient } from '../../../src/db/performance/pglite-statements.js';
import { products, sellers } from '../../../src/db/schema.js';

const PREPARED_ON_T = `select count(*)::int as n from pg_prepared_statements where statement like '%from t%'`;

describe('PGlite statements, against PGlite’s own query', () => {
  let pg: PGlite;
  let client: PgliteQueryClient;

  beforeAll(async () => {
    pg = new PGlite();
    await pg.waitReady;
    await pg.exec(`create table t (id int primary key, name text, at timestamptz, tags text[], doc jsonb, flag boolean, big bigint)`);
    await pg.exec(`insert into t values (1, 'one', '2024-05-01T10:00:00Z', '{a,b}', '{"k":[1,2]}', true, 9007199254740993)`);
    client = withPgliteStatements(pg, new PreparedStatementPolicy(8));
  });

  afterAll(() => pg.close());

  it('gives the same rows for every parameter and column type, first and repeated use alike', async () => {
    const text = 'select * from t where id = $1 or name = $2 or at = $3 or tags = $4 or doc = $5 or flag = $6 or big = $7 order by id';
    const params = [1, null, new Date('2024-05-01T10:00:00Z'), ['a', 'b'], { k: [1, 2] }, true, 9007199254740993n];
    const expected = await pg.query(text, params);
    for (let i = 0; i < 3; i++) {
      const actual = await client.query(text, params);
      expect(actual.rows).toEqual(expected.rows);
      expect(actual.rows).toHaveLength(1);
    }
    expect((await pg.query<{ n: number }>(PREPARED_ON_T)).rows[0]!.n).toBe(1);
  });

  it('returns rows as arrays and applies the caller’s parsers', async () => {
    const options = { rowMode: 'array' as const, parsers: { 1184: (value: string) => `at ${value}` } };
    for (let i = 0; i < 3; i++) {
      const { rows } = await client.query('select id, at from t where id = $1', [1], options);
      expect(rows).toEqual([[1, 'at 2024-05-01 10:00:00+00']]);
    }
  });

  it('counts the rows a write touched', async () => {
    const first = await client.query(`insert into t (id, name) values ($1, 'x'), ($2, 'y')`, [10, 11]);
    const second = await client.query(`update t set name = 'z' where id >= $1`, [10]);
    expect([first.affectedRows, second.affectedRows]).toEqual([2, 2]);
  });

  it('throws the database error with its SQLSTATE, also from a prepared statement, and stays usable', async () => {
    for (let i = 0; i < 3; i++) {
      await expect(client.query(`insert into t (id) values ($1)`, [1])).rejects.toMatchObject({ code: '23505' });
    }
    await expect(client.query('select nonsense from t')).rejects.toMatchObject({ code: '42703' });
    expect((await client.query<{ name: string }>('select name from t where id = $1', [1])).rows).toEqual([{ name: 'one' }]);
  });

  it('runs a transaction’s statements in it and rolls them back with it', async () => {
    const failing = client.transaction(async (tx) => {
      await tx.query(`insert into t (id, name) values ($1, 'rolled back')`, [20]);
      await tx.query(`insert into t (id, name) values ($1, 'rolled back')`, [21]);
      throw new Error('abort');
    });
    await expect(failing).rejects.toThrow('abort');
    expect((await client.query('select id from t where id in (20, 21)')).rows).toEqual([]);
    await client.transaction((tx) => tx.query(`insert into t (id, name) values ($1, 'kept')`, [22]));
    expect((await client.query('select name from t where id = $1', [22])).rows).toEqual([{ name: 'kept' }]);
  });

  it('keeps no statement prepared when the policy allows none', async () => {
    const none = withPgliteStatements(pg, new PreparedStatementPolicy(0));
    const before = (await pg.query<{ n: number }>(`select count(*)::int as n from pg_prepared_statements`)).rows[0]!.n;
    for (let i = 0; i < 3; i++) await none.query('select name from t where id = $1 and flag', [1]);
    expect((await pg.query<{ n: number }>(`select count(*)::int as n from pg_prepared_statements`)).rows[0]!.n).toBe(before);
  });

  it('re-prepares a statement whose result columns changed under it', async () => {
    await pg.exec('create table t2 (id int, a text)');
    const text = 'select * from t2 where id = $1';
    for (let i = 0; i < 3; i++) await client.query(text, [1]);
    await pg.exec('alter table t2 add column b text; insert into t2 values (1, \'a\', \'b\')');
    await client.query(text, [1]).catch(() => undefined);
    expect((await client.query(text, [1])).rows).toEqual([{ id: 1, a: 'a', b: 'b' }]);
  });
});

describe('the embedded database through Drizzle', () => {
  let database: Database;

  beforeAll(async () => {
    database = await openDatabase({ preparedStatements: 16 });
    await database.migrate();
  });

  afterAll(() => database.close());

  it('runs a repeated query builder read as one named statement', async () => {
    const [seller] = await database.db.insert(sellers).values({ name: 'S' }).returning();
    await database.db.insert(products).values({ name: 'P', priceCents: 100, sellerId: seller!.id });
    for (let i = 0; i < 5; i++) {
      const rows = await database.db.select({ name: products.name, createdAt: products.createdAt }).from(products).where(eq(products.sellerId, seller!.id));
      expect(rows).toEqual([{ name: 'P', createdAt: expect.any(Date) }]);
    }
    const result = await database.db.execute(sql`select count(*)::int as n from pg_prepared_statements where statement like '%from "products"%'`);
    expect((result as unknown as { rows: { n: number }[] }).rows[0]!.n).toBe(1);
  });

});

describe('the nested product list on the embedded database', () => {
  const NESTED_LIST = '{ products(limit: 20) { id name seller { name } reviews { rating } } }';
  let test: TestRuntime;

  beforeAll(async () => {
    test = await createTestRuntime('pglite');
    for (let i = 0; i < 30; i++) await buildProduct(test.runtime, { name: `Product ${i}`, reviews: 2 });
  });

  afterAll(() => test.close());

  it('is planned once and its plan reused, where PostgreSQL left to choose plans it on every request', async () => {
    const { runtime } = test;
    const { principal } = await issueTestToken(runtime);
    const executor = new Executor({ schema, db: runtime.db, logger: runtime.logger, limits: DEFAULT_LIMITS });
    const sent: { query: string; params: unknown[] }[] = [];
    const stop = runtime.database.onQuery((query, params) => sent.push({ query, params }));
    try {
      for (let i = 0; i < 12; i++) {
        const result = await executor.run({ principal, source: NESTED_LIST });
        expect(result.errors).toBeUndefined();
        expect((result.data as { products: unknown[] }).products).toHaveLength(20);
      }
    } finally {
      stop();
    }
    expect(new Set(sent.map(({ query }) => query)).size).toBe(1);
    const { query, params } = sent[0]!;
    const plansOf = async (text: string) => {
      const result = await runtime.db.execute(sql`select generic_plans, custom_plans from pg_prepared_statements where statement = ${text}`);
      return (result as unknown as { rows: { generic_plans: number; custom_plans: number }[] }).rows;
    };
    // Prepared after its second use, then run eleven times on the one plan.
    expect(await plansOf(query)).toEqual([{ generic_plans: 11, custom_plans: 0 }]);

    // With its page size bound, and left to PostgreSQL's own choice, it would be planned on every execution.
    const byHand = `prepare left_to_choose as ${query.replace(/ limit 20\) as "d0"/, ` limit $${params.length + 1}) as "d0"`)}`;
    expect(byHand).toContain(` limit $${params.length + 1})`);
    await runtime.db.execute(sql`set plan_cache_mode = auto`);
    try {
      await runtime.db.execute(sql.raw(byHand));
      for (let i = 0; i < 12; i++) await runtime.db.execute(sql.raw(`execute left_to_choose(${[...params, 20].join(', ')})`));
      expect(await plansOf(byHand)).toEqual([{ generic_plans: 0, custom_plans: 12 }]);
    } finally {
      await runtime.db.execute(sql`deallocate left_to_choose`).catch(() => undefined);
      await runtime.db.execute(sql`reset plan_cache_mode`);
    }
    expect((await runtime.db.execute(sql`show plan_cache_mode`) as unknown as { rows: { plan_cache_mode: string }[] }).rows).toEqual([
      { plan_cache_mode: 'force_generic_plan' },
    ]);
  });
});
