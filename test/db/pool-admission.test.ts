/**
 * A burst of slow statements must not hold cheap ones for long: beyond a few statements per pooled PostgreSQL
 * connection, statements wait in Fieldgate's own queue, oldest first, and give up after DATABASE_POOL_WAIT_MS with a
 * 503 in each face's format — before anything was sent, so a retry is safe. A transaction holds a whole connection.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { sql } from 'drizzle-orm';
import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase, type Database } from '../../src/db/database.js';
import { isDatabaseUnavailable } from '../../src/db/errors.js';
import { PIPELINE_DEPTH, PoolAdmission, PoolWaitTimeout } from '../../src/db/pool-admission.js';
import { createLogger } from '../../src/logger.js';
import { openRuntime, type Runtime } from '../../src/runtime.js';
import { createTestDatabase, TEST_DATABASE_URL, type TestDatabase } from '../support/databases.js';
import { TEST_ISSUER } from '../support/runtime.js';
import { issueTestToken } from '../support/tokens.js';
import { postGraphQL } from '../support/graphql.js';

const failure = (promise: PromiseLike<unknown>) => Promise.resolve(promise).then(() => undefined, (error: unknown) => error);

const METRICS_TOKEN = 'metrics-token-of-some-length';

/** Starts a Drizzle query, which runs only when awaited, and runs again each time. */
const started = <T>(query: PromiseLike<T>): Promise<T> => Promise.resolve(query);

/** A promise settled from outside, standing in for a statement in flight. */
function deferred<T = void>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

describe('PoolAdmission', () => {
  it('runs at most `depth` statements per connection and admits the waiting ones oldest first', async () => {
    const admission = new PoolAdmission(1, 2, 0);
    const statements = [deferred(), deferred(), deferred(), deferred()];
    const started: number[] = [];
    const finished = statements.map((statement, i) =>
      admission.statement(() => {
        started.push(i);
        return statement.promise;
      }),
    );
    expect(started).toEqual([0, 1]);
    expect(admission.load).toMatchObject({ running: 2, waiting: 2 });
    statements[1]!.resolve();
    await finished[1];
    expect(started).toEqual([0, 1, 2]);
    statements[0]!.reject(new Error('the statement failed'));
    expect(await failure(finished[0]!)).toMatchObject({ message: 'the statement failed' });
    expect(started).toEqual([0, 1, 2, 3]);
    statements[2]!.resolve();
    statements[3]!.resolve();
    await Promise.all([finished[2], finished[3]]);
    expect(admission.load).toMatchObject({ running: 0, waiting: 0 });
  });

  it('gives a slot back when starting the statement throws', async () => {
    const admission = new PoolAdmission(1, 1, 0);
    expect(
      await failure(
        admission.statement(() => {
          throw new Error('could not start');
        }),
      ),
    ).toMatchObject({ message: 'could not start' });
    expect(await admission.statement(async () => 'next')).toBe('next');
  });

  it('refuses a statement that waited past the limit without running it, and passes its slot on to the next', async () => {
    const admission = new PoolAdmission(1, 1, 30);
    const slow = deferred();
    const running = admission.statement(() => slow.promise);
    let ranLate = false;
    const late = admission.statement(async () => {
      ranLate = true;
    });
    const refused = await failure(late);
    expect(refused).toBeInstanceOf(PoolWaitTimeout);
    expect(admission.load.refused).toBe(1);
    expect(isDatabaseUnavailable(refused)).toBe(true);
    const next = admission.statement(async () => 'ran');
    slow.resolve();
    await running;
    expect(await next).toBe('ran');
    expect(ranLate).toBe(false);
    expect(admission.load).toMatchObject({ running: 0, waiting: 0 });
  });

  it('starts a transaction only on a connection with nothing in flight, and lets no later statement overtake it', async () => {
    const admission = new PoolAdmission(1, 4, 0);
    const order: string[] = [];
    const first = deferred();
    const statement = admission.statement(() => (order.push('statement'), first.promise));
    const transaction = admission.transaction(async () => void order.push('transaction'));
    const later = admission.statement(async () => void order.push('later statement'));
    expect(order).toEqual(['statement']);
    first.resolve();
    await Promise.all([statement, transaction, later]);
    expect(order).toEqual(['statement', 'transaction', 'later statement']);
  });

  it('lets the statements behind a transaction in once the transaction gives up waiting', async () => {
    const admission = new PoolAdmission(1, 4, 30);
    const first = deferred();
    const statement = admission.statement(() => first.promise);
    const transaction = admission.transaction(async () => 'never');
    // Queued behind the transaction, with a longer wait of its own left when the transaction gives up.
    await new Promise((resolve) => setTimeout(resolve, 10));
    const later = admission.statement(async () => 'ran');
    expect(await failure(transaction)).toBeInstanceOf(PoolWaitTimeout);
    expect(await later).toBe('ran');
    first.resolve();
    await statement;
  });
});

describe.skipIf(!TEST_DATABASE_URL)('waiting for a pooled PostgreSQL connection [postgres]', () => {
  let testDatabase: TestDatabase;

  beforeAll(async () => {
    testDatabase = await createTestDatabase('postgres');
  });
  afterAll(async () => {
    await testDatabase?.drop();
  });

  async function withPool<T>(options: { poolSize: number; poolWaitMs: number }, fn: (database: Database) => Promise<T>): Promise<T> {
    const database = await openDatabase({ databaseUrl: testDatabase.url!, ...options });
    try {
      return await fn(database);
    } finally {
      await database.close();
    }
  }

  it('refuses a cheap statement that finds every connection full of slow ones past DATABASE_POOL_WAIT_MS', async () => {
    await withPool({ poolSize: 1, poolWaitMs: 200 }, async ({ db }) => {
      // Drizzle runs a query each time it is awaited: started once here. PIPELINE_DEPTH of them fill the connection.
      const slow = Array.from({ length: PIPELINE_DEPTH }, () => started(db.execute(sql`select pg_sleep(0.5)`)));
      let slowDone = false;
      void Promise.all(slow).then(() => (slowDone = true));
      const refused = await failure(db.execute(sql`select 1`));
      expect(slowDone, 'the cheap statement was answered only after the slow ones').toBe(false);
      expect(refused).toBeInstanceOf(Error);
      expect(isDatabaseUnavailable(refused)).toBe(true);
      await Promise.all(slow);
      // The pool goes on.
      expect(await db.execute(sql`select 1 as one`)).toEqual([{ one: 1 }]);
    });
  });

  it('holds a connection for a whole transaction, whose own statements are not admitted again', async () => {
    await withPool({ poolSize: 1, poolWaitMs: 300 }, async ({ db }) => {
      const release = deferred();
      const transaction = db.transaction(async (tx) => {
        await tx.execute(sql`select 1`);
        await release.promise;
        await tx.execute(sql`select 2`);
        return 'committed';
      });
      const outside = failure(db.execute(sql`select 3`));
      // Were it admitted, it would run once the transaction ends.
      setTimeout(release.resolve, 1000);
      expect(isDatabaseUnavailable(await outside)).toBe(true);
      expect(await transaction).toBe('committed');
    });
  });
});

describe.skipIf(!TEST_DATABASE_URL)('a request whose statement waits past DATABASE_POOL_WAIT_MS [postgres]', () => {
  let testDatabase: TestDatabase;
  let runtime: Runtime;
  let app: ReturnType<typeof createApp>;
  let token: string;

  beforeAll(async () => {
    testDatabase = await createTestDatabase('postgres');
    const env = {
      ISSUER: TEST_ISSUER,
      DATA_DIR: 'memory://',
      LOG_LEVEL: 'fatal',
      DEMO: 'false',
      DATABASE_URL: testDatabase.url!,
      DATABASE_POOL_SIZE: '1',
      DATABASE_POOL_WAIT_MS: '200',
      METRICS_TOKEN: METRICS_TOKEN,
    };
    runtime = await openRuntime(loadConfig(env), createLogger('fatal'));
    app = createApp(runtime);
    ({ token } = await issueTestToken(runtime));
  }, 60_000);

  afterAll(async () => {
    await runtime?.close();
    await testDatabase?.drop();
  });

  /**
   * Fills the only pooled connection for a second, as a slow filter would: its first statement holds it, and frees no
   * slot before then (a request that retries after a refusal is refused again).
   */
  async function whileThePoolIsBusy(fn: () => Promise<void>) {
    const busy = [started(runtime.db.execute(sql`select pg_sleep(1)`))];
    while (busy.length < PIPELINE_DEPTH) busy.push(started(runtime.db.execute(sql`select pg_sleep(0.01)`)));
    try {
      await fn();
    } finally {
      await Promise.all(busy);
    }
  }

  it('answers REST 503 UNAVAILABLE with Retry-After', async () => {
    await whileThePoolIsBusy(async () => {
      const res = await request(app).get('/products/1').query({ fields: 'id,name' }).set('Authorization', `Bearer ${token}`);
      expect(res.status, res.text).toBe(503);
      expect(res.headers['retry-after']).toMatch(/^\d+$/);
      expect(res.body.error).toMatchObject({ code: 503, status: 'UNAVAILABLE' });
    });
  });

  it('answers GraphQL with UNAVAILABLE, compiled or not', async () => {
    // The third use of an operation runs compiled (graphql-jit).
    for (let use = 1; use <= 3; use++) {
      const revocationChecks: string[] = [];
      const stop = runtime.database.onQuery((statement) => {
        if (statement.includes('revoked_access_tokens')) revocationChecks.push(statement);
      });
      try {
        await whileThePoolIsBusy(async () => {
          const res = await postGraphQL(app, token, '{ product(id: 1) { id name } }');
          expect(res.status).toBe(503);
          expect(res.headers['retry-after']).toMatch(/^\d+$/);
          expect(res.body.errors?.map((error) => error.extensions?.code), `use ${use}: ${JSON.stringify(res.body)}`).toEqual(['UNAVAILABLE']);
        });
      } finally {
        stop();
      }
      // Checked once: a second check would wait for the pool again.
      expect(revocationChecks, `use ${use}`).toHaveLength(1);
    }
  });

  it('reports the pool on /metrics: its slots, what is in flight and waiting, and each refusal', async () => {
    const scrape = async () => (await request(app).get('/metrics').set('Authorization', `Bearer ${METRICS_TOKEN}`)).text;
    const value = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
    const before = value(await scrape(), 'fieldgate_database_pool_wait_timeouts_total');
    await whileThePoolIsBusy(async () => {
      const busy = await scrape();
      expect(value(busy, 'fieldgate_database_pool_slots')).toBe(PIPELINE_DEPTH);
      expect(value(busy, 'fieldgate_database_pool_in_flight')).toBe(PIPELINE_DEPTH);
      const res = await request(app).get('/products/1').query({ fields: 'id' }).set('Authorization', `Bearer ${token}`);
      expect(res.status).toBe(503);
    });
    const after = await scrape();
    expect(value(after, 'fieldgate_database_pool_wait_timeouts_total')).toBe(before + 1);
    expect(value(after, 'fieldgate_database_pool_in_flight')).toBe(0);
    expect(value(after, 'fieldgate_database_pool_waiting')).toBe(0);
  });

  it('answers the token endpoint 503 temporarily_unavailable', async () => {
    await whileThePoolIsBusy(async () => {
      const res = await request(app).post('/token').type('form').send({ grant_type: 'refresh_token', refresh_token: 'x', client_id: 'no-such-client' });
      expect(res.status, res.text).toBe(503);
      expect(res.body.error).toBe('temporarily_unavailable');
      expect(res.headers['retry-after']).toMatch(/^\d+$/);
    });
  });
});
