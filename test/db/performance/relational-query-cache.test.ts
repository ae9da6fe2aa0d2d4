import { describe, expect, it, vi } from 'vitest';
import { sql } from 'drizzle-orm';
import { keyOf, placeholder, RelationalQueryCache, rowCount } from '../../../src/db/performance/relational-query-cache.js';
import { products } from '../../../src/db/schema.js';
import { describeEachDatabase } from '../../support/runtime.js';
import { buildProduct } from '../../support/factories.js';

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
