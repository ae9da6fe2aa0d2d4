import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { describeEachDatabase } from '../support/runtime.js';
import { TEST_DATABASE_URL } from '../support/databases.js';
import { createApp } from '../../src/app.js';
import { issueTestToken, type TestToken } from '../support/tokens.js';
import { captureSql, openServerLoggedRuntime, type ServerLoggedRuntime } from '../support/sql.js';
import { buildOrder, buildProduct, type Product } from '../support/factories.js';
import { reviews } from '../../src/db/schema.js';

describeEachDatabase('REST nested lists and page sizes', (context) => {
  let authorization: string;
  let popular: Product;

  beforeAll(async () => {
    const { runtime } = context();
    let userId: number;
    ({ authorization, userId } = await issueTestToken(runtime, { scope: 'products:read orders:read' }));
    popular = await buildProduct(runtime, { name: 'Popular', withShippingPolicy: true });
    await runtime.db.insert(reviews).values(
      Array.from({ length: 500 }, (_, i) => ({ productId: popular.id, author: `reviewer${i}`, rating: (i % 5) + 1 })),
    );
    const mug = await buildProduct(runtime, { name: 'Mug' });
    for (let i = 0; i < 3; i++) await buildOrder(runtime, { userId, items: [{ product: mug }, { product: popular }] });
  });

  const get = (path: string) => request(context().app).get(path).set('Authorization', authorization);

  it('gives a product its first 10 reviews, oldest first, whether asked for by name or by default', async () => {
    const named = await get(`/products/${popular.id}?fields=reviews(id,rating)`);
    expect(named.status).toBe(200);
    const ids = named.body.reviews.map((review: { id: number }) => review.id);
    expect(ids).toHaveLength(10);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    const whole = await get(`/products/${popular.id}`);
    expect(whole.body.reviews).toHaveLength(10);
    const list = await get('/products?limit=200');
    expect(list.status).toBe(200);
    for (const product of list.body) expect(product.reviews.length).toBeLessThanOrEqual(10);
  });

  it('serves the largest page of orders with the default fields', async () => {
    for (const path of ['/orders?limit=200', '/orders?limit=68', '/orders']) {
      const res = await get(path);
      expect(res.status).toBe(200);
      expect(res.body).toHaveLength(3);
      for (const order of res.body) expect(order.items).toStrictEqual([expect.objectContaining({ quantity: 1 }), expect.objectContaining({ quantity: 1 })]);
    }
  });

  it('refuses a selection too large for the page in REST terms, without GraphQL internals', async () => {
    const res = await get('/orders?limit=200&fields=id,items(product)');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: {
        code: 400,
        status: 'INVALID_ARGUMENT',
        message: 'the response would be too large: ask for fewer fields or a smaller limit',
        details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', domain: 'fieldgate.dev', reason: 'RESPONSE_TOO_LARGE', metadata: { limit: 'MAX_COST' } }],
      },
    });
    expect((await get('/orders?limit=5&fields=id,items(product)')).status).toBe(200);
  });
});

/** AIP-158: `page_size` is a maximum, so a page whose selection costs too much shrinks to what the cost limit allows. */
describeEachDatabase('REST pages shrunk to the cost limit', (context) => {
  let caller: TestToken;
  let orderIds: number[];

  beforeAll(async () => {
    const { runtime } = context();
    caller = await issueTestToken(runtime, { scope: 'products:read orders:read' });
    const mug = await buildProduct(runtime, { name: 'Mug', reviews: 2 });
    orderIds = [];
    for (let i = 0; i < 30; i++) orderIds.push((await buildOrder(runtime, { userId: caller.userId, items: [{ product: mug, quantity: i + 1 }] })).id);
    orderIds.reverse(); // newest first, the default order
  });

  const get = (path: string) => request(context().app).get(path).set('Authorization', caller.authorization);

  it('serves a smaller default page for fields=items.product, and its tokens walk every order exactly once', async () => {
    const { pages, sizes } = await walk(get, '/orders?fields=items.product,id');
    // The largest page the cost limit allows, as the legacy `limit` (which refuses rather than shrinks) confirms.
    const fitting = sizes[0]!;
    expect(fitting).toBeGreaterThan(1);
    expect(fitting).toBeLessThan(30);
    expect((await get(`/orders?limit=${fitting}&fields=items.product,id`)).status).toBe(200);
    expect((await get(`/orders?limit=${fitting + 1}&fields=items.product,id`)).status).toBe(400);
    expect(sizes.slice(0, -1).every((size) => size === fitting)).toBe(true);
    expect(pages.flat()).toEqual(orderIds);
    const first = (await get('/orders?fields=items.product,id')).body as { items: { product: { name: string } }[] }[];
    expect(first[0]!.items[0]!.product.name).toBe('Mug');
  });

  it('shrinks an explicit page_size the same way, keeps a page_size that fits, and continues the same filter and order_by', async () => {
    const shrunk = await get('/orders?page_size=200&fields=id,items(product)');
    expect(shrunk.status).toBe(200);
    const fitting = (shrunk.body as unknown[]).length;
    expect(fitting).toBeLessThan(30);
    expect(shrunk.headers['next-page-token']).toEqual(expect.any(String));
    expect(new URL(/^<([^>]+)>/.exec(shrunk.headers.link as string)![1]!).searchParams.get('page_size')).toBe('200');
    expect((await get('/orders?page_size=3&fields=id,items(product)')).body).toHaveLength(3);

    // Orders with quantity 1..5 are the five oldest.
    const filtered = orderIds.slice(0, 25).sort((a, b) => a - b);
    const { pages } = await walk(get, `/orders?page_size=150&order_by=id&filter=${encodeURIComponent('items.quantity > 5')}&fields=id,items(product)`);
    expect(pages.length).toBeGreaterThan(1);
    expect(pages.flat()).toEqual(filtered);
  });

  it('is one SQL statement for a shrunk page', async () => {
    const first = await get('/orders?fields=id,items.product');
    let res: request.Response | undefined;
    const sql = await captureSql(context().runtime, async () => {
      res = await get(`/orders?fields=id,items.product&page_token=${first.headers['next-page-token'] as string}`);
    });
    expect(res!.status).toBe(200);
    expect(res!.body).toHaveLength((first.body as unknown[]).length);
    expect(sql).toHaveLength(1);
  });
});

describeEachDatabase(
  'REST pages under a small cost limit',
  (context) => {
    let caller: TestToken;
    let productIds: number[];
    let orderIds: number[];

    beforeAll(async () => {
      const { runtime } = context();
      caller = await issueTestToken(runtime, { scope: 'products:read orders:read' });
      productIds = [];
      for (let i = 0; i < 20; i++) productIds.push((await buildProduct(runtime, { reviews: 1 })).id);
      const mug = await buildProduct(runtime, { name: 'Mug' });
      productIds.push(mug.id);
      orderIds = [];
      for (let i = 0; i < 3; i++) orderIds.unshift((await buildOrder(runtime, { userId: caller.userId, items: [{ product: mug }] })).id);
    });

    const get = (path: string) => request(context().app).get(path).set('Authorization', caller.authorization);

    it('shrinks page_size=200 with every product field, reviews included, and walks every product once; limit=200 stays exact', async () => {
      const { pages, sizes } = await walk(get, '/products?page_size=200&fields=*');
      expect(sizes[0]).toBeGreaterThan(1);
      expect(sizes[0]).toBeLessThan(21);
      expect(pages.flat()).toEqual(productIds);
      // Legacy clients advance `offset` by `limit` themselves: a shorter page would skip products.
      expect((await get('/products?limit=200&fields=*')).status).toBe(400);
      expect((await get(`/products?limit=${sizes[0]!}&fields=*`)).body).toHaveLength(sizes[0]!);
    });

    it('shrinks a page down to one item, and refuses with the same 400 only a selection too large for one', async () => {
      const { pages } = await walk(get, '/orders?fields=*');
      expect(pages).toEqual(orderIds.map((id) => [id]));
      const tooLarge = {
        error: {
          code: 400,
          status: 'INVALID_ARGUMENT',
          message: 'the response would be too large: ask for fewer fields or a smaller limit',
          details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', domain: 'fieldgate.dev', reason: 'RESPONSE_TOO_LARGE', metadata: { limit: 'MAX_COST' } }],
        },
      };
      for (const path of ['/orders?fields=items.product', '/orders?page_size=1&fields=items.product', '/orders?limit=1&fields=items.product']) {
        const res = await get(path);
        expect(res.status, path).toBe(400);
        expect(res.body).toEqual(tooLarge);
      }
    });
  },
  // Every product field costs 72 a product, every order field 311 an order, an order's items with their products 7005.
  { GRAPHQL_MAX_COST: '400' },
);

/** Statements read from PostgreSQL's own log (log_statement = all), as in test/graphql/connections.test.ts. */
describe.runIf(TEST_DATABASE_URL)('a shrunk page is one statement in the PostgreSQL server log [postgres]', () => {
  let logged: ServerLoggedRuntime;

  beforeAll(async () => {
    logged = await openServerLoggedRuntime();
  });

  afterAll(async () => {
    await logged?.close();
  });

  it('sizing the page from the cost limit sends no statement of its own', async () => {
    const { runtime } = logged;
    const { authorization, userId } = await issueTestToken(runtime, { scope: 'products:read orders:read' });
    const mug = await buildProduct(runtime, { name: 'Mug', reviews: 1 });
    for (let i = 0; i < 20; i++) await buildOrder(runtime, { userId, items: [{ product: mug }] });
    const app = createApp(runtime);
    const get = (path: string) => request(app).get(path).set('Authorization', authorization);
    const statements = async (path: string) => {
      const { result: res, statements: ours } = await logged.serverStatements(() => get(path).then((answer) => answer));
      return { res, ours };
    };
    // The first request of this selection is the one that works out its page size.
    const first = await statements('/orders?fields=id,items.product');
    expect(first.res.status).toBe(200);
    expect((first.res.body as unknown[]).length).toBeLessThan(20);
    expect(first.ours, first.ours.join('\n')).toHaveLength(1);
    const next = await statements(`/orders?page_size=200&fields=id,items.product&page_token=${first.res.headers['next-page-token'] as string}`);
    expect(next.res.status).toBe(200);
    expect(next.ours).toHaveLength(1);
    expect(next.ours[0]).toMatch(/from "orders"/);
  });
});

/** Follows `Next-Page-Token` from `path` (the next request is `Link: rel="next"`); every page's ids and sizes. */
async function walk(get: (path: string) => request.Test, path: string): Promise<{ pages: number[][]; sizes: number[] }> {
  const pages: number[][] = [];
  let next: string | undefined = path;
  while (next !== undefined) {
    const res: request.Response = await get(next);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    pages.push((res.body as { id: number }[]).map((item) => item.id));
    const token = res.headers['next-page-token'] as string | undefined;
    const link = res.headers.link as string | undefined;
    if (token === undefined) {
      expect(link).toBeUndefined();
      break;
    }
    const url = new URL(/^<([^>]+)>; rel="next"$/.exec(link!)![1]!);
    expect(url.searchParams.get('page_token')).toBe(token);
    next = `${url.pathname}${url.search}`;
    expect(pages.length).toBeLessThan(50);
  }
  return { pages, sizes: pages.map((page) => page.length) };
}
