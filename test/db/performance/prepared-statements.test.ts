import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq, sql } from 'drizzle-orm';
import { openDatabase, type Database } from '../../../src/db/database.js';
import { PreparedStatementPolicy } from '../../../src/db/performance/prepared-statements.js';
import { products } from '../../../src/db/schema.js';
import { createPostgresDatabase, TEST_DATABASE_URL } from '../../support/databases.js';

describe('the prepared-statement policy', () => {
  it('prepares a statement text from its second use on', () => {
    const policy = new PreparedStatementPolicy(10);
    expect(policy.shouldPrepare('select 1')).toBe(false);
    expect(policy.shouldPrepare('select 1')).toBe(true);
    expect(policy.shouldPrepare('select 1')).toBe(true);
    expect(policy.shouldPrepare('select 2')).toBe(false);
    expect(policy.size).toBe(1);
  });

  it('never prepares more than its capacity of distinct texts', () => {
    const policy = new PreparedStatementPolicy(3);
    for (let i = 0; i < 10; i++) {
      policy.shouldPrepare(`select ${i}`);
      policy.shouldPrepare(`select ${i}`);
    }
    expect(policy.size).toBe(3);
    expect(policy.shouldPrepare('select 0')).toBe(true);
    expect(policy.shouldPrepare('select 9')).toBe(false);
  });

  it('prepares nothing with capacity 0', () => {
    const policy = new PreparedStatementPolicy(0);
    for (let i = 0; i < 3; i++) expect(policy.shouldPrepare('select 1')).toBe(false);
  });
});

/** The prepared statements of the one pooled connection's session that touch `products`. */
async function preparedOnProducts(database: Database): Promise<number> {
  const result = await database.db.execute(
    sql`select count(*)::int as n from pg_prepared_statements where statement like '%from "products"%'`,
  );
  return (result as unknown as { n: number }[])[0]!.n;
}

async function readProductName(database: Database, id: number): Promise<string | undefined> {
  const [row] = await database.db.select({ name: products.name }).from(products).where(eq(products.id, id));
  return row?.name;
}

describe.runIf(TEST_DATABASE_URL)('prepared statements on PostgreSQL', () => {
  let server: Awaited<ReturnType<typeof createPostgresDatabase>>;
  const opened: Database[] = [];

  async function open(preparedStatements: number): Promise<Database> {
    const database = await openDatabase({ databaseUrl: server.url, poolSize: 1, preparedStatements });
    opened.push(database);
    return database;
  }

  beforeAll(async () => {
    server = await createPostgresDatabase();
    const database = await open(0);
    await database.migrate();
  });

  afterAll(async () => {
    for (const database of opened) await database.close();
    await server.drop();
  });

  it('runs a repeated parameterized query as one named statement on its connection', async () => {
    const database = await open(16);
    for (let i = 0; i < 5; i++) expect(await readProductName(database, 1)).toBeUndefined();
    expect(await preparedOnProducts(database)).toBe(1);
  });

  it('prepares the statements of a transaction too', async () => {
    const database = await open(16);
    for (let i = 0; i < 3; i++) {
      await database.db.transaction(async (tx) => {
        await tx.select({ name: products.name }).from(products).where(eq(products.id, 2));
      });
    }
    expect(await preparedOnProducts(database)).toBe(1);
  });

  it('prepares nothing when turned off (DATABASE_PREPARED_STATEMENTS=0)', async () => {
    const database = await open(0);
    for (let i = 0; i < 5; i++) expect(await readProductName(database, 1)).toBeUndefined();
    expect(await preparedOnProducts(database)).toBe(0);
  });

  // Behind a pooler in transaction mode a named statement lands on another server connection; a COMMIT that then fails
  // there and is retried reads as a ROLLBACK, and the write is lost without an error. So 0 must mean none at all: not
  // the driver's own COMMIT, nor Drizzle's named relational queries.
  it('leaves no named statement on the connection when turned off, COMMITs and named relational queries included', async () => {
    const database = await open(0);
    for (let i = 0; i < 3; i++) {
      await database.db.transaction(async (tx) => {
        await tx.select({ name: products.name }).from(products).where(eq(products.id, 3));
      });
      await database.db.query.products.findFirst({ where: { id: 3 }, columns: { name: true } }).prepare(`named_${i}`).execute();
    }
    const result = await database.db.execute(sql`select count(*)::int as n from pg_prepared_statements`);
    expect((result as unknown as { n: number }[])[0]!.n).toBe(0);
  });

  it('keeps at most its capacity of statements on a connection', async () => {
    const database = await open(2);
    // Four distinct texts, each used three times.
    for (const column of [products.name, products.description, products.currency, products.priceCents]) {
      for (let i = 0; i < 3; i++) await database.db.select({ value: column }).from(products).where(eq(products.id, 1));
    }
    expect(await preparedOnProducts(database)).toBe(2);
  });
});
