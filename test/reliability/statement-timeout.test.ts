/**
 * One expensive list filter must not hold a pooled PostgreSQL connection for long: fifty comparisons through `reviews`,
 * OR-ed, make PostgreSQL look through every product's reviews fifty times, and the row budget bounds only the rows a
 * request loads. DATABASE_STATEMENT_TIMEOUT_MS has the server cancel such a statement; the client hears, in its
 * protocol, that this query takes too long (504 DEADLINE_EXCEEDED, GraphQL DEADLINE_EXCEEDED), and the pool goes on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { sql } from 'drizzle-orm';
import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/database.js';
import { createLogger } from '../../src/logger.js';
import { openRuntime, type Runtime } from '../../src/runtime.js';
import { queryRows } from '../../src/oauth/stores/rows.js';
import { createTestDatabase, TEST_DATABASE_URL, type TestDatabase } from '../support/databases.js';
import { TEST_ISSUER } from '../support/runtime.js';
import { issueTestToken } from '../support/tokens.js';
import { postGraphQL } from '../support/graphql.js';

const TIMEOUT_MS = 500;
/** 1.2 KB that costs seconds on 40 000 products with 200 000 reviews. */
const EXPENSIVE_FILTER = Array.from({ length: 50 }, (_, i) => `reviews.author:"zz${i}"`).join(' OR ');

describe.skipIf(!TEST_DATABASE_URL)('a statement past DATABASE_STATEMENT_TIMEOUT_MS [postgres]', () => {
  let testDatabase: TestDatabase;
  let runtime: Runtime;
  let app: ReturnType<typeof createApp>;
  let token: string;

  beforeAll(async () => {
    testDatabase = await createTestDatabase('postgres');
    const env = { ISSUER: TEST_ISSUER, DATA_DIR: 'memory://', LOG_LEVEL: 'fatal', DEMO: 'false', DATABASE_URL: testDatabase.url!, DATABASE_STATEMENT_TIMEOUT_MS: String(TIMEOUT_MS) };
    const config = loadConfig(env);
    // Opened from the configuration, as `fieldgate serve` does.
    runtime = await openRuntime(config, createLogger('fatal'));
    app = createApp(runtime);
    // Seeding runs on a connection without the limit.
    const seeder = await openDatabase({ databaseUrl: testDatabase.url!, poolSize: 1 });
    try {
      await seeder.db.execute(sql`insert into sellers (name) values ('Bulk')`);
      await seeder.db.execute(sql`insert into products (name, price_cents, seller_id)
        select 'Bulk ' || n, n, (select max(id) from sellers) from generate_series(1, 40000) n`);
      await seeder.db.execute(sql`insert into reviews (product_id, author, rating)
        select p.id, 'author ' || r, 1 + r % 5 from products p, generate_series(1, 5) r`);
      await seeder.db.execute(sql`analyze`);
    } finally {
      await seeder.close();
    }
    ({ token } = await issueTestToken(runtime));
  }, 60_000);

  afterAll(async () => {
    await runtime?.close();
    await testDatabase?.drop();
  });

  it('sets statement_timeout on the pool’s connections from DATABASE_STATEMENT_TIMEOUT_MS', async () => {
    const [row] = await queryRows<{ statement_timeout: string }>(runtime.db, sql`show statement_timeout`);
    expect(row?.statement_timeout).toBe(`${TIMEOUT_MS}ms`);
  });

  it('answers the REST list 504 DEADLINE_EXCEEDED in the Google error format, then serves the next request', async () => {
    const res = await request(app)
      .get('/products')
      .query({ filter: EXPENSIVE_FILTER, fields: 'id' })
      .set('Authorization', `Bearer ${token}`);
    expect(res.status, res.text).toBe(504);
    expect(res.body.error).toMatchObject({ code: 504, status: 'DEADLINE_EXCEEDED', message: expect.stringContaining('narrow its filter') });
    expect(res.body.error.details[0]).toMatchObject({ reason: 'STATEMENT_TIMEOUT' });

    const next = await request(app).get('/products').query({ fields: 'id', page_size: '2' }).set('Authorization', `Bearer ${token}`);
    expect(next.status, next.text).toBe(200);
    expect(next.body).toHaveLength(2);
  });

  it('answers GraphQL with DEADLINE_EXCEEDED at the field, not INTERNAL_SERVER_ERROR, running the statement once each time', async () => {
    const query = 'query Expensive($filter: String) { products(limit: 5, filter: $filter) { id } }';
    // The second use runs compiled (graphql-jit); a compiled answer with errors is usually run again on graphql-js,
    // which here would wait for the timeout twice.
    for (let use = 1; use <= 2; use++) {
      const statements: string[] = [];
      const stop = runtime.database.onQuery((statement) => {
        if (statement.includes('"reviews"')) statements.push(statement);
      });
      try {
        const res = await postGraphQL(app, token, query, { filter: EXPENSIVE_FILTER });
        expect(res.body.errors?.map((error) => error.extensions?.code), `use ${use}`).toEqual(['DEADLINE_EXCEEDED']);
      } finally {
        stop();
      }
      expect(statements, `use ${use}`).toHaveLength(1);
    }
  });
});
