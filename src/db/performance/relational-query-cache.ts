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
import { is, Placeholder, sql, type SQL } from 'drizzle-orm';
import { LRUCache } from 'lru-cache';
import type { Db } from '../database.js';

type TableName = keyof Db['query'];

/** Placeholders made here, by name: one object per name, so the cache key reads no Drizzle internals. */
const placeholders = new Map<string, Placeholder>();
const placeholderNames = new WeakMap<Placeholder, string>();

/** A named argument of a kept query, bound per request (Drizzle's `sql.placeholder`). */
export function placeholder(name: string): Placeholder {
  let made = placeholders.get(name);
  if (!made) {
    made = sql.placeholder(name);
    placeholders.set(name, made);
    placeholderNames.set(made, name);
  }
  return made;
}

/** Row counts written into statements as constants (`rowCount`), by value. */
const rowCounts = new Map<number, SQL>();
const rowCountValues = new WeakMap<SQL, number>();

/**
 * A `limit` written into the statement as a constant instead of bound. PostgreSQL plans a
 * `limit $1` for an unknown tenth of the table, so such a statement never earns a generic plan and
 * is planned again on every execution; with `limit 20` it can keep one plan, and a custom plan
 * still sees the size. Each value is a statement text of its own, so only for bounded counts
 * (page sizes), never for offsets. Measured gain: docs/PERFORMANCE.md.
 */
export function rowCount(value: number): SQL {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`a row count must be a non-negative integer, got ${value}`);
  let made = rowCounts.get(value);
  if (!made) {
    made = sql.raw(String(value));
    rowCounts.set(value, made);
    rowCountValues.set(made, value);
  }
  return made;
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
  if (is(value, Placeholder)) {
    const name = placeholderNames.get(value);
    return name === undefined ? undefined : `$${JSON.stringify(name)}`;
  }
  const count = rowCountValues.get(value as SQL);
  if (count !== undefined) return `#${count}`;
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
