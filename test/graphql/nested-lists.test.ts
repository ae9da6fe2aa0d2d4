import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import postgres from 'postgres';
import { sql } from 'drizzle-orm';
import { createTestRuntime, describeEachDatabase, type TestRuntime } from '../support/runtime.js';
import { TEST_DATABASE_URL } from '../support/databases.js';
import { issueTestToken, type TestToken } from '../support/tokens.js';
import { buildOrder, buildProduct, buildSeller, type Product } from '../support/factories.js';
import { executeGraphQL, postGraphQL } from '../support/graphql.js';
import { captureSql, explainAnalyze, rowsReadFrom } from '../support/sql.js';
import { createGraphQL, type GraphQLService } from '../../src/graphql/index.js';
import { reviews } from '../../src/db/schema.js';

const REVIEW_COUNT = 500;

describeEachDatabase('GraphQL nested lists', (context) => {
  let caller: TestToken;
  let graphql: GraphQLService;
  let popular: Product;

  beforeAll(async () => {
    const { runtime } = context();
    caller = await issueTestToken(runtime, { scope: 'products:read orders:read' });
    graphql = createGraphQL(runtime);
    popular = await buildProduct(runtime, { name: 'Popular' });
    await runtime.db.insert(reviews).values(
      Array.from({ length: REVIEW_COUNT }, (_, i) => ({ productId: popular.id, author: `reviewer${i}`, rating: (i % 5) + 1, body: 'x'.repeat(200) })),
    );
  });

  const run = (query: string, variables?: Record<string, unknown>) => executeGraphQL(graphql, caller.principal, query, variables);
  const reviewIds = (data: unknown) => ((data as { product: { reviews: { id: number }[] } }).product.reviews).map((review) => review.id);

  it('loads the first 10 reviews, oldest first, in the same single statement as the product', async () => {
    let result: Awaited<ReturnType<typeof run>> | undefined;
    const sql = await captureSql(context().runtime, async () => {
      result = await run('query ($id: Int!) { product(id: $id) { id reviews { id rating } } }', { id: popular.id });
    });
    expect(result!.errors).toBeUndefined();
    const ids = reviewIds(result!.data);
    expect(ids).toHaveLength(10);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(sql).toHaveLength(1);
    expect(sql[0]).toMatch(/limit/i);
  });

  it('takes a limit from 1 to 50 and refuses one outside it with INVALID_ARGUMENT', async () => {
    const query = 'query ($id: Int!, $n: Int) { product(id: $id) { reviews(limit: $n) { id } } }';
    const fifty = await run(query, { id: popular.id, n: 50 });
    expect(fifty.errors).toBeUndefined();
    const ids = reviewIds(fifty.data);
    expect(ids).toHaveLength(50);
    expect(reviewIds((await run(query, { id: popular.id, n: 3 })).data)).toEqual(ids.slice(0, 3));
    for (const n of [0, 51, -1]) {
      const refused = await run(query, { id: popular.id, n });
      expect(refused.errors?.[0]?.extensions).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'reviews.limit' });
      expect(refused.errors?.[0]?.message).toBe(`reviews limit must be from 1 to 50, got ${n}`);
    }
  });

  it('bounds every product of a page, and costs aliased pages by the reviews they can load', async () => {
    const page = (reviewsArg: string) =>
      `{ ${['a', 'b', 'c'].map((alias) => `${alias}: products(limit: 200) { id reviews${reviewsArg} { id author rating body } }`).join(' ')} }`;
    const bounded = await run(page(''));
    expect(bounded.errors).toBeUndefined();
    for (const list of Object.values(bounded.data as Record<string, { reviews: unknown[] }[]>)) {
      for (const product of list) expect(product.reviews.length).toBeLessThanOrEqual(10);
    }
    // Three pages of 200 products with 50 reviews each could load 30 000 reviews: refused before any SQL.
    let refused: Awaited<ReturnType<typeof run>> | undefined;
    const sql = await captureSql(context().runtime, async () => {
      refused = await run(page('(limit: 50)'));
    });
    expect(sql).toEqual([]);
    expect(refused!.data).toBeUndefined();
    expect(refused!.errors?.[0]?.extensions).toMatchObject({ code: 'INVALID_ARGUMENT', reason: 'MAX_COST', cost: 3 * (1 + 200 * (1 + 1 + 50 * 4)) });
    const http = await postGraphQL(context().app, caller.token, page('(limit: 50)'));
    expect(http.status).toBe(400);
    expect(http.body.errors?.[0]?.extensions).toMatchObject({ code: 'INVALID_ARGUMENT', reason: 'MAX_COST' });
  });

  it("returns an order's items up to its limit (default: all, at most 100)", async () => {
    const { runtime } = context();
    const products = await Promise.all(Array.from({ length: 3 }, () => buildProduct(runtime)));
    const order = await buildOrder(runtime, { userId: caller.userId, items: products.map((product) => ({ product })) });
    const query = 'query ($id: Int!, $n: Int) { order(id: $id) { items(limit: $n) { quantity } } }';
    const items = (result: Awaited<ReturnType<typeof run>>) => (result.data as { order: { items: unknown[] } }).order.items;
    let all: Awaited<ReturnType<typeof run>> | undefined;
    const sql = await captureSql(runtime, async () => {
      all = await run(query, { id: order.id });
    });
    expect(items(all!)).toHaveLength(3);
    expect(sql).toHaveLength(1);
    expect(items(await run(query, { id: order.id, n: 2 }))).toHaveLength(2);
    const refused = await run(query, { id: order.id, n: 101 });
    expect(refused.errors?.[0]?.extensions).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'items.limit' });
  });
});

/**
 * A product's page of reviews is read from an index in the page's order: never every review of the product sorted, nor
 * the table walked in id order past other products' reviews (which PostgreSQL picks when products average many reviews).
 */
describe.runIf(TEST_DATABASE_URL)('a page of reviews reads only that page [postgres]', () => {
  let test: TestRuntime;
  let explainer: ReturnType<typeof postgres>;
  let graphql: GraphQLService;
  let caller: TestToken;
  const PROLIFIC_REVIEWS = 20_000;

  beforeAll(async () => {
    test = await createTestRuntime('postgres');
    explainer = postgres(test.testDatabase.url!, { max: 1, onnotice: () => {} });
    const { runtime } = test;
    graphql = createGraphQL(runtime);
    caller = await issueTestToken(runtime, { scope: 'products:read' });
    const seller = await buildSeller(runtime);
    const prolific = await buildProduct(runtime, { sellerId: seller.id, name: 'prolific' });
    const quiet = await buildProduct(runtime, { sellerId: seller.id, name: 'quiet' });
    // The prolific product's reviews come in one import, so they share one timestamp, and five ratings; the quiet
    // product's five come after all of them by id.
    await runtime.db.execute(
      sql.raw(
        `insert into reviews (product_id, author, rating, body)
         select ${prolific.id}, 'a' || g, 1 + g % 5, 'x' from generate_series(1, ${PROLIFIC_REVIEWS}) g`,
      ),
    );
    await runtime.db.execute(sql.raw(`insert into reviews (product_id, author, rating, body) select ${quiet.id}, 'q' || g, g, 'x' from generate_series(1, 5) g`));
    await runtime.db.execute(sql`analyze reviews`);
  });

  afterAll(async () => {
    await explainer?.end();
    await test?.close();
  });

  it.each(['', '(orderBy: "id desc")', '(orderBy: "rating")', '(orderBy: "rating desc")', '(orderBy: "createdAt")', '(orderBy: "createdAt desc")'])(
    'reviews%s of a page of products reads at most 30 review rows, however many the products have',
    async (args) => {
      const sent: { query: string; params: unknown[] }[] = [];
      const stop = test.runtime.database.onQuery((query, params) => {
        if (query.includes('"reviews"')) sent.push({ query, params });
      });
      const result = await executeGraphQL(graphql, caller.principal, `{ products(limit: 20) { name reviews${args} { rating } } }`);
      stop();
      expect(result.errors).toBeUndefined();
      const pages = (result.data as { products: { name: string; reviews: unknown[] }[] }).products;
      expect(pages.map((product) => [product.name, product.reviews.length])).toEqual([
        ['prolific', 10],
        ['quiet', 5],
      ]);
      expect(sent).toHaveLength(1);
      const plan = await explainAnalyze(explainer, sent[0]!);
      expect(rowsReadFrom('reviews', plan), JSON.stringify(plan)).toBeLessThanOrEqual(30);
    },
  );
});
