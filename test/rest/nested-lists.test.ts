import { beforeAll, expect, it } from 'vitest';
import request from 'supertest';
import { describeEachDatabase } from '../support/runtime.js';
import { issueTestToken } from '../support/tokens.js';
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
