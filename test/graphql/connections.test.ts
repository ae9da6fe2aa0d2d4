/**
 * Relay cursor connections (`productsConnection`, `ordersConnection`) with the same filter
 * (AIP-160) and orderBy (AIP-132) as the REST lists, and the row budget of nested lists.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import postgres from 'postgres';
import { sql } from 'drizzle-orm';
import { createTestRuntime, describeEachDatabase, type TestRuntime } from '../support/runtime.js';
import { issueTestToken, type TestToken } from '../support/tokens.js';
import { buildOrder, buildProduct, buildSeller } from '../support/factories.js';
import { executeGraphQL } from '../support/graphql.js';
import { captureSql, explainAnalyze, openServerLoggedRuntime, rowsReadFrom, type PlanNode, type ServerLoggedRuntime } from '../support/sql.js';
import { TEST_DATABASE_URL } from '../support/databases.js';
import { createGraphQL, type GraphQLService } from '../../src/graphql/index.js';
import { createApp } from '../../src/app.js';

const PAGE = `query ($first: Int, $after: String, $orderBy: String, $filter: String) {
  productsConnection(first: $first, after: $after, orderBy: $orderBy, filter: $filter) {
    edges { cursor node { id priceCents seller { name } reviews(limit: 2) { rating } } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}`;

type Page = {
  edges: { cursor: string; node: { id: number; priceCents: number; seller: { name: string }; reviews: { rating: number }[] } }[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null; startCursor: string | null };
};

describeEachDatabase('GraphQL cursor connections', (context) => {
  let caller: TestToken;
  let graphql: GraphQLService;

  beforeAll(async () => {
    const { runtime } = context();
    caller = await issueTestToken(runtime, { scope: 'products:read orders:read' });
    graphql = createGraphQL(runtime);
    const acme = await buildSeller(runtime, { name: 'Acme' });
    for (let i = 0; i < 7; i++) await buildProduct(runtime, { priceCents: 1000 * (i % 4), sellerId: i % 2 ? acme.id : undefined, reviews: 3 });
  });

  const run = (query: string, variables?: Record<string, unknown>) => executeGraphQL(graphql, caller.principal, query, variables);

  it('pages forward with endCursor, filtered and ordered, each page one SQL statement with its relations', async () => {
    const variables = { first: 2, orderBy: 'price desc', filter: 'seller.name = "Acme" OR price < 2000' };
    const seen: Page['edges'] = [];
    let after: string | null = null;
    for (let pages = 0; ; pages++) {
      let result: Awaited<ReturnType<typeof run>> | undefined;
      const sql = await captureSql(context().runtime, async () => {
        result = await run(PAGE, { ...variables, after });
      });
      expect(result!.errors).toBeUndefined();
      expect(sql).toHaveLength(1);
      const page = (result!.data as { productsConnection: Page }).productsConnection;
      seen.push(...page.edges);
      expect(page.pageInfo.endCursor).toBe(page.edges.at(-1)?.cursor ?? null);
      expect(page.pageInfo.startCursor).toBe(page.edges[0]?.cursor ?? null);
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
      expect(pages).toBeLessThan(10);
    }
    const nodes = seen.map((edge) => edge.node);
    expect(nodes.every((node) => node.seller.name === 'Acme' || node.priceCents < 2000)).toBe(true);
    expect(nodes.map((node) => node.priceCents)).toEqual([...nodes.map((node) => node.priceCents)].sort((a, b) => b - a));
    expect(nodes.every((node) => node.reviews.length === 2)).toBe(true);
    expect(new Set(nodes.map((node) => node.id)).size).toBe(nodes.length);
    const plain = await run('{ products(limit: 200, orderBy: "price desc", filter: "seller.name = \\"Acme\\" OR price < 2000") { id } }');
    expect((plain.data as { products: { id: number }[] }).products.map((product) => product.id)).toEqual(nodes.map((node) => node.id));
  });

  it('refuses bad arguments with INVALID_ARGUMENT naming the argument (and the position for filter)', async () => {
    const first = (await run(PAGE, { first: 1, filter: 'price > 0' })).data as { productsConnection: Page };
    const cursor = first.productsConnection.pageInfo.endCursor;
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ filter: 'price >' }, 'filter', /^filter: expected a value .* at position 8$/],
      [{ filter: 'password = "x"' }, 'filter', /not a filterable field/],
      [{ orderBy: 'password' }, 'orderBy', /^orderBy 'password' is not sortable/],
      [{ first: -1 }, 'first', /first must not be negative/],
      [{ after: cursor }, 'after', /^after: the page token was made for another list, filter, order_by or caller/],
      [{ after: `${cursor}x`, filter: 'price > 0' }, 'after', /^after: the page token is not a page token of this list/],
    ];
    for (const [variables, field, message] of cases) {
      const result = await run(PAGE, variables);
      expect(result.errors?.[0]?.extensions, JSON.stringify(variables)).toMatchObject({ code: 'INVALID_ARGUMENT', field });
      expect(result.errors?.[0]?.message).toMatch(message);
    }
    if (first.productsConnection.pageInfo.hasNextPage) {
      const ok = await run(PAGE, { first: 1, filter: 'price > 0', after: cursor });
      expect(ok.errors).toBeUndefined();
    }
  });

  it('refuses an orderBy naming one column by two of its names (price and priceCents), which could not be paged through', async () => {
    for (const orderBy of ['price, priceCents desc', 'priceCents desc, price', 'price desc, id, priceCents']) {
      for (const query of [PAGE, 'query ($orderBy: String) { products(orderBy: $orderBy) { id } }']) {
        const result = await run(query, { first: 2, orderBy });
        expect(result.errors?.[0]?.extensions, orderBy).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'orderBy', reason: 'INVALID_ORDER_BY' });
        expect(result.errors?.[0]?.message).toMatch(/^orderBy names one field twice: '(price|priceCents)' and '(price|priceCents)' are the same field$/);
      }
    }
    // Paging by one name of the column still reaches the last page, each row once.
    const seen: number[] = [];
    let after: string | null = null;
    for (let page = 0; page < 10; page++) {
      const result = (await run(PAGE, { first: 2, orderBy: 'price desc', after })).data as { productsConnection: Page };
      seen.push(...result.productsConnection.edges.map((edge) => edge.node.id));
      if (!result.productsConnection.pageInfo.hasNextPage) break;
      after = result.productsConnection.pageInfo.endCursor;
    }
    const all = (await run('{ products(limit: 200, orderBy: "price desc") { id } }')).data as { products: { id: number }[] };
    expect(seen).toEqual(all.products.map((product) => product.id));
  });

  it('coerces first above the maximum and costs the page it loads', async () => {
    const big = await run('{ productsConnection(first: 100000) { nodes { id } } }');
    expect(big.errors).toBeUndefined();
    // Three pages of 200 products × 50 reviews each are over the row budget, refused before any SQL runs.
    let refused: Awaited<ReturnType<typeof run>> | undefined;
    const sql = await captureSql(context().runtime, async () => {
      const page = (alias: string) => `${alias}: productsConnection(first: 200) { nodes { id reviews(limit: 50) { id author rating body } } }`;
      refused = await run(`{ ${page('a')} ${page('b')} ${page('c')} }`);
    });
    // The connection counts its page size once: `nodes` adds no multiplier of its own.
    expect(refused!.errors?.[0]?.extensions).toMatchObject({ code: 'INVALID_ARGUMENT', reason: 'MAX_COST', cost: 3 * (1 + 200 * (1 + 1 + 50 * 4)) });
    expect(sql).toEqual([]);
  });

  it('orders and bounds each nested list on its own, in the same statement', async () => {
    const ratings = async (reviewsField: string) => {
      let result: Awaited<ReturnType<typeof run>> | undefined;
      const sql = await captureSql(context().runtime, async () => {
        result = await run(`{ productsConnection(first: 3) { nodes { ${reviewsField} { rating } } } }`);
      });
      expect(result!.errors).toBeUndefined();
      expect(sql).toHaveLength(1);
      return (result!.data as { productsConnection: { nodes: { reviews: { rating: number }[] }[] } }).productsConnection.nodes.map((node) => node.reviews.map((review) => review.rating));
    };
    expect(await ratings('reviews')).toEqual([[1, 2, 3], [1, 2, 3], [1, 2, 3]]);
    expect(await ratings('reviews(limit: 2, orderBy: "rating desc")')).toEqual([[3, 2], [3, 2], [3, 2]]);
    const refused = await run('{ productsConnection { nodes { reviews(orderBy: "body") { id } } } }');
    expect(refused.errors?.[0]?.extensions).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'reviews.orderBy' });
  });

  it("REST and GraphQL answer one query with the same rows in the same order, and take each other's tokens", async () => {
    const { app } = context();
    const rest = (path: string) => request(app).get(path).set('Authorization', caller.authorization);
    type Connection = { nodes: { id: number }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } };
    const connection = async (variables: { first: number; after: string | null; orderBy: string; filter: string }): Promise<Connection> => {
      const result = await run(
        'query ($first: Int, $after: String, $orderBy: String, $filter: String) { productsConnection(first: $first, after: $after, orderBy: $orderBy, filter: $filter) { nodes { id } pageInfo { hasNextPage endCursor } } }',
        variables,
      );
      expect(result.errors).toBeUndefined();
      return (result.data as { productsConnection: Connection }).productsConnection;
    };
    for (const [orderBy, filter] of [
      ['', ''],
      ['price desc', ''],
      ['price desc, createdAt', 'seller.name = "Acme" OR price < 2000'],
      ['name desc', '-reviews.rating:5'],
      ['createdAt desc', 'price >= 1000'],
    ] as const) {
      const query = `fields=id&order_by=${encodeURIComponent(orderBy)}&filter=${encodeURIComponent(filter)}`;
      const byRest: number[] = [];
      let token: string | undefined;
      do {
        const res = await rest(`/products?${query}&page_size=2${token ? `&page_token=${token}` : ''}`);
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        byRest.push(...(res.body as { id: number }[]).map((item) => item.id));
        token = res.headers['next-page-token'] as string | undefined;
      } while (token);
      const byGraphQL: number[] = [];
      let after: string | null = null;
      do {
        const page: Connection = await connection({ first: 3, after, orderBy, filter });
        byGraphQL.push(...page.nodes.map((node) => node.id));
        after = page.pageInfo.hasNextPage ? page.pageInfo.endCursor : null;
      } while (after);
      expect(byGraphQL, `${orderBy} | ${filter}`).toEqual(byRest);
      expect(new Set(byRest).size).toBe(byRest.length);

      // A GraphQL cursor continues a REST walk, and a REST token a GraphQL one.
      if (byRest.length < 2) continue;
      const cursor = (await connection({ first: 1, after: null, orderBy, filter })).pageInfo.endCursor!;
      const fromCursor = await rest(`/products?${query}&page_size=200&page_token=${cursor}`);
      expect(fromCursor.status).toBe(200);
      expect((fromCursor.body as { id: number }[]).map((item) => item.id)).toEqual(byRest.slice(1));
      const restToken = (await rest(`/products?${query}&page_size=1`)).headers['next-page-token'] as string;
      expect((await connection({ first: 200, after: restToken, orderBy, filter })).nodes.map((node) => node.id)).toEqual(byRest.slice(1));
    }
  });

  it("ordersConnection shows only the caller's orders", async () => {
    const { runtime } = context();
    const owner = await issueTestToken(runtime, { scope: 'orders:read' });
    const stranger = await issueTestToken(runtime, { scope: 'orders:read' });
    const mine = [await buildOrder(runtime, { userId: owner.userId }), await buildOrder(runtime, { userId: owner.userId, status: 'paid' })];
    await buildOrder(runtime, { userId: stranger.userId });
    const result = await executeGraphQL(graphql, owner.principal, '{ ordersConnection(first: 10) { nodes { id status items { quantity } } pageInfo { hasNextPage } } }');
    expect(result.errors).toBeUndefined();
    const connection = (result.data as { ordersConnection: { nodes: { id: number }[]; pageInfo: { hasNextPage: boolean } } }).ordersConnection;
    expect(connection.nodes.map((order) => order.id)).toEqual(mine.map((order) => order.id).reverse());
    expect(connection.pageInfo.hasNextPage).toBe(false);
    const paid = await executeGraphQL(graphql, owner.principal, '{ ordersConnection(filter: "status = PAID") { nodes { id } } }');
    expect(paid.data).toEqual({ ordersConnection: { nodes: [{ id: mine[1]!.id }] } });
  });
});

/** "One SQL statement per request", checked on PostgreSQL's own statement log rather than on the client. */
describe.runIf(TEST_DATABASE_URL)('one statement per list request, on the PostgreSQL server log [postgres]', () => {
  let logged: ServerLoggedRuntime;

  beforeAll(async () => {
    logged = await openServerLoggedRuntime();
    for (let i = 0; i < 5; i++) await buildProduct(logged.runtime, { reviews: 2 });
  });

  afterAll(async () => {
    await logged?.close();
  });

  it('a filtered, ordered, token-paged REST list with nested reviews is one statement in the server log', async () => {
    const { runtime } = logged;
    const { authorization } = await issueTestToken(runtime, { scope: 'products:read' });
    const app = createApp(runtime);
    const path = '/products?page_size=2&order_by=price%20desc&filter=price%20%3E%3D%200&fields=id,name,seller(name),reviews(rating)';
    const first = await request(app).get(path).set('Authorization', authorization);
    expect(first.status).toBe(200);
    const next = `${path}&page_token=${first.headers['next-page-token'] as string}`;

    const { result: res, statements } = await logged.serverStatements(() => request(app).get(next).set('Authorization', authorization).then((answer) => answer));
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(2);
    expect(res.body[0].reviews.length).toBeGreaterThan(0);
    expect(statements, statements.join('\n')).toHaveLength(1);
    expect(statements[0]).toMatch(/from "products"/);
  });
});

/**
 * A keyset page costs its own rows, wherever it starts: its statement bounds the leading sort key as well, so the index
 * scan starts at the position. (The `OR` that says "after the token" is no index condition on its own: PostgreSQL would
 * read the index from its start and filter out every row before the position, as an offset does.) Checked on the plan
 * PostgreSQL runs, EXPLAIN ANALYZE of the page's own statement and parameters, with many rows before the position.
 */
describe.runIf(TEST_DATABASE_URL)('a later keyset page starts its index scan at its position [postgres]', () => {
  let test: TestRuntime;
  let explainer: ReturnType<typeof postgres>;

  beforeAll(async () => {
    test = await createTestRuntime('postgres');
    explainer = postgres(test.testDatabase.url!, { max: 1, onnotice: () => {} });
  });

  afterAll(async () => {
    await explainer?.end();
    await test?.close();
  });

  /** Rows the plan read and threw away by a Filter, over every node. */
  const rowsFilteredOut = (plan: PlanNode): number => (plan['Rows Removed by Filter'] ?? 0) + (plan.Plans ?? []).reduce((sum, child) => sum + rowsFilteredOut(child), 0);

  it.each(['price', 'price desc,name', 'name', 'createdAt desc'])('order_by=%s: the next page does not read the 20 000 rows that sort before its position', async (orderBy) => {
    const { runtime, app } = test;
    await runtime.db.execute(sql`delete from products`);
    const { authorization } = await issueTestToken(runtime, { scope: 'products:read' });
    const seller = await buildSeller(runtime);
    for (let i = 0; i < 6; i++) await buildProduct(runtime, { sellerId: seller.id, priceCents: 5000, name: `m${i}` });
    const path = `/products?fields=id&page_size=3&order_by=${encodeURIComponent(orderBy)}&filter=${encodeURIComponent(`seller.id = ${seller.id}`)}`;
    const first = await request(app).get(path).set('Authorization', authorization);
    const token = first.headers['next-page-token'] as string;
    expect(token).toBeDefined();
    // 20 000 rows sort before the page's position and 20 000 after it: by price, name or time.
    const desc = orderBy.includes('desc');
    const rows = (name: string, price: string, createdAt: string) =>
      `insert into products (name, price_cents, seller_id, created_at) select ${name}, ${price}, ${seller.id}, ${createdAt} from generate_series(1, 20000) g`;
    await runtime.db.execute(sql.raw(rows(`'a' || g`, desc ? '5001 + g' : 'g % 5000', `now() + interval '1 day'`)));
    await runtime.db.execute(sql.raw(rows(`'z' || g`, desc ? 'g % 5000' : '5001 + g', `now() - interval '1 day'`)));
    await runtime.db.execute(sql`analyze products`);

    const sent: { query: string; params: unknown[] }[] = [];
    const stop = runtime.database.onQuery((query, params) => {
      if (query.includes('from "products"')) sent.push({ query, params });
    });
    const next = await request(app).get(`${path}&page_token=${token}`).set('Authorization', authorization);
    stop();
    expect(next.status).toBe(200);
    expect(next.body).toHaveLength(3);
    expect(sent).toHaveLength(1);

    const plan = await explainAnalyze(explainer, sent[0]!);
    expect(rowsFilteredOut(plan), JSON.stringify(plan)).toBeLessThan(100);
  });

  it.each(['price desc', 'createdAt desc'])('order_by=%s: a page inside 20 000 equal values reads its own rows, not the whole group', async (orderBy) => {
    const { runtime, app } = test;
    await runtime.db.execute(sql`delete from products`);
    const { authorization } = await issueTestToken(runtime, { scope: 'products:read' });
    const seller = await buildSeller(runtime);
    // One import: one timestamp for all of them, and one price, above any other.
    await runtime.db.execute(sql.raw(`insert into products (name, price_cents, seller_id) select 'p' || g, 1000000, ${seller.id} from generate_series(1, 20000) g`));
    await runtime.db.execute(sql`analyze products`);
    const path = `/products?fields=id&page_size=3&order_by=${encodeURIComponent(orderBy)}`;

    const sent: { query: string; params: unknown[] }[] = [];
    const stop = runtime.database.onQuery((query, params) => {
      if (query.includes('from "products"')) sent.push({ query, params });
    });
    const first = await request(app).get(path).set('Authorization', authorization);
    const next = await request(app).get(`${path}&page_token=${first.headers['next-page-token'] as string}`).set('Authorization', authorization);
    stop();
    expect([first.status, next.status]).toEqual([200, 200]);
    const ids = [...first.body, ...next.body].map((product: { id: number }) => product.id);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(6);
    expect(sent).toHaveLength(2);
    for (const statement of sent) {
      const plan = await explainAnalyze(explainer, statement);
      expect(rowsReadFrom('products', plan), JSON.stringify(plan)).toBeLessThan(20);
    }
  });
});
