/**
 * Keeps Drizzle relational queries built across requests: the same selection gives the same
 * query config, so the config is the key to a prepared query and a request only binds its
 * arguments, given as `placeholder(name)`; a page size is written in as `rowCount(n)`. A config
 * holding anything else (an SQL expression, a column, a function, a placeholder not made here) is
 * built as usual and never kept.
 * Measured gain and removal condition: docs/PERFORMANCE.md.
 *
 *   cache.findFirst(db, 'products', query({ where: { id: placeholder('id') } }), { id: args.id });
 */
import { sql, type Placeholder, type SQL } from 'drizzle-orm';
import { LRUCache } from 'lru-cache';
import type { Db } from '../database.js';

type TableName = keyof Db['query'];

/**
 * One Drizzle object per key, made here, and the key back from the object: the cache key names a
 * config's placeholders and row counts without reading Drizzle's internals.
 */
class Interned<K, V extends object> {
  private readonly byKey = new Map<K, V>();
  private readonly keys = new WeakMap<object, K>();

  constructor(private readonly make: (key: K) => V) {}

  get(key: K): V {
    let made = this.byKey.get(key);
    if (!made) {
      made = this.make(key);
      this.byKey.set(key, made);
      this.keys.set(made, key);
    }
    return made;
  }

  /** The key `value` was made for, or undefined when it was not made here. */
  keyOf(value: object): K | undefined {
    return this.keys.get(value);
  }
}

const placeholders = new Interned((name: string) => sql.placeholder(name));
const rowCounts = new Interned((value: number) => sql.raw(String(value)));

/** A named argument of a kept query, bound per request (Drizzle's `sql.placeholder`). */
export function placeholder(name: string): Placeholder {
  return placeholders.get(name);
}

/**
 * A `limit` written into the statement as a constant instead of bound. PostgreSQL plans a
 * `limit $1` for an unknown tenth of the table, so such a statement never earns a generic plan and
 * is planned again on every execution; with `limit 20` it can keep one plan, and a custom plan
 * still sees the size. Each value is a statement text of its own, so only for bounded counts
 * (page sizes), never for offsets. Measured gain: docs/PERFORMANCE.md.
 */
export function rowCount(value: number): SQL {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`a row count must be a non-negative integer, got ${value}`);
  return rowCounts.get(value);
}

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

/** The canonical text of plain data, placeholders and row counts; undefined for anything else. */
export function keyOf(value: unknown): string | undefined {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : undefined;
  if (value === undefined) return 'undefined';
  if (typeof value !== 'object') return undefined;
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
  if (prototype !== Object.prototype && prototype !== null) {
    // Of all other objects, only the placeholders and row counts made here.
    const name = placeholders.keyOf(value);
    if (name !== undefined) return `$${JSON.stringify(name)}`;
    const count = rowCounts.keyOf(value);
    return count === undefined ? undefined : `#${count}`;
  }
  const entries: string[] = [];
  for (const name of Object.keys(value)) {
    const key = keyOf((value as Record<string, unknown>)[name]);
    if (key === undefined) return undefined;
    entries.push(`${JSON.stringify(name)}:${key}`);
  }
  return `{${entries.join(',')}}`;
}
