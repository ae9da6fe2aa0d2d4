import { describe, expect, it, vi } from 'vitest';
import { eq, sql } from 'drizzle-orm';
import { keyOf, placeholder, RelationalQueryCache, rowCount } from '../../../src/db/performance/relational-query-cache.js';
import { products } from '../../../src/db/schema.js';
import { describeEachDatabase } from '../../support/runtime.js';
import { buildProduct, buildReview } from '../../support/factories.js';
import { captureSql } from '../../support/sql.js';

describe('the key of a relational query config', () => {
  it('is the same for the same plain data, and differs when anything differs', () => {
    const config = () => ({ columns: { id: true, name: true }, with: { reviews: { orderBy: { id: 'asc' }, limit: 5 } }, where: { id: placeholder('id') } });
    expect(keyOf(config())).toBe(keyOf(config()));
    expect(keyOf({ ...config(), where: { id: placeholder('other') } })).not.toBe(keyOf(config()));
    expect(keyOf({ ...config(), columns: { id: true } })).not.toBe(keyOf(config()));
    expect(keyOf({ where: { id: 7 } })).not.toBe(keyOf({ where: { id: '7' } }));
    expect(keyOf({ where: { name: 'a"b' } })).not.toBe(keyOf({ where: { name: 'a', b: '' } }));
    expect(keyOf({ limit: rowCount(20) })).toBe(keyOf({ limit: rowCount(20) }));
    expect(keyOf({ limit: rowCount(20) })).not.toBe(keyOf({ limit: rowCount(21) }));
    expect(keyOf({ limit: rowCount(20) })).not.toBe(keyOf({ limit: 20 }));
    expect(keyOf({ limit: rowCount(20) })).not.toBe(keyOf({ limit: placeholder('limit') }));
  });

  it('of a frozen config (a kept plan’s query, shared by executions) is the key its content gives, kept with it', () => {
    const deepFrozen = <T>(value: T): T => {
      if (typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype) {
        for (const inner of Object.values(value)) deepFrozen(inner);
        Object.freeze(value);
      }
      return value;
    };
    const config = () => ({ columns: { id: true }, with: { reviews: { columns: { rating: true }, limit: rowCount(10) } }, where: { id: placeholder('id') } });
    const shared = deepFrozen(config());
    expect(keyOf(shared)).toBe(keyOf(config()));
    expect(keyOf(shared)).toBe(keyOf(config()));
    // A frozen part inside a config built per request counts as its content too.
    expect(keyOf({ ...shared, where: { id: placeholder('other') } })).toBe(keyOf({ ...config(), where: { id: placeholder('other') } }));
    expect(keyOf(deepFrozen({ orderBy: (table: unknown) => table }))).toBeUndefined();
  });

  it('of a config frozen on the outside only follows what its inner objects hold now', () => {
    const inner = { id: 1 };
    const outside = Object.freeze({ where: inner });
    const before = keyOf(outside);
    inner.id = 2;
    expect(keyOf(outside)).not.toBe(before);
    expect(keyOf(outside)).toBe(keyOf({ where: { id: 2 } }));
  });

  it('takes a row count only as a non-negative integer, one SQL chunk per value', () => {
    expect(rowCount(7)).toBe(rowCount(7));
    for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53]) expect(() => rowCount(bad)).toThrow(RangeError);
    // Written into the text: any other SQL chunk stays unkept.
    expect(keyOf({ limit: sql.raw('7') })).toBeUndefined();
  });

  it('is refused for anything but plain data and placeholders', () => {
    expect(keyOf({ extras: { total: sql`count(*)` } })).toBeUndefined();
    expect(keyOf({ where: { id: products.id } })).toBeUndefined();
    expect(keyOf({ orderBy: (table: unknown) => table })).toBeUndefined();
    expect(keyOf({ where: { createdAt: new Date(0) } })).toBeUndefined();
    expect(keyOf({ limit: Number.NaN })).toBeUndefined();
    // Drizzle keeps a placeholder's name private: only placeholders made by placeholder() are known.
    expect(keyOf({ where: { id: sql.placeholder('id') } })).toBeUndefined();
  });
});

describeEachDatabase('relational queries kept built', (context) => {
  it('binds each request its own arguments to the one built query', async () => {
    const { runtime } = context();
    const [first, second] = [await buildProduct(runtime), await buildProduct(runtime)];
    const cache = new RelationalQueryCache();
    const byId = () => ({ columns: { id: true, name: true } as const, where: { id: placeholder('id') } });
    const read = (id: number) => cache.findFirst<{ id: number; name: string }>(runtime.db, 'products', byId(), { id });
    const build = vi.spyOn(runtime.db.query.products, 'findFirst');
    try {
      expect(await read(first.id)).toEqual({ id: first.id, name: first.name });
      expect(await read(second.id)).toEqual({ id: second.id, name: second.name });
      expect(await read(-1)).toBeUndefined();
      expect(build).toHaveBeenCalledTimes(1);
    } finally {
      build.mockRestore();
    }
    const page = (limit: number) =>
      cache.findMany<{ id: number }>(runtime.db, 'products', { columns: { id: true }, orderBy: { id: 'asc' }, limit: placeholder('limit') }, { limit });
    expect(await page(1)).toHaveLength(1);
    expect(await page(2)).toHaveLength(2);
    const written = (limit: number) =>
      cache.findMany<{ id: number }>(runtime.db, 'products', { columns: { id: true }, orderBy: { id: 'asc' }, limit: rowCount(limit) as never }, {});
    expect(await written(1)).toEqual([{ id: first.id }]);
    expect(await written(2)).toEqual([{ id: first.id }, { id: second.id }]);
    expect(await written(1)).toEqual([{ id: first.id }]);
  });

  it('still runs, unkept, a query whose config carries a function', async () => {
    const { runtime } = context();
    const product = await buildProduct(runtime);
    const cache = new RelationalQueryCache();
    const config = {
      columns: { id: true },
      extras: { shout: (table: typeof products) => sql<string>`upper(${table.name})` },
      where: { id: placeholder('id') },
    };
    expect(await cache.findFirst(runtime.db, 'products', config, { id: product.id })).toEqual({ id: product.id, shout: product.name.toUpperCase() });
  });
});

describeEachDatabase('reads by primary key, batched per turn of the event loop', (context) => {
  type Named = { id: number; name: string };
  const withReviews = () => ({ columns: { name: true } as const, with: { reviews: { columns: { rating: true } as const, orderBy: { id: 'asc' as const }, limit: 2 } } });

  it('answers reads made together with one statement, each its own row, a missing id with undefined', async () => {
    const { runtime } = context();
    const [first, second, third] = [await buildProduct(runtime), await buildProduct(runtime), await buildProduct(runtime)];
    for (const rating of [5, 4, 3]) await buildReview(runtime, { productId: second.id, rating });
    const cache = new RelationalQueryCache();
    let answers: unknown[] = [];
    const statements = await captureSql(runtime, async () => {
      answers = await Promise.all([first.id, second.id, -1, third.id].map((id) => cache.findById(runtime.db, 'products', withReviews(), id)));
    });
    expect(statements).toHaveLength(1);
    expect(statements[0]).toMatch(/"id" = any\(\$\d+\)$/);
    // The batch reads the id to match rows to reads, and answers each read with the columns it named.
    expect(statements[0]).toMatch(/"d0"\."id" as "id"/);
    expect(answers).toEqual([
      { name: first.name, reviews: [] },
      { name: second.name, reviews: [{ rating: 5 }, { rating: 4 }] },
      undefined,
      { name: third.name, reviews: [] },
    ]);
  });

  it('sends a lone read as the single-row statement, and never answers a later read from an earlier statement', async () => {
    const { runtime } = context();
    const product = await buildProduct(runtime, { name: 'before' });
    const cache = new RelationalQueryCache();
    const read = () => cache.findById<Named>(runtime.db, 'products', { columns: { id: true, name: true } }, product.id);
    const statements = await captureSql(runtime, async () => {
      expect(await read()).toEqual({ id: product.id, name: 'before' });
      await runtime.db.update(products).set({ name: 'after' }).where(eq(products.id, product.id));
      expect(await read()).toEqual({ id: product.id, name: 'after' });
    });
    expect(statements.filter((statement) => statement.startsWith('select'))).toHaveLength(2);
    expect(statements[0]).toMatch(/= \$1 limit \$?\d*/);
    expect(statements[0]).not.toMatch(/any\(/);
  });

  it('answers a selection without the id, alone and together', async () => {
    const { runtime } = context();
    const [first, second] = [await buildProduct(runtime), await buildProduct(runtime)];
    const cache = new RelationalQueryCache();
    const nameOnly = () => ({ columns: { name: true } as const });
    expect(await cache.findById(runtime.db, 'products', nameOnly(), first.id)).toEqual({ name: first.name });
    const together = await Promise.all([first.id, second.id, first.id].map((id) => cache.findById(runtime.db, 'products', nameOnly(), id)));
    expect(together).toEqual([{ name: first.name }, { name: second.name }, { name: first.name }]);
  });

  it('gives each of many reads of one id its own copy, so no request sees another change its row', async () => {
    const { runtime } = context();
    const product = await buildProduct(runtime);
    const cache = new RelationalQueryCache();
    await buildReview(runtime, { productId: product.id, rating: 4 });
    const selection = { columns: { id: true, name: true, createdAt: true }, with: { reviews: { columns: { rating: true } } } } as const;
    const rows = await Promise.all(
      Array.from({ length: 20 }, () => cache.findById<Named & { createdAt: unknown; reviews: Array<{ rating: number }> }>(runtime.db, 'products', selection, product.id)),
    );
    expect(new Set(rows).size).toBe(20);
    expect(new Set(rows.map((row) => row!.reviews)).size).toBe(20);
    expect(new Set(rows.map((row) => row!.reviews[0])).size).toBe(20);
    for (const row of rows) expect(row).toEqual({ id: product.id, name: product.name, createdAt: rows[0]!.createdAt, reviews: [{ rating: 4 }] });
  });

  it('keeps selections apart: a different selection is a statement of its own, each answered with its own columns', async () => {
    const { runtime } = context();
    const product = await buildProduct(runtime);
    const cache = new RelationalQueryCache();
    let answers: unknown[] = [];
    const statements = await captureSql(runtime, async () => {
      answers = await Promise.all([
        cache.findById(runtime.db, 'products', { columns: { id: true } }, product.id),
        cache.findById(runtime.db, 'products', { columns: { id: true, priceCents: true } }, product.id),
      ]);
    });
    expect(statements).toHaveLength(2);
    expect(answers).toEqual([{ id: product.id }, { id: product.id, priceCents: product.priceCents }]);
  });

  it('splits a batch of more than a hundred ids, and answers every read', async () => {
    const { runtime } = context();
    const made: Array<{ id: number }> = [];
    for (let i = 0; i < 130; i++) made.push(await buildProduct(runtime));
    const cache = new RelationalQueryCache();
    let answers: Array<Named | undefined> = [];
    const statements = await captureSql(runtime, async () => {
      answers = await Promise.all(made.map((product) => cache.findById<Named>(runtime.db, 'products', { columns: { id: true, name: true } }, product.id)));
    });
    expect(statements).toHaveLength(2);
    expect(answers.map((row) => row?.id)).toEqual(made.map((product) => product.id));
  });

  it('rejects every read of a batch whose statement fails, and the next batch runs', async () => {
    const { runtime } = context();
    const product = await buildProduct(runtime);
    const cache = new RelationalQueryCache();
    const broken = { columns: { id: true }, with: { noSuchRelation: true } };
    const failed = await Promise.allSettled([product.id, product.id + 1].map((id) => cache.findById(runtime.db, 'products', broken, id)));
    expect(failed.map((result) => result.status)).toEqual(['rejected', 'rejected']);
    expect(await cache.findById(runtime.db, 'products', { columns: { id: true } }, product.id)).toEqual({ id: product.id });
  });

  it('reads a selection it cannot batch (a column left out by false) on its own', async () => {
    const { runtime } = context();
    const product = await buildProduct(runtime);
    const cache = new RelationalQueryCache();
    const rows = await Promise.all([product.id, product.id].map((id) => cache.findById<Record<string, unknown>>(runtime.db, 'products', { columns: { description: false } }, id)));
    for (const row of rows) expect(row).toMatchObject({ id: product.id, name: product.name });
    expect(rows[0]).not.toHaveProperty('description');
  });
});
