/**
 * An outside auditor's corner cases for the REST layer, driven through the real app on each database: what a
 * demanding client of a Google-style API (AIP-132/134/157/158/160/193) would try.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { gzipSync } from 'node:zlib';
import { eq } from 'drizzle-orm';
import { describeEachDatabase } from '../support/runtime.js';
import { issueTestToken } from '../support/tokens.js';
import { buildOrder, buildProduct, type Product } from '../support/factories.js';
import { orders } from '../../src/db/schema.js';

describeEachDatabase('REST audit corners', (context) => {
  let authorization: string;
  let userId: number;
  let product: Product;
  let other: Product;

  beforeAll(async () => {
    const { runtime } = context();
    ({ authorization, userId } = await issueTestToken(runtime));
    product = await buildProduct(runtime, {
      name: 'Lantern',
      priceCents: 1500,
    });
    other = await buildProduct(runtime, { name: 'Stove', priceCents: 4000 });
  });

  const app = () => request(context().app);
  const storedOrder = async (id: number) => (await context().runtime.db.select().from(orders).where(eq(orders.id, id)))[0]!;
  const newOrder = () => buildOrder(context().runtime, { userId, memo: 'before', items: [{ product, quantity: 1 }] });
  const sendJson = (req: request.Test, text: string) => req.set('Authorization', authorization).set('Content-Type', 'application/json').send(text);

  describe('JSON bodies whose object names a member twice (RFC 8259 §4: behaviour would be unpredictable)', () => {
    it('PATCH with "memo" twice is 400 naming the member, and changes nothing', async () => {
      const order = await newOrder();
      const res = await sendJson(app().patch(`/orders/${order.id}?update_mask=memo`), '{"memo":"first","memo":"second"}');
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({
        code: 400,
        status: 'INVALID_ARGUMENT',
      });
      expect(res.body.error.message).toBe("the request body names 'memo' twice in one object");
      expect(res.body.error.details).toEqual([
        expect.objectContaining({
          '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
          reason: 'DUPLICATE_JSON_MEMBER',
          domain: 'fieldgate.dev',
        }),
        {
          '@type': 'type.googleapis.com/google.rpc.BadRequest',
          fieldViolations: [{ field: 'memo', description: res.body.error.message }],
        },
      ]);
      expect((await storedOrder(order.id)).memo).toBe('before');
    });

    it('a name spelled with an escape is the same name (`m\\u0065mo` is `memo`)', async () => {
      const order = await newOrder();
      const res = await sendJson(app().patch(`/orders/${order.id}?update_mask=memo`), '{"memo":"first","m\\u0065mo":"second"}');
      expect(res.status).toBe(400);
      expect(res.body.error.details[0].reason).toBe('DUPLICATE_JSON_MEMBER');
      expect((await storedOrder(order.id)).memo).toBe('before');
    });

    it('POST /orders with an item naming "quantity" twice is 400 with the member\'s path, and places no order', async () => {
      const before = (await context().runtime.db.select().from(orders).where(eq(orders.userId, userId))).length;
      const res = await sendJson(app().post('/orders'), `{"items":[{"productId":${product.id},"quantity":1},{"productId":${other.id},"quantity":1,"quantity":5}]}`);
      expect(res.status).toBe(400);
      expect(res.body.error.details[0].reason).toBe('DUPLICATE_JSON_MEMBER');
      expect(res.body.error.details[1].fieldViolations[0].field).toBe('items[1].quantity');
      expect((await context().runtime.db.select().from(orders).where(eq(orders.userId, userId))).length).toBe(before);
    });

    it('a compressed body is checked once inflated', async () => {
      const order = await newOrder();
      const res = await app()
        .patch(`/orders/${order.id}?update_mask=memo`)
        .set('Authorization', authorization)
        .set('Content-Type', 'application/json')
        .set('Content-Encoding', 'gzip')
        .serialize((data: unknown) => data as string)
        .send(gzipSync('{"memo":"first","memo":"second"}'));
      expect(res.status).toBe(400);
      expect(res.body.error.details[0].reason).toBe('DUPLICATE_JSON_MEMBER');
      expect((await storedOrder(order.id)).memo).toBe('before');
    });

    it('the same name in different objects, in strings or as a value is no duplicate', async () => {
      const res = await sendJson(
        app().post('/orders?fields=memo,items(quantity)'),
        `{"memo":"\\"memo\\":1, {\\"memo\\"","items":[{"productId":${product.id},"quantity":2}],"x":{"memo":{"memo":[{"memo":1},{"memo":2}]}}}`,
      );
      // "x" is an unknown field (its own 400), which shows the duplicate check let the body through.
      expect(res.body.error?.details[0].reason).not.toBe('DUPLICATE_JSON_MEMBER');
      const ok = await sendJson(app().post('/orders?fields=memo,items(quantity)'), `{"memo":"memo memo","items":[{"productId":${product.id},"quantity":2}]}`);
      expect(ok.status).toBe(201);
      expect(ok.body).toEqual({ memo: 'memo memo', items: [{ quantity: 2 }] });
    });

    it('a body of only a byte order mark is an empty body: 400 MISSING_BODY, nothing changed', async () => {
      const order = await newOrder();
      const res = await sendJson(app().patch(`/orders/${order.id}?update_mask=memo`), '\ufeff');
      expect(res.status).toBe(400);
      expect(res.body.error.details[0].reason).toBe('MISSING_BODY');
      expect((await storedOrder(order.id)).memo).toBe('before');
    });

    it('a body declared as UTF-16, which the check above cannot read, is 415 (RFC 8259 §8.1: JSON is exchanged as UTF-8)', async () => {
      const order = await newOrder();
      for (const [charset, body] of [
        ['utf-16le', Buffer.from('{"memo":"a","memo":"b"}', 'utf16le')],
        ['utf-16', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('{"memo":"a","memo":"b"}', 'utf16le')])],
      ] as const) {
        const res = await app()
          .patch(`/orders/${order.id}?update_mask=memo`)
          .set('Authorization', authorization)
          .set('Content-Type', `application/json; charset=${charset}`)
          .send(body);
        expect(res.status).toBe(415);
        expect(res.body.error).toMatchObject({
          code: 415,
          status: 'INVALID_ARGUMENT',
          message: expect.stringMatching(/charset.*UTF-8/),
          details: [expect.objectContaining({ reason: 'UNSUPPORTED_ENCODING' })],
        });
      }
      expect((await storedOrder(order.id)).memo).toBe('before');
    });
  });

  describe('PATCH bodies sent back as read', () => {
    it('an order just read, sent back whole with a mask of every field, is still a no-op (AIP-203 output-only fields)', async () => {
      const order = await newOrder();
      const read = await app().get(`/orders/${order.id}`).set('Authorization', authorization);
      const res = await app()
        .patch(`/orders/${order.id}?update_mask=${Object.keys(read.body).join(',')}`)
        .set('Authorization', authorization)
        .send(read.body as object);
      expect(res.status).toBe(200);
      expect(res.body).toEqual(read.body);
    });
  });
});
