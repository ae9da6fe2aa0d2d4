/**
 * Which SQL statements postgres.js runs as named prepared statements. Drizzle sends every
 * statement with `prepare: false`, which costs a parameterized statement two round trips; a
 * named one is described once per connection. A text qualifies on its second sighting, and at
 * most `capacity` texts ever do, because prepared statements live as long as their connection.
 * Measured gain, upstream report and removal condition: docs/PERFORMANCE.md.
 */
import { LRUCache } from 'lru-cache';
import type { Sql } from 'postgres';
import { DEFAULT_PREPARED_STATEMENTS } from '../../config.js';

export class PreparedStatementPolicy {
  private readonly chosen = new Set<string>();
  /** Texts seen once, waiting for a second sighting. */
  private readonly candidates: LRUCache<string, true>;

  constructor(readonly capacity: number = DEFAULT_PREPARED_STATEMENTS) {
    this.candidates = new LRUCache({ max: Math.max(1, capacity * 4) });
  }

  /** How many statement texts qualify so far. */
  get size(): number {
    return this.chosen.size;
  }

  shouldPrepare(text: string): boolean {
    if (this.chosen.has(text)) return true;
    if (this.chosen.size >= this.capacity) return false;
    if (!this.candidates.has(text)) {
      this.candidates.set(text, true);
      return false;
    }
    this.candidates.delete(text);
    this.chosen.add(text);
    return true;
  }
}

type Callback = (sql: Sql) => unknown;

/**
 * `sql` with the policy applied to every statement Drizzle sends through `unsafe`, including
 * those inside transactions and savepoints (whose scoped clients are wrapped the same way).
 */
export function withPreparedStatements(sql: Sql, policy: PreparedStatementPolicy): Sql {
  if (policy.capacity === 0) return sql;
  const wrap = (scoped: Sql): Sql =>
    new Proxy(scoped, {
      get(target, property, receiver) {
        switch (property) {
          case 'unsafe':
            return (text: string, parameters?: unknown[], options?: Record<string, unknown>) =>
              target.unsafe(text, parameters as never, { ...options, prepare: policy.shouldPrepare(text) });
          case 'begin':
          case 'savepoint':
            return (...args: unknown[]) => {
              const callback = args.pop() as Callback;
              const scope = (target as unknown as Record<typeof property, (...args: unknown[]) => unknown>)[property];
              return scope(...args, (inner: Sql) => callback(wrap(inner)));
            };
          default:
            return Reflect.get(target, property, receiver) as unknown;
        }
      },
    });
  return wrap(sql);
}
