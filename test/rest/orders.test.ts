import { beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import fc from 'fast-check';
import { eq } from 'drizzle-orm';
import { describeEachDatabase } from '../support/runtime.js';
import { issueTestToken } from '../support/tokens.js';
import { captureSql } from '../support/sql.js';
import { buildOrder, buildProduct, type Product } from '../support/factories.js';
import { orders } from '../../src/db/schema.js';
import { versionOf } from '../../src/rest/etag.js';

const ORDER_FIELDS = ['id', 'status', 'memo', 'items', 'totalCents', 'createdAt', 'updatedAt', 'etag'];

describeEachDatabase('REST orders', (context) => {
  let authorization: string;
  let userId: number;
  let readOnly: string;
  let stranger: string;
  let product: Product;
  let other: Product;

  beforeAll(async () => {
    const { runtime } = context();
    ({ authorization, userId } = await issueTestToken(runtime));
    ({ authorization: readOnly } = await issueTestToken(runtime, { userId, scope: 'orders:read products:read' }));
    ({ authorization: stranger } = await issueTestToken(runtime));
    product = await buildProduct(runtime, { name: 'Headlamp', priceCents: 2500, reviews: 1 });
    other = await buildProduct(runtime, { name: 'Compass', priceCents: 1000 });
  });

  const app = () => request(context().app);
  /** A fresh pending order of the test user, with memo 'first'. */
  const newOrder = async (overrides: { status?: 'pending' | 'paid' | 'shipped' | 'delivered' | 'cancelled'; memo?: string | null } = {}) =>
    buildOrder(context().runtime, { userId, memo: 'first', items: [{ product, quantity: 2 }], ...overrides });
  const stored = async (id: number) => (await context().runtime.db.select().from(orders).where(eq(orders.id, id)))[0]!;
  const patch = (id: number, query: string, body: unknown, auth = authorization) =>
    app().patch(`/orders/${id}?${query}`).set('Authorization', auth).send(body as object);

  describe('POST /orders, GET /orders, GET /orders/{id}', () => {
    it('POST /orders creates an order: 201, the order, Location and ETag', async () => {
      const res = await app()
        .post('/orders')
        .set('Authorization', authorization)
        .send({ items: [{ productId: product.id, quantity: 2 }, { productId: other.id, quantity: 1 }], memo: 'gift' });
      expect(res.status).toBe(201);
      expect(Object.keys(res.body).sort()).toEqual([...ORDER_FIELDS].sort());
      expect(res.body).toMatchObject({ status: 'pending', memo: 'gift', totalCents: 6000 });
      expect(res.body.items).toEqual([
        { productId: product.id, quantity: 2, unitPriceCents: 2500 },
        { productId: other.id, quantity: 1, unitPriceCents: 1000 },
      ]);
      expect(res.headers.location).toBe(`${context().config.issuer}/orders/${res.body.id}`);
      // The ETag is the order's version followed by the digest of this representation.
      expect(versionOf(res.headers.etag!)).toBe(res.body.etag);
      const row = await stored(res.body.id);
      expect(row).toMatchObject({ userId, status: 'pending', memo: 'gift', totalCents: 6000 });
    });

    it('POST /orders shapes the answer with fields, but still sends Location and ETag', async () => {
      const res = await app()
        .post('/orders?fields=status,totalCents')
        .set('Authorization', authorization)
        .send({ items: [{ productId: other.id, quantity: 3 }] });
      expect(res.status).toBe(201);
      expect(res.body).toStrictEqual({ status: 'pending', totalCents: 3000 });
      expect(res.headers.location).toMatch(/\/orders\/\d+$/);
      expect(res.headers.etag).toMatch(/^"[^"]+"$/);
    });

    it('POST /orders ignores output-only fields in the body (AIP-203)', async () => {
      const res = await app()
        .post('/orders?fields=id,status,totalCents')
        .set('Authorization', authorization)
        .send({ id: 1, status: 'delivered', totalCents: 1, items: [{ productId: other.id, quantity: 1 }] });
      expect(res.status).toBe(201);
      expect(res.body.status).toBe('pending');
      expect(res.body.totalCents).toBe(1000);
    });

    it.each([
      [{}, /items/],
      [{ items: [] }, /1 to 100 items/],
      [{ items: [{ productId: 1 }] }, /items\[0\]/],
      [{ items: [{ productId: 'one', quantity: 1 }] }, /items\[0\]\.productId/],
      [{ items: [{ productId: 1, quantity: 1.5 }] }, /items\[0\]\.quantity/],
      [{ items: [{ productId: 1, quantity: 1, colour: 'red' }] }, /colour/],
      [{ items: [{ productId: 2147483647, quantity: 1 }] }, /no product 2147483647/],
      [{ items: [{ productId: 1, quantity: 1 }], memo: 7 }, /memo/],
      [{ items: [{ productId: 1, quantity: 1 }], memo: 'x'.repeat(1001) }, /memo/],
      [{ items: [{ productId: 1, quantity: 1 }], coupon: 'FREE' }, /coupon/],
    ])('POST /orders refuses %j with 400', async (body, message) => {
      const res = await app().post('/orders').set('Authorization', authorization).send(body);
      expect(res.status).toBe(400);
      expect(res.body.error.status).toBe('INVALID_ARGUMENT');
      expect(res.body.error.message).toMatch(message);
    });

    it.each([
      [{ items: [{ productId: 'one', quantity: 1 }] }, 'items[0].productId', "items[0].productId: must be a whole number from -2147483648 to 2147483647; got 'one'"],
      [{ items: [{ productId: 99999999999, quantity: 1 }] }, 'items[0].productId', 'items[0].productId: must be a whole number from -2147483648 to 2147483647; got 99999999999'],
      [{ items: [{ productId: 1, quantity: 1.5 }] }, 'items[0].quantity', 'items[0].quantity: must be a whole number from -2147483648 to 2147483647; got 1.5'],
      [{ items: [{ productId: 1, quantity: 1 }], memo: 7 }, 'memo', 'memo: must be a JSON string; got 7'],
    ])('POST /orders names the field of %j in BadRequest, in JSON terms (no GraphQL type names)', async (body, field, message) => {
      const res = await app().post('/orders').set('Authorization', authorization).send(body);
      expect(res.status).toBe(400);
      expect(res.body.error.message).toBe(`the order is not valid: ${message}`);
      expect(res.body.error.details).toContainEqual(expect.objectContaining({ fieldViolations: [expect.objectContaining({ field })] }));
    });

    it('POST /orders refuses a lone item where the items list belongs, creating nothing', async () => {
      const before = (await app().get('/orders?fields=id&page_size=200').set('Authorization', authorization)).body.length;
      const res = await app().post('/orders').set('Authorization', authorization).send({ items: { productId: other.id, quantity: 1 } });
      expect(res.status).toBe(400);
      expect(res.body.error.message).toBe('the order is not valid: items: must be a JSON array; got a JSON object');
      expect(res.body.error.details[1]).toMatchObject({ fieldViolations: [{ field: 'items' }] });
      expect((await app().get('/orders?fields=id&page_size=200').set('Authorization', authorization)).body.length).toBe(before);
    });

    it.each([
      ['an unknown top-level field', { items: [{ productId: 1, quantity: 1 }], coupon: 'FREE' }, 'coupon'],
      ['an unknown item field', { items: [{ productId: 1, quantity: 1, colour: 'red' }] }, 'items[0].colour'],
      ['no items at all', {}, 'items'],
      ['an item without its quantity', { items: [{ productId: 1 }] }, 'items[0].quantity'],
    ])('POST /orders names the field at fault in BadRequest for %s', async (_case, body, field) => {
      const res = await app().post('/orders').set('Authorization', authorization).send(body);
      expect(res.status).toBe(400);
      expect(res.body.error.details[1]).toMatchObject({ fieldViolations: [{ field }] });
    });

    it('POST /orders needs orders:write', async () => {
      const res = await app().post('/orders').set('Authorization', readOnly).send({ items: [{ productId: other.id, quantity: 1 }] });
      expect(res.status).toBe(403);
      expect(res.headers['www-authenticate']).toMatch(/error="insufficient_scope"/);
      expect(res.headers['www-authenticate']).toMatch(/scope="orders:write"/);
      expect(res.body.error).toMatchObject({ code: 403, status: 'PERMISSION_DENIED' });
    });

    it("GET /orders lists only the caller's orders, shaped by fields, paged with Link", async () => {
      const mine = [await newOrder(), await newOrder(), await newOrder()];
      await buildOrder(context().runtime, { userId: (await issueTestToken(context().runtime)).userId });
      const all = await app().get('/orders?limit=200&fields=id').set('Authorization', authorization);
      expect(all.status).toBe(200);
      const ids = all.body.map((order: { id: number }) => order.id);
      for (const order of mine) expect(ids).toContain(order.id);
      expect(all.body.every((order: object) => Object.keys(order).join() === 'id')).toBe(true);
      const strangers = await app().get('/orders?fields=id').set('Authorization', stranger);
      expect(strangers.body).toEqual([]);

      const page = await app().get('/orders?limit=2&fields=id,status').set('Authorization', authorization);
      expect(page.body).toHaveLength(2);
      expect(page.body[0]).toStrictEqual({ id: expect.any(Number), status: expect.any(String) });
      expect(page.headers.link).toBe(`<${context().config.issuer}/orders?limit=2&offset=2&fields=id%2Cstatus>; rel="next"`);
    });

    it('GET /orders with every field gives every order field; the product comes as its id unless named', async () => {
      await newOrder();
      const res = await app().get('/orders?limit=1').set('Authorization', authorization);
      expect(Object.keys(res.body[0]).sort()).toEqual([...ORDER_FIELDS].sort());
      expect(res.body[0].items[0]).toStrictEqual({ productId: product.id, quantity: 2, unitPriceCents: 2500 });
      for (const fields of ['items', 'items.*', '*']) {
        const items = await app().get(`/orders?limit=1&fields=${fields}`).set('Authorization', authorization);
        expect(Object.keys(items.body[0].items[0]).sort(), fields).toEqual(['productId', 'quantity', 'unitPriceCents']);
      }
      const named = await app().get('/orders?limit=1&fields=items.product').set('Authorization', authorization);
      expect(named.body[0].items[0].product).toEqual(expect.objectContaining({ id: product.id, name: 'Headlamp', seller: expect.objectContaining({ name: expect.any(String) }) }));
    });

    it('orders:read alone reads every default order response; products only when named, and then 403 names products:read', async () => {
      const { runtime } = context();
      const order = await newOrder();
      const ordersOnly = (await issueTestToken(runtime, { userId, scope: 'orders:read' })).authorization;
      const readWrite = (await issueTestToken(runtime, { userId, scope: 'orders:read orders:write' })).authorization;
      const list = await app().get('/orders').set('Authorization', ordersOnly);
      expect(list.status).toBe(200);
      expect(list.body.length).toBeGreaterThan(0);
      const one = await app().get(`/orders/${order.id}`).set('Authorization', ordersOnly);
      expect(one.status).toBe(200);
      expect(one.body.items).toEqual([{ productId: product.id, quantity: 2, unitPriceCents: 2500 }]);
      const created = await app().post('/orders').set('Authorization', readWrite).send({ items: [{ productId: other.id, quantity: 1 }] });
      expect(created.status).toBe(201);
      expect(created.body.items).toEqual([{ productId: other.id, quantity: 1, unitPriceCents: 1000 }]);
      const writeOnly = (await issueTestToken(runtime, { userId, scope: 'orders:write' })).authorization;
      const patched = await patch(order.id, 'update_mask=memo', { memo: 'second' }, writeOnly);
      expect(patched.status).toBe(200);
      expect(patched.body.memo).toBe('second');

      for (const [method, path] of [
        ['get', '/orders?fields=id,items.product.name'],
        ['get', `/orders/${order.id}?fields=items(product)`],
        ['post', '/orders?fields=items.product'],
        ['patch', `/orders/${order.id}?update_mask=memo&fields=items.product.id`],
      ] as const) {
        const denied = await app()[method](path).set('Authorization', readWrite).send(method === 'get' ? undefined : method === 'post' ? { items: [{ productId: other.id, quantity: 1 }] } : { memo: 'third' });
        expect(denied.status, path).toBe(403);
        expect(denied.headers['www-authenticate']).toMatch(/error="insufficient_scope".*scope="products:read"/);
        expect(denied.body.error).toMatchObject({ code: 403, status: 'PERMISSION_DENIED', message: expect.stringContaining('products:read') });
      }
      expect((await stored(order.id)).memo).toBe('second');
      const withProducts = await app().get(`/orders/${order.id}?fields=items.product.name`).set('Authorization', readOnly);
      expect(withProducts.body).toStrictEqual({ items: [{ product: { name: 'Headlamp' } }] });
    });

    it('GET /orders/{id}: the order with its ETag, status in lower case', async () => {
      const order = await newOrder({ status: 'shipped' });
      const res = await app().get(`/orders/${order.id}`).set('Authorization', authorization);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: order.id, status: 'shipped', memo: 'first', totalCents: 5000 });
      expect(res.headers.etag).toMatch(/^"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}"$/);
      expect(versionOf(res.headers.etag!)).toBe(res.body.etag);
    });

    it('GET /orders/{id} with fields: exactly those, and still the ETag', async () => {
      const order = await newOrder();
      const res = await app().get(`/orders/${order.id}?fields=memo,items.quantity`).set('Authorization', authorization);
      expect(res.body).toStrictEqual({ memo: 'first', items: [{ quantity: 2 }] });
      expect(res.headers.etag).toMatch(/^"[^"]+"$/);
      const bad = await app().get(`/orders/${order.id}?fields=items.price`).set('Authorization', authorization);
      expect(bad.status).toBe(400);
      expect(bad.body.error.message).toBe("fields: 'items.price' is not a field (OrderItem has no field 'price')");
    });

    it("GET /orders/{id}: someone else's order is 404 like a missing one; a bad id is 400", async () => {
      const order = await newOrder();
      const theirs = await app().get(`/orders/${order.id}`).set('Authorization', stranger);
      const missing = await app().get('/orders/2147483647').set('Authorization', stranger);
      expect(theirs.status).toBe(404);
      expect(missing.status).toBe(404);
      expect(theirs.body.error.status).toBe('NOT_FOUND');
      expect((await app().get('/orders/x1').set('Authorization', authorization)).status).toBe(400);
    });

    it('GET /orders needs orders:read', async () => {
      const { authorization: writeOnly } = await issueTestToken(context().runtime, { userId, scope: 'orders:write' });
      const res = await app().get('/orders?fields=id').set('Authorization', writeOnly);
      expect(res.status).toBe(403);
      expect(res.headers['www-authenticate']).toMatch(/scope="orders:read"/);
    });
  });

  describe('PATCH /orders/{id}?update_mask=…', () => {
    it.each(['', 'update_mask=', 'update_mask=%20,%20', 'update_mask=,'])('a missing or empty mask is 400 (%s)', async (query) => {
      const order = await newOrder();
      const res = await patch(order.id, query, { memo: 'changed' });
      expect(res.status).toBe(400);
      expect(res.body.error.message).toMatch(/update_mask is required/);
      expect((await stored(order.id)).memo).toBe('first');
    });

    it('trims names and collapses duplicates', async () => {
      const order = await newOrder();
      const res = await patch(order.id, `update_mask=${encodeURIComponent(' memo , memo ')}`, { memo: 'second' });
      expect(res.status).toBe(200);
      expect(res.body.memo).toBe('second');
    });

    it('changes only fields both in the mask and in the body', async () => {
      const order = await newOrder();
      const res = await patch(order.id, 'update_mask=memo', { memo: 'second', status: 'paid' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ memo: 'second', status: 'pending' });
      expect(await stored(order.id)).toMatchObject({ memo: 'second', status: 'pending' });
    });

    it('keeps a masked field that is absent from the body', async () => {
      const order = await newOrder();
      const res = await patch(order.id, 'update_mask=status,memo', { status: 'paid' });
      expect(res.status).toBe(200);
      expect(await stored(order.id)).toMatchObject({ memo: 'first', status: 'paid' });
    });

    it('sets a nullable masked field sent as null to null', async () => {
      const order = await newOrder();
      const res = await patch(order.id, 'update_mask=memo', { memo: null });
      expect(res.status).toBe(200);
      expect(res.body.memo).toBeNull();
      expect((await stored(order.id)).memo).toBeNull();
    });

    it('refuses null for a non-nullable masked field', async () => {
      const order = await newOrder();
      const res = await patch(order.id, 'update_mask=status,memo', { status: null, memo: 'lost' });
      expect(res.status).toBe(400);
      expect(res.body.error.message).toBe("'status' cannot be null");
      expect(res.body.error.details).toContainEqual(expect.objectContaining({ fieldViolations: [{ field: 'status', description: "'status' cannot be null" }] }));
      expect(await stored(order.id)).toMatchObject({ memo: 'first', status: 'pending' });
    });

    it.each([
      ['update_mask=colour', "update_mask: unknown field 'colour' (Order has no field 'colour')"],
      ['update_mask=memo,colour', "update_mask: unknown field 'colour' (Order has no field 'colour')"],
      ['update_mask=memo.text', "update_mask: 'memo' has no subfields, so 'memo.text' is not a field"],
      ['update_mask=items.colour', "update_mask: 'items.colour' is not a field (OrderItem has no field 'colour')"],
      ['update_mask=*', "update_mask: '*' (replace the whole resource) is not supported; name the fields to change"],
      ['update_mask=me-mo', "update_mask: 'me-mo' is not a field path"],
      ['update_mask=memo&update_mask=status', "the query parameter 'update_mask' is given more than once"],
    ])('an unknown or malformed mask name is 400 naming it (%s)', async (query, message) => {
      const order = await newOrder();
      const res = await patch(order.id, query, { memo: 'changed', colour: 'red' });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT', message });
      expect(res.body.error.details).toContainEqual({ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: 'update_mask', description: message }] });
      expect((await stored(order.id)).memo).toBe('first');
    });

    it('ignores output-only fields in the mask (AIP-203)', async () => {
      const order = await newOrder();
      const res = await patch(order.id, 'update_mask=id,totalCents,memo,createdAt', { id: 999, totalCents: 1, memo: 'second', createdAt: '2000-01-01T00:00:00Z' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: order.id, totalCents: 5000, memo: 'second' });
      expect(await stored(order.id)).toMatchObject({ totalCents: 5000, memo: 'second' });
    });

    it('sending back a just-read order with its mask is a no-op that keeps updatedAt and the ETag (AIP-161)', async () => {
      const order = await newOrder({ memo: null, status: 'paid' });
      const before = await stored(order.id);
      const read = await app().get(`/orders/${order.id}`).set('Authorization', authorization);
      const res = await patch(order.id, `update_mask=${Object.keys(read.body).join(',')}`, read.body);
      expect(res.status).toBe(200);
      expect(res.body).toEqual(read.body);
      expect(res.headers.etag).toBe(read.headers.etag);
      expect(await stored(order.id)).toEqual(before);
    });

    it('a mask of only output-only fields changes nothing, writes nothing, and answers 200 with the order', async () => {
      const order = await newOrder();
      const before = await stored(order.id);
      const read = await app().get(`/orders/${order.id}?fields=id`).set('Authorization', authorization);
      let res: Awaited<ReturnType<typeof patch>> | undefined;
      const statements = await captureSql(context().runtime, async () => {
        res = await patch(order.id, 'update_mask=id,items,totalCents,createdAt,updatedAt&fields=memo,status', {
          id: 7,
          items: [],
          totalCents: 1,
          createdAt: 'then',
          updatedAt: 'now',
        });
      });
      expect(res!.status).toBe(200);
      expect(res!.body).toStrictEqual({ memo: 'first', status: 'pending' });
      expect(versionOf(res!.headers.etag!)).toBe(versionOf(read.headers.etag!));
      expect(statements.some((sql) => /^\s*(update|insert|delete)/i.test(sql))).toBe(false);
      expect(await stored(order.id)).toEqual(before);
    });

    it('a no-op still needs orders:write, an existing order of the caller, and a matching If-Match', async () => {
      const order = await newOrder();
      expect((await patch(order.id, 'update_mask=id', {}, readOnly)).status).toBe(403);
      expect((await patch(order.id, 'update_mask=id', {}, stranger)).status).toBe(404);
      const stale = await app().patch(`/orders/${order.id}?update_mask=id`).set('Authorization', authorization).set('If-Match', '"stale"').send({});
      expect(stale.status).toBe(412);
    });

    it('the UPDATE sets only the masked columns present in the body', async () => {
      const order = await newOrder();
      const statements = await captureSql(context().runtime, async () => {
        expect((await patch(order.id, 'update_mask=memo,status', { memo: 'only memo' })).status).toBe(200);
      });
      expect(statements.filter((sql) => /^update/i.test(sql))).toMatchInlineSnapshot(`
        [
          "update "orders" set "memo" = $1, "updated_at" = case when "orders"."memo" is distinct from $2 then greatest(date_trunc('milliseconds', now()), date_trunc('milliseconds', "orders"."updated_at") + interval '1 millisecond') else "orders"."updated_at" end where (("orders"."id" = $3) and ("orders"."user_id" = $4)) returning "id"",
        ]
      `);
    });

    it('answers 200 with the whole updated order, or the fields asked for', async () => {
      const order = await newOrder();
      const whole = await patch(order.id, 'update_mask=status', { status: 'paid' });
      expect(Object.keys(whole.body).sort()).toEqual([...ORDER_FIELDS].sort());
      expect(whole.body.status).toBe('paid');
      const some = await patch(order.id, 'update_mask=status&fields=status', { status: 'shipped' });
      expect(some.body).toStrictEqual({ status: 'shipped' });
    });

    it("a missing order or someone else's is 404", async () => {
      const order = await newOrder();
      const theirs = await patch(order.id, 'update_mask=memo', { memo: 'mine now' }, stranger);
      expect(theirs.status).toBe(404);
      expect(theirs.body.error.status).toBe('NOT_FOUND');
      expect((await stored(order.id)).memo).toBe('first');
      expect((await patch(2147483647, 'update_mask=memo', { memo: 'x' })).status).toBe(404);
    });

    it('an illegal status move is 409 FAILED_PRECONDITION naming both states', async () => {
      const order = await newOrder({ status: 'delivered' });
      const res = await patch(order.id, 'update_mask=status', { status: 'pending' });
      expect(res.status).toBe(409);
      expect(res.body.error.status).toBe('FAILED_PRECONDITION');
      expect(res.body.error.message).toMatch(/delivered/);
      expect(res.body.error.message).toMatch(/pending/);
      expect((await stored(order.id)).status).toBe('delivered');
    });

    it('an illegal status move names both states in ErrorInfo as the order spells them, with or without a precondition', async () => {
      const order = await newOrder({ status: 'delivered' });
      const plain = await patch(order.id, 'update_mask=status', { status: 'paid' });
      expect(plain.body.error.details[0]).toMatchObject({ reason: 'ILLEGAL_STATUS_MOVE', metadata: { from: 'delivered', to: 'paid' } });
      const conditional = await patch(order.id, 'update_mask=status', { status: 'paid' }).set('If-None-Match', '"never-issued"');
      expect(conditional.status).toBe(409);
      expect(conditional.body.error.details[0]).toMatchObject({ reason: 'ILLEGAL_STATUS_MOVE', metadata: { from: 'delivered', to: 'paid' } });
    });

    it.each([
      [{ status: 'bogus' }, "'status' must be one of pending, paid, shipped, delivered, cancelled; got 'bogus'"],
      [{ status: 'PAID' }, "'status' must be one of pending, paid, shipped, delivered, cancelled; got 'PAID'"],
      [{ status: 3 }, "'status' must be one of pending, paid, shipped, delivered, cancelled; got a JSON number"],
      [{ memo: 5 }, /^'memo' must be a JSON string; got 5$/],
      [{ memo: ['a'] }, /^'memo' must be a JSON string; got a JSON array$/],
      [{ memo: 'x'.repeat(1001) }, 'memo must be at most 1000 characters'],
    ])('an invalid value is 400: %j', async (body, message) => {
      const order = await newOrder();
      const res = await patch(order.id, 'update_mask=status,memo', body);
      expect(res.status).toBe(400);
      expect(res.body.error.status).toBe('INVALID_ARGUMENT');
      if (typeof message === 'string') expect(res.body.error.message).toBe(message);
      else expect(res.body.error.message).toMatch(message);
      // AIP-193: the field is named in BadRequest, whichever check refused it.
      const field = Object.keys(body)[0];
      expect(res.body.error.details).toContainEqual(expect.objectContaining({ fieldViolations: [expect.objectContaining({ field })] }));
      expect(await stored(order.id)).toMatchObject({ memo: 'first', status: 'pending' });
    });

    it('ETag on GET and PATCH; If-Match with the current ETag applies the change', async () => {
      const order = await newOrder();
      const read = await app().get(`/orders/${order.id}`).set('Authorization', authorization);
      const res = await app()
        .patch(`/orders/${order.id}?update_mask=memo`)
        .set('Authorization', authorization)
        .set('If-Match', read.headers.etag!)
        .send({ memo: 'second' });
      expect(res.status).toBe(200);
      expect(res.headers.etag).toMatch(/^"[^"]+"$/);
      expect(res.headers.etag).not.toBe(read.headers.etag);
      const again = await app().get(`/orders/${order.id}`).set('Authorization', authorization);
      expect(again.headers.etag).toBe(res.headers.etag);
    });

    it('a stale If-Match is 412 and changes nothing', async () => {
      const order = await newOrder();
      const read = await app().get(`/orders/${order.id}?fields=id`).set('Authorization', authorization);
      expect((await patch(order.id, 'update_mask=memo', { memo: 'by someone else' })).status).toBe(200);
      const before = await stored(order.id);
      const res = await app()
        .patch(`/orders/${order.id}?update_mask=memo,status`)
        .set('Authorization', authorization)
        .set('If-Match', read.headers.etag!)
        .send({ memo: 'mine', status: 'cancelled' });
      expect(res.status).toBe(412);
      expect(res.body.error).toMatchObject({ code: 412, status: 'FAILED_PRECONDITION' });
      expect(await stored(order.id)).toEqual(before);
    });

    it('If-Match: *, a list holding the current tag, a weak tag, a malformed header', async () => {
      const order = await newOrder();
      const current = (await app().get(`/orders/${order.id}?fields=id`).set('Authorization', authorization)).headers.etag as string;
      const send = (ifMatch: string, memo: string) =>
        app().patch(`/orders/${order.id}?update_mask=memo`).set('Authorization', authorization).set('If-Match', ifMatch).send({ memo });
      const listed = await send(`"old", ${current}`, 'listed');
      expect(listed.status).toBe(200);
      expect((await send('*', 'star')).status).toBe(200);
      const latest = (await stored(order.id)).memo;
      expect(latest).toBe('star');
      const weak = await send(`W/${(await app().get(`/orders/${order.id}?fields=id`).set('Authorization', authorization)).headers.etag}`, 'weak');
      expect(weak.status).toBe(412);
      expect((await send('not-a-tag', 'bad')).status).toBe(400);
      expect((await stored(order.id)).memo).toBe('star');
    });

    it('any update_mask value gets 200 or 400, never anything else (fast-check)', async () => {
      const order = await newOrder();
      const mask = fc.oneof(
        fc.string({ maxLength: 30 }),
        fc.array(fc.constantFrom('memo', 'status', 'id', 'items', 'items.product', 'memo.x', ' ', ',', '*', 'etag', 'nope', '.'), { maxLength: 6 }).map((parts) => parts.join(',')),
      );
      await fc.assert(
        fc.asyncProperty(mask, fc.constantFrom<Record<string, unknown>>({}, { memo: 'p' }, { memo: null }, { status: 'pending' }, { memo: 3 }), async (updateMask, body) => {
          const res = await app().patch(`/orders/${order.id}`).query({ update_mask: updateMask }).set('Authorization', authorization).send(body);
          expect([200, 400]).toContain(res.status);
          if (res.status === 400) expect(res.body.error.status).toBe('INVALID_ARGUMENT');
        }),
        { numRuns: 120 },
      );
    });
  });
});
