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

/** `id = any($ids)`: the primary keys of one batch of `findById` reads, bound as one array. */
const anyOfIds = sql`any(${placeholders.get('ids')})`;
/** At most this many keys in one statement; a larger batch is split. */
const MAX_BATCH = 100;

/** The reads of one selection by primary key waiting for the next batch, by key. */
interface Batch {
  readonly db: Db;
  readonly table: TableName;
  readonly config: object;
  readonly waiters: Map<number, Array<{ resolve: (row: unknown) => void; reject: (error: unknown) => void }>>;
}

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
  /** `findById` reads waiting for the end of this turn of the event loop, by database and selection. */
  private readonly batches = new WeakMap<Db, Map<string, Batch>>();

  constructor(private readonly maxPerDb = 500) {}

  /**
   * One row by its primary key `id`, or undefined. Reads of the same selection (`config`, which
   * has no `where`) that arrive in the same turn of the event loop, from any request, share one
   * statement: alone, `where id = $1 limit 1`; together, `where id = any($1)`. Nothing is kept
   * beyond the turn: each read sees the table as the statement finds it.
   */
  findById<T>(db: Db, table: TableName, config: object, id: number): Promise<T | undefined> {
    const configKey = keyOf(config);
    if (configKey === undefined || !selectsColumnsByName(config)) return this.findFirst<T>(db, table, byOneId(config), { id });
    let pending = this.batches.get(db);
    if (!pending) this.batches.set(db, (pending = new Map()));
    const key = `${String(table)} ${configKey}`;
    let batch = pending.get(key);
    if (!batch) {
      batch = { db, table, config, waiters: new Map() };
      pending.set(key, batch);
      const scheduled = batch;
      setImmediate(() => {
        pending.delete(key);
        this.flush(scheduled);
      });
    }
    const waiting = batch;
    return new Promise<T | undefined>((resolve, reject) => {
      const entry = { resolve: resolve as (row: unknown) => void, reject };
      const same = waiting.waiters.get(id);
      if (same) same.push(entry);
      else waiting.waiters.set(id, [entry]);
    });
  }

  /** The rows of `ids` by id (as text), missing ones left out: the single-read statement for one id. */
  private async readBatch(batch: Batch, ids: number[]): Promise<Map<string, Record<string, unknown>>> {
    const byId = new Map<string, Record<string, unknown>>();
    if (ids.length === 1) {
      const row = await this.run(batch.db, batch.table, 'findFirst', byOneId(batch.config), { id: ids[0] });
      if (row !== undefined) byId.set(String(ids[0]), row as Record<string, unknown>);
      return byId;
    }
    // The rows are matched to their reads by id: read it, and leave it out again if the selection did not name it.
    const addsId = !readsId(batch.config);
    const config = { ...batch.config, ...(addsId && { columns: { ...columnsOf(batch.config), id: true } }), where: { id: { eq: anyOfIds } } };
    for (const row of (await this.run(batch.db, batch.table, 'findMany', config, { ids })) as Array<Record<string, unknown>>) {
      byId.set(String(row.id), row);
      if (addsId) delete row.id;
    }
    return byId;
  }

  private flush(batch: Batch): void {
    const ids = [...batch.waiters.keys()];
    for (let start = 0; start < ids.length; start += MAX_BATCH) {
      const chunk = ids.slice(start, start + MAX_BATCH);
      // Async, so a query that fails to build is this batch's answer, not the event loop's.
      this.readBatch(batch, chunk).then(
        (byId) => {
          for (const id of chunk) {
            const row = byId.get(String(id));
            const waiters = batch.waiters.get(id)!;
            waiters[0]!.resolve(row);
            // Each request resolves its own copy: GraphQL execution keys per-row state on the object.
            for (let index = 1; index < waiters.length; index++) waiters[index]!.resolve(row === undefined ? undefined : copyOf(row));
          }
        },
        (error: unknown) => {
          for (const id of chunk) for (const waiter of batch.waiters.get(id)!) waiter.reject(error);
        },
      );
    }
  }

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

/** A deep copy of a row as Drizzle returns it: plain objects, arrays, dates and primitives. */
function copyOf(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(copyOf);
  if (value instanceof Date) return new Date(value.getTime());
  if (Object.getPrototypeOf(value) !== Object.prototype) return structuredClone(value);
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) copy[key] = copyOf((value as Record<string, unknown>)[key]);
  return copy;
}

/** `config` for one row, its `id` bound per read: the statement a lone read sends. */
function byOneId(config: object): object {
  return { ...config, where: { id: placeholders.get('id') } };
}

/** A relational config's `columns`: undefined reads every column. */
function columnsOf(config: object): Record<string, unknown> | undefined {
  return (config as { columns?: Record<string, unknown> }).columns;
}

/** Whether `config` reads every column or names those it reads (none left out by `false`). */
function selectsColumnsByName(config: object): boolean {
  const columns = columnsOf(config);
  return columns === undefined || Object.values(columns).every((value) => value === true);
}

/** Whether `config` reads the `id` column (every column, or `id` named). */
function readsId(config: object): boolean {
  const columns = columnsOf(config);
  return columns === undefined || columns.id === true;
}

/**
 * Keys of deeply frozen objects: plugin-drizzle hands every execution of a kept plan the same frozen
 * query (patches/@pothos+plugin-drizzle+0.20.0.patch), whose content, and so key, cannot change.
 */
const frozenKeys = new WeakMap<object, string>();

/** The canonical text of plain data, placeholders and row counts; undefined for anything else. */
export function keyOf(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || !Object.isFrozen(value)) return keyOfValue(value);
  const known = frozenKeys.get(value);
  if (known !== undefined) return known;
  const key = keyOfValue(value);
  // Only a key no later change can reach is kept: a frozen object may hold an object that is not.
  if (key !== undefined && isDeeplyFrozen(value)) frozenKeys.set(value, key);
  return key;
}

/** Whether no plain object or array in `value` can change (the placeholders and row counts made here never do). */
function isDeeplyFrozen(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return true;
  const prototype = Object.getPrototypeOf(value) as unknown;
  if (!Array.isArray(value) && prototype !== Object.prototype && prototype !== null) return true;
  return Object.isFrozen(value) && Object.values(value).every(isDeeplyFrozen);
}

function keyOfValue(value: unknown): string | undefined {
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
    if (value === anyOfIds) return '$any("ids")';
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
