import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { PGlite } from '@electric-sql/pglite';
import { openDatabase, rowsOf, type Database } from '../../../src/db/database.js';
import { isForeignKeyViolation } from '../../../src/db/errors.js';
import { startPgliteThread, type PgliteThread } from '../../../src/db/performance/pglite-thread.js';
import { EMBEDDED_SETTINGS } from '../../../src/db/performance/pglite-memory.js';
import { products } from '../../../src/db/schema.js';

const SETUP = `
  create table t (id int primary key, name text, at timestamptz, tags text[], doc jsonb, flag boolean, big bigint);
  insert into t values (1, 'one', '2024-05-01T10:00:00Z', '{a,b}', '{"k":[1,2]}', true, 9007199254740993);
  create table parent (id int primary key);
  create table child (id int primary key, parent_id int not null references parent (id));
`;

describe('the embedded database on its own thread, against PGlite on the caller’s', () => {
  let pg: PGlite;
  let thread: PgliteThread;

  beforeAll(async () => {
    pg = new PGlite();
    await pg.waitReady;
    await pg.exec(SETUP);
    thread = await startPgliteThread({ pgdata: undefined, startParams: EMBEDDED_SETTINGS, preparedStatements: 8 });
    for (const statement of SETUP.split(';').filter((text) => text.trim())) await thread.query(statement);
  });

  afterAll(async () => {
    await thread.close();
    await pg.close();
  });

  it('starts PostgreSQL with PGlite’s settings, those it is given and the generic plans its statements need', async () => {
    const { rows } = await thread.query<{ name: string; setting: string }>(
      `select name, setting from pg_settings where name in ('plan_cache_mode', 'shared_buffers', 'search_path') order by name`,
    );
    expect(rows).toEqual([
      { name: 'plan_cache_mode', setting: 'force_generic_plan' },
      { name: 'search_path', setting: 'public' },
      { name: 'shared_buffers', setting: '2048' },
    ]);
  });

  it('gives the same rows for every parameter and column type, first and repeated use alike', async () => {
    const text = 'select * from t where id = $1 or name = $2 or at = $3 or tags = $4 or doc = $5 or flag = $6 or big = $7 order by id';
    const params = [1, null, new Date('2024-05-01T10:00:00Z'), ['a', 'b'], { k: [1, 2] }, true, 9007199254740993n];
    const expected = await pg.query(text, params);
    for (let i = 0; i < 3; i++) {
      const actual = await thread.query(text, params);
      expect(actual.rows).toEqual(expected.rows);
      expect(actual.rows).toHaveLength(1);
      expect(actual.fields).toEqual(expected.fields.map(({ name, dataTypeID }) => ({ name, dataTypeID })));
    }
  });

  it('applies the caller’s parsers on the caller’s thread, to array rows too', async () => {
    const options = { rowMode: 'array' as const, parsers: { 1184: (value: string) => `at ${value}`, 1009: (value: string) => `tags ${value}` } };
    for (let i = 0; i < 3; i++) {
      const { rows } = await thread.query('select id, at, tags, name from t where id = $1', [1], options);
      expect(rows).toEqual([[1, 'at 2024-05-01 10:00:00+00', 'tags {a,b}', 'one']]);
    }
  });

  it('throws the database error with its SQLSTATE and constraint, and stays usable', async () => {
    await expect(thread.query(`insert into t (id) values ($1)`, [1])).rejects.toMatchObject({ code: '23505', constraint: 't_pkey', message: expect.stringContaining('duplicate key') });
    const violation = await thread.query(`insert into child values ($1, $2)`, [1, 99]).catch((error: unknown) => error);
    expect(isForeignKeyViolation(violation)).toBe(true);
    await expect(thread.query(`selec 1`)).rejects.toMatchObject({ code: '42601' });
    expect((await thread.query<{ n: number }>('select count(*)::int as n from t')).rows).toEqual([{ n: 1 }]);
  });

  it('refuses a parameter that cannot be sent to the thread, and answers the next statement', async () => {
    await expect(thread.query('select $1::text as v', [() => 'not data'])).rejects.toThrow(/could not be cloned/);
    expect((await thread.query('select $1::text as v', ['data'])).rows).toEqual([{ v: 'data' }]);
  });

  it('commits a transaction’s writes, and rolls them back when its callback throws', async () => {
    await thread.transaction(async (tx) => {
      await tx.query(`insert into t (id, name) values ($1, $2)`, [20, 'kept']);
    });
    const failure = thread.transaction(async (tx) => {
      await tx.query(`insert into t (id, name) values ($1, $2)`, [21, 'dropped']);
      throw new Error('changed my mind');
    });
    await expect(failure).rejects.toThrow('changed my mind');
    const { rows } = await thread.query<{ id: number }>('select id from t where id >= 20 order by id');
    expect(rows).toEqual([{ id: 20 }]);
  });

  it('keeps statements sent outside a transaction out of it: they wait for its end and never see what it rolled back', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let inserted!: () => void;
    const insertedRow = new Promise<void>((resolve) => (inserted = resolve));
    const transaction = thread
      .transaction(async (tx) => {
        await tx.query(`insert into t (id, name) values ($1, $2)`, [30, 'uncommitted']);
        inserted();
        await held;
        throw new Error('roll back');
      })
      .catch((error: Error) => error.message);
    await insertedRow;
    let answered = false;
    const outside = thread.query<{ n: number }>('select count(*)::int as n from t where id = 30').then((result) => {
      answered = true;
      return result.rows[0]!.n;
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(answered).toBe(false);
    release();
    expect(await transaction).toBe('roll back');
    expect(await outside).toBe(0);
  });

  it('answers many concurrent statements and transactions each with its own rows', async () => {
    const writes = Array.from({ length: 40 }, (_, i) =>
      i % 4 === 0
        ? thread.transaction(async (tx) => {
            await tx.query(`insert into t (id, name) values ($1, $2)`, [100 + i, `n${i}`]);
            return (await tx.query<{ name: string }>('select name from t where id = $1', [100 + i])).rows[0]!.name;
          })
        : thread.query<{ name: string }>(`insert into t (id, name) values ($1, $2) returning name`, [100 + i, `n${i}`]).then((result) => result.rows[0]!.name),
    );
    expect(await Promise.all(writes)).toEqual(Array.from({ length: 40 }, (_, i) => `n${i}`));
  });

  it('leaves the caller’s event loop free while a statement executes', async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    const started = performance.now();
    await thread.query('select count(*) from generate_series(1, 3000000)');
    const elapsed = performance.now() - started;
    clearInterval(timer);
    // On the caller's thread the timer could not fire at all until the statement ended.
    expect(elapsed).toBeGreaterThan(100);
    expect(ticks).toBeGreaterThan(elapsed / 5 / 4);
  });

  it('refuses statements once closed, with the error the service reads as an unavailable database', async () => {
    const other = await startPgliteThread({ pgdata: undefined, startParams: [], preparedStatements: 8 });
    await other.close();
    expect(other.closed).toBe(true);
    await expect(other.query('select 1')).rejects.toMatchObject({ code: 'CONNECTION_ENDED' });
    await other.close();
  });
});

describe('openDatabase with embeddedThread', () => {
  let dataDir: string;
  let database: Database;

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'fieldgate-thread-'));
    database = await openDatabase({ dataDir, embeddedThread: true });
    await database.migrate();
  });

  afterAll(async () => {
    await database.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('migrates, reads and writes through Drizzle, timestamps as Drizzle reads them', async () => {
    const [seller] = rowsOf<{ id: number }>(await database.db.execute(sql`insert into sellers (name) values ('Thread Seller') returning id`));
    await database.db.insert(products).values({ name: 'Threaded', priceCents: 100, sellerId: seller!.id });
    const [row] = await database.db.select({ name: products.name, createdAt: products.createdAt }).from(products);
    expect(row?.name).toBe('Threaded');
    expect(row?.createdAt).toBeInstanceOf(Date);
  });

  it('starts PostgreSQL with the embedded settings, on a data directory too', async () => {
    const settings = rowsOf<{ name: string; setting: string }>(
      await database.db.execute(sql`select name, setting from pg_settings where name in ('plan_cache_mode', 'shared_buffers') order by name`),
    );
    expect(settings).toEqual([
      { name: 'plan_cache_mode', setting: 'force_generic_plan' },
      { name: 'shared_buffers', setting: '2048' },
    ]);
  });

  it('holds the data directory: a second open of it is refused while the first runs', async () => {
    await expect(openDatabase({ dataDir, embeddedThread: true })).rejects.toThrow();
  });

  it('keeps what it wrote across a restart', async () => {
    await database.close();
    database = await openDatabase({ dataDir, embeddedThread: true });
    const rows = await database.db.select({ name: products.name }).from(products);
    expect(rows).toEqual([{ name: 'Threaded' }]);
  });
});
