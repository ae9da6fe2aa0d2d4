/**
 * Admission to the PostgreSQL pool, with a bounded wait. postgres.js pipelines a statement that finds every connection
 * busy onto one of them, up to a hundred deep, where it waits for whatever runs there, a slow list filter included,
 * and can be cancelled only once it reaches the server. So beyond a few statements per connection (PIPELINE_DEPTH:
 * pipelining a few saves round trips, and CPU, under load) statements wait here instead, oldest first; a transaction
 * holds a whole connection. One that waits longer than DATABASE_POOL_WAIT_MS is refused before it is sent (503 with
 * Retry-After on every face: nothing ran, so a retry is safe).
 */
import type { PendingQuery, Row, Sql } from 'postgres';

/** Statements in flight per connection before the next waits here. Measured: docs/PERFORMANCE.md. */
export const PIPELINE_DEPTH = 4;

/** Code of the error a statement refused at admission carries: the database is busy, not wrong (see errors.ts). */
export const POOL_WAIT_TIMEOUT = 'POOL_WAIT_TIMEOUT';

export class PoolWaitTimeout extends Error {
  override readonly name = 'PoolWaitTimeout';
  readonly code = POOL_WAIT_TIMEOUT;
  constructor(waitedMs: number) {
    super(`no database connection came free within ${waitedMs} ms (DATABASE_POOL_WAIT_MS)`);
  }
}

/** What /metrics reports of the pool (src/http/metrics.ts). */
export interface PoolLoad {
  slots: number;
  running: number;
  waiting: number;
  refused: number;
}

interface Waiter {
  /** Slots it needs: one for a statement, a connection's worth for a transaction. */
  weight: number;
  admit(): void;
  timer: NodeJS.Timeout | undefined;
  timedOut: boolean;
}

export class PoolAdmission {
  /** Slots: each connection takes `depth` statements. */
  private readonly slots: number;
  private running = 0;
  private waiting: Waiter[] = [];
  private head = 0;

  /** `maxWaitMs` 0: wait as long as it takes. */
  constructor(
    connections: number,
    private readonly depth: number,
    readonly maxWaitMs: number,
  ) {
    this.slots = connections * depth;
  }

  /** Statements refused for waiting too long, since start. */
  private refused = 0;

  /** Slots in all, in use, callers waiting (those that gave up included, until passed over) and refused so far. */
  get load(): PoolLoad {
    return { slots: this.slots, running: this.running, waiting: this.waiting.length - this.head, refused: this.refused };
  }

  /** Runs a statement once a slot is free, holding it until what `start` returns settles. */
  statement<T>(start: () => PromiseLike<T>): Promise<T> {
    return this.run(start, 1);
  }

  /** Runs a transaction once a whole connection is free, holding it until what `start` returns settles. */
  transaction<T>(start: () => PromiseLike<T>): Promise<T> {
    return this.run(start, this.depth);
  }

  private run<T>(start: () => PromiseLike<T>, weight: number): Promise<T> {
    if (this.head === this.waiting.length && this.running + weight <= this.slots) {
      this.running += weight;
      return this.holding(start, weight);
    }
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { weight, admit: resolve, timer: undefined, timedOut: false };
      if (this.maxWaitMs > 0) {
        waiter.timer = setTimeout(() => {
          waiter.timedOut = true;
          this.refused++;
          reject(new PoolWaitTimeout(this.maxWaitMs));
          // A transaction that gave up at the head may have held back statements that fit.
          this.admitWaiting();
        }, this.maxWaitMs).unref(); // nothing to wait for once everything else has stopped
      }
      this.waiting.push(waiter);
    }).then(() => this.holding(start, weight));
  }

  /** Runs `start` in slots already taken, and gives them up once its result settles. */
  private holding<T>(start: () => PromiseLike<T>, weight: number): Promise<T> {
    let started: PromiseLike<T>;
    try {
      started = start();
    } catch (error) {
      this.release(weight);
      return Promise.reject(error);
    }
    // `then` directly: Promise.resolve would wrap the driver's own promise in one more, a microtask later.
    return (started.then as Promise<T>['then'])(
      (value) => (this.release(weight), value),
      (error: unknown) => {
        this.release(weight);
        throw error;
      },
    );
  }

  private release(weight: number): void {
    this.running -= weight;
    this.admitWaiting();
  }

  /** Admits waiting callers, oldest first, while the oldest fits: a transaction is not overtaken for ever by statements. */
  private admitWaiting(): void {
    while (this.head < this.waiting.length) {
      const next = this.waiting[this.head]!;
      if (!next.timedOut && this.running + next.weight > this.slots) return;
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
      this.running += next.weight;
      next.admit();
    }
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
    this.result ??= this.admission.statement(() => (this.asValues ? this.start().values() : this.start()));
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
          return (...args: unknown[]) => admission.transaction(() => (target.begin as (...args: unknown[]) => Promise<unknown>)(...args));
        default:
          return Reflect.get(target, property, receiver) as unknown;
      }
    },
  });
}
