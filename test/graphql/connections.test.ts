/**
 * Relay cursor connections (`productsConnection`, `ordersConnection`) with the same filter
 * (AIP-160) and orderBy (AIP-132) as the REST lists, and the row budget of nested lists.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { describeEachDatabase } from '../support/runtime.js';
import { issueTestToken, type TestToken } from '../support/tokens.js';
import { buildOrder, buildProduct, buildSeller } from '../support/factories.js';
import { executeGraphQL } from '../support/graphql.js';
import { captureSql, openServerLoggedRuntime, type ServerLoggedRuntime } from '../support/sql.js';
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
      [{ after: cursor }, 'after', /^after: the page token was made for another filter or order_by/],
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
