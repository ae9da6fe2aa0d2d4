/**
 * Admission to the PostgreSQL pool, with a bounded wait. postgres.js queues a statement that finds every connection
 * busy behind one of them (pipelining), where it waits for whatever runs there, a slow list filter included, and
 * can be cancelled only once it reaches the server. So statements wait here instead: at most one per connection
 * runs, the next free connection takes the oldest waiting statement, and a statement that waits longer than
 * DATABASE_POOL_WAIT_MS is refused before it is sent (503 with Retry-After on every face: nothing ran, so a retry
 * is safe).
 */
import type { PendingQuery, Row, Sql } from 'postgres';

/** Code of the error a statement refused at admission carries: the database is busy, not wrong (see errors.ts). */
export const POOL_WAIT_TIMEOUT = 'POOL_WAIT_TIMEOUT';

export class PoolWaitTimeout extends Error {
  override readonly name = 'PoolWaitTimeout';
  readonly code = POOL_WAIT_TIMEOUT;
  constructor(waitedMs: number) {
    super(`no database connection came free within ${waitedMs} ms (DATABASE_POOL_WAIT_MS)`);
  }
}

interface Waiter {
  admit(): void;
  timer: NodeJS.Timeout | undefined;
  timedOut: boolean;
}

export class PoolAdmission {
  private running = 0;
  private waiting: Waiter[] = [];
  private head = 0;

  /** `maxWaitMs` 0: wait as long as it takes. */
  constructor(
    readonly slots: number,
    readonly maxWaitMs: number,
  ) {}

  /** Statements running, and statements waiting for a slot (those that gave up included, until passed over). */
  get load(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting.length - this.head };
  }

  /** Runs `start` once a slot is free, holding the slot until what it returns settles. */
  run<T>(start: () => PromiseLike<T>): Promise<T> {
    if (this.running < this.slots) {
      this.running++;
      return this.holding(start);
    }
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { admit: resolve, timer: undefined, timedOut: false };
      if (this.maxWaitMs > 0) {
        waiter.timer = setTimeout(() => {
          waiter.timedOut = true;
          reject(new PoolWaitTimeout(this.maxWaitMs));
        }, this.maxWaitMs);
      }
      this.waiting.push(waiter);
    }).then(() => this.holding(start));
  }

  /** Runs `start` in a slot already taken, and gives the slot up once its result settles. */
  private holding<T>(start: () => PromiseLike<T>): Promise<T> {
    let started: PromiseLike<T>;
    try {
      started = start();
    } catch (error) {
      this.release();
      return Promise.reject(error);
    }
    return Promise.resolve(started).then(
      (value) => (this.release(), value),
      (error: unknown) => {
        this.release();
        throw error;
      },
    );
  }

  /** Hands the slot to the oldest statement still waiting, or frees it. */
  private release(): void {
    while (this.head < this.waiting.length) {
      const next = this.waiting[this.head]!;
      this.waiting[this.head++] = undefined as never;
      if (this.head === this.waiting.length) {
        this.waiting = [];
        this.head = 0;
      } else if (this.head >= 64 && this.head * 2 >= this.waiting.length) {
        // A queue that never runs empty (a pool under steady overload) would otherwise keep every spent slot.
        this.waiting = this.waiting.slice(this.head);
        this.head = 0;
      }
      if (next.timedOut) continue;
      clearTimeout(next.timer);
      next.admit();
      return;
    }
    this.running--;
  }
}

/**
 * A statement admitted through `admission` when it is first awaited, as postgres.js runs one: Drizzle calls
 * `unsafe(...)`, perhaps `.values()`, then awaits.
 */
class AdmittedStatement implements PromiseLike<unknown> {
  private asValues = false;
  private result: Promise<unknown> | undefined;

  constructor(
    private readonly admission: PoolAdmission,
    private readonly start: () => PendingQuery<Row[]>,
  ) {}

  values(): this {
    this.asValues = true;
    return this;
  }

  then<A = unknown, B = never>(onFulfilled?: ((value: unknown) => A | PromiseLike<A>) | null, onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<A | B> {
    this.result ??= this.admission.run(() => (this.asValues ? this.start().values() : this.start()));
    return this.result.then(onFulfilled, onRejected);
  }
}

/**
 * `sql` whose statements and transactions (each holding its connection throughout) are admitted through `admission`.
 * Statements inside a transaction run on its connection and are not admitted again.
 */
export function withPoolAdmission(sql: Sql, admission: PoolAdmission): Sql {
  return new Proxy(sql, {
    get(target, property, receiver) {
      switch (property) {
        case 'unsafe':
          return (...args: Parameters<Sql['unsafe']>) => new AdmittedStatement(admission, () => target.unsafe(...args));
        case 'begin':
          return (...args: unknown[]) => admission.run(() => (target.begin as (...args: unknown[]) => Promise<unknown>)(...args));
        default:
          return Reflect.get(target, property, receiver) as unknown;
      }
    },
  });
}
