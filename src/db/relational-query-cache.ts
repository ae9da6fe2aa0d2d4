/**
 * Keeps Drizzle relational queries built, so a GraphQL or REST request whose selection was seen
 * before skips Drizzle's SQL builder and only binds its arguments.
 *
 * plugin-drizzle hands each resolver a fresh query config — columns, relations, nested
 * ordering — built from the request's selection. The same selection gives the same config, so
 * the config itself is the cache key. Arguments that differ per request (an id, a page) go in as
 * `sql.placeholder(name)` and are bound at execution. A config holding anything but plain data
 * and placeholders (an SQL expression, a column object, a function) gives no key: such a query
 * is built as usual and never cached.
 *
 *   const byId = { id: sql.placeholder('id') };
 *   cache.findFirst(db, 'products', query({ where: byId }), { id: args.id });
 */
import { is, Placeholder } from 'drizzle-orm';
import { LRUCache } from 'lru-cache';
import type { Db } from './database.js';

type TableName = keyof Db['query'];

interface PreparedRelationalQuery {
  execute(placeholders: Record<string, unknown>): Promise<unknown>;
}

/** `db.query.<table>.findFirst` / `findMany`, as far as this module uses them. */
type RelationalQueries = Record<'findFirst' | 'findMany', (config: unknown) => PreparedRelationalQuery & { prepare(name: string): PreparedRelationalQuery }>;

export class RelationalQueryCache {
  /** Prepared queries per database handle (a transaction's handle gets none). */
  private readonly byDb = new WeakMap<Db, LRUCache<string, PreparedRelationalQuery>>();
  private count = 0;

  constructor(private readonly maxPerDb = 500) {}

  findFirst<T>(db: Db, table: TableName, config: object, placeholders: Record<string, unknown>): Promise<T | undefined> {
    return this.run(db, table, 'findFirst', config, placeholders) as Promise<T | undefined>;
  }

  findMany<T>(db: Db, table: TableName, config: object, placeholders: Record<string, unknown>): Promise<T[]> {
    return this.run(db, table, 'findMany', config, placeholders) as Promise<T[]>;
  }

  private run(db: Db, table: TableName, method: 'findFirst' | 'findMany', config: object, placeholders: Record<string, unknown>): Promise<unknown> {
    const queries = db.query[table] as unknown as RelationalQueries;
    const configKey = keyOf(config);
    if (configKey === undefined) return queries[method](config).execute(placeholders);
    let cache = this.byDb.get(db);
    if (!cache) this.byDb.set(db, (cache = new LRUCache({ max: this.maxPerDb })));
    const key = `${String(table)}.${method} ${configKey}`;
    let prepared = cache.get(key);
    if (!prepared) {
      prepared = queries[method](config).prepare(`relational_${++this.count}`);
      cache.set(key, prepared);
    }
    return prepared.execute(placeholders);
  }
}

/** The canonical text of plain data and placeholders; undefined for anything else. */
export function keyOf(value: unknown): string | undefined {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : undefined;
  if (value === undefined) return 'undefined';
  if (typeof value !== 'object') return undefined;
  if (is(value, Placeholder)) return `$${JSON.stringify((value as unknown as { name: string }).name)}`;
  if (Array.isArray(value)) {
    const items: string[] = [];
    for (const item of value) {
      const key = keyOf(item);
      if (key === undefined) return undefined;
      items.push(key);
    }
    return `[${items.join(',')}]`;
  }
  const prototype = Object.getPrototypeOf(value) as unknown;
  if (prototype !== Object.prototype && prototype !== null) return undefined;
  const entries: string[] = [];
  for (const name of Object.keys(value)) {
    const key = keyOf((value as Record<string, unknown>)[name]);
    if (key === undefined) return undefined;
    entries.push(`${JSON.stringify(name)}:${key}`);
  }
  return `{${entries.join(',')}}`;
}
