import { beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { describeEachDatabase } from '../support/runtime.js';
import { issueTestToken, type TestToken } from '../support/tokens.js';
import { buildOrder, buildProduct, type Product } from '../support/factories.js';
import { executeGraphQL, postGraphQL } from '../support/graphql.js';
import { captureSql } from '../support/sql.js';
import { createGraphQL, type GraphQLService } from '../../src/graphql/index.js';
import { orders, users } from '../../src/db/schema.js';
import { STATUS_MOVES, type OrderStatusValue } from '../../src/graphql/schema/order.js';

const STATUSES: OrderStatusValue[] = ['pending', 'paid', 'shipped', 'delivered', 'cancelled'];
const LEGAL_MOVES = STATUSES.flatMap((from) => STATUS_MOVES[from].map((to) => [from, to] as const));
const ILLEGAL_MOVES = STATUSES.flatMap((from) =>
  STATUSES.filter((to) => to !== from && !STATUS_MOVES[from].includes(to)).map((to) => [from, to] as const),
);

const UPDATE = `mutation Update($id: Int!, $input: UpdateOrderInput!, $etag: String) {
  updateOrder(id: $id, input: $input, etag: $etag) { id status memo etag updatedAt }
}`;

describe('the status graph', () => {
  it('has the moves of the issue: 5 legal, 15 illegal', () => {
    expect(LEGAL_MOVES).toEqual([
      ['pending', 'paid'],
      ['pending', 'cancelled'],
      ['paid', 'shipped'],
      ['paid', 'cancelled'],
      ['shipped', 'delivered'],
    ]);
    expect(ILLEGAL_MOVES).toHaveLength(15);
  });
});

describeEachDatabase('GraphQL orders', (context) => {
  let graphql: GraphQLService;
  let me: TestToken;
  let someoneElse: TestToken;
  let mug: Product;
  let lamp: Product;

  beforeAll(async () => {
    const { runtime } = context();
    graphql = createGraphQL(runtime);
    me = await issueTestToken(runtime, { scope: 'orders:read orders:write products:read' });
    someoneElse = await issueTestToken(runtime, { scope: 'orders:read orders:write products:read' });
    mug = await buildProduct(runtime, { name: 'Camp Mug', priceCents: 995 });
    lamp = await buildProduct(runtime, { name: 'Headlamp', priceCents: 2450 });
  });

  const run = (caller: TestToken, query: string, variables?: Record<string, unknown>) =>
    executeGraphQL(graphql, caller.principal, query, variables);

  async function orderRow(id: number) {
    const [row] = await context().runtime.db.select().from(orders).where(eq(orders.id, id));
    return row!;
  }

  describe('reading', () => {
    it("orders lists only the caller's own orders, newest first, with their items", async () => {
      const { runtime } = context();
      const reader = await issueTestToken(runtime, { scope: 'orders:read products:read' });
      const older = await buildOrder(runtime, { userId: reader.userId, items: [{ product: mug, quantity: 2 }], memo: 'first' });
      const newer = await buildOrder(runtime, { userId: reader.userId, items: [{ product: lamp, quantity: 1 }, { product: mug, quantity: 1 }], status: 'paid' });
      await buildOrder(runtime, { userId: someoneElse.userId, items: [{ product: mug }] });

      const result = await run(reader, '{ orders { id status memo totalCents items { quantity unitPriceCents product { name } } } }');
      expect(result).toEqual({
        data: {
          orders: [
            {
              id: newer.id,
              status: 'PAID',
              memo: null,
              totalCents: 3445,
              items: [
                { quantity: 1, unitPriceCents: 2450, product: { name: 'Headlamp' } },
                { quantity: 1, unitPriceCents: 995, product: { name: 'Camp Mug' } },
              ],
            },
            { id: older.id, status: 'PENDING', memo: 'first', totalCents: 1990, items: [{ quantity: 2, unitPriceCents: 995, product: { name: 'Camp Mug' } }] },
          ],
        },
      });
    });

    it('reads a list of orders with items and products in one statement', async () => {
      const { runtime } = context();
      const reader = await issueTestToken(runtime, { scope: 'orders:read products:read' });
      await buildOrder(runtime, { userId: reader.userId, items: [{ product: mug }, { product: lamp }] });
      await buildOrder(runtime, { userId: reader.userId, items: [{ product: lamp }] });
      const sql = await captureSql(runtime, () => run(reader, '{ orders(limit: 5) { id items { quantity product { name } } } }'));
      expect(sql).toEqual([
        `select "d0"."id" as "id", "items"."r" as "items" from (select "d0".* from "orders" as "d0" where "d0"."user_id" = $1 order by "d0"."id" desc limit 5) as "d0" left join lateral(select coalesce(json_agg(row_to_json("t".*)), '[]') as "r" from (select "d1"."quantity" as "quantity", "d1"."id" as "id", "product"."r" as "product" from (select "d1".* from "order_items" as "d1" where "d0"."id" = "d1"."order_id" order by "d1"."id" asc limit $2) as "d1" left join lateral(select row_to_json("t".*) "r" from (select "d2"."name" as "name", "d2"."id" as "id" from "products" as "d2" where "d1"."product_id" = "d2"."id" limit $3) as "t") as "product" on true order by "d1"."id" asc) as "t") as "items" on true order by "d0"."id" desc`,
      ]);
    });

    it("order(id) answers null for someone else's order exactly as for a missing one", async () => {
      const theirs = await buildOrder(context().runtime, { userId: someoneElse.userId });
      const foreign = await run(me, 'query ($id: Int!) { order(id: $id) { id memo } }', { id: theirs.id });
      const missing = await run(me, 'query ($id: Int!) { order(id: $id) { id memo } }', { id: 987654 });
      expect(foreign).toEqual({ data: { order: null } });
      expect(missing).toEqual(foreign);
      const own = await run(someoneElse, 'query ($id: Int!) { order(id: $id) { id } }', { id: theirs.id });
      expect(own).toEqual({ data: { order: { id: theirs.id } } });
    });
  });

  describe('createOrder', () => {
    const CREATE = `mutation Create($input: CreateOrderInput!) {
      createOrder(input: $input) { id status memo totalCents items { quantity unitPriceCents product { id } } }
    }`;

    it('places a pending order for the caller at the current prices', async () => {
      const result = await run(me, CREATE, {
        input: { items: [{ productId: mug.id, quantity: 3 }, { productId: lamp.id, quantity: 1 }], memo: 'gift wrap' },
      });
      expect(result.errors).toBeUndefined();
      const order = (result.data as { createOrder: { id: number } }).createOrder;
      expect(order).toEqual({
        id: expect.any(Number),
        status: 'PENDING',
        memo: 'gift wrap',
        totalCents: 3 * 995 + 2450,
        items: [
          { quantity: 3, unitPriceCents: 995, product: { id: mug.id } },
          { quantity: 1, unitPriceCents: 2450, product: { id: lamp.id } },
        ],
      });
      expect(await orderRow(order.id)).toMatchObject({ userId: me.userId, status: 'pending', totalCents: 5435 });
    });

    it('accepts a memo of exactly 1000 characters and refuses 1001', async () => {
      const ok = await run(me, CREATE, { input: { items: [{ productId: mug.id, quantity: 1 }], memo: 'm'.repeat(1000) } });
      expect(ok.errors).toBeUndefined();
      const tooLong = await run(me, CREATE, { input: { items: [{ productId: mug.id, quantity: 1 }], memo: 'm'.repeat(1001) } });
      expect(tooLong.data).toEqual({ createOrder: null });
      expect(tooLong.errors?.[0]).toMatchObject({
        message: 'memo must be at most 1000 characters',
        extensions: { code: 'INVALID_ARGUMENT', field: 'memo' },
      });
    });

    it('refuses a memo containing a NUL character (PostgreSQL text cannot hold it), on create and update', async () => {
      const created = await run(me, CREATE, { input: { items: [{ productId: mug.id, quantity: 1 }], memo: 'a\u0000b' } });
      expect(created.errors?.[0]).toMatchObject({
        message: 'memo must not contain the NUL character',
        extensions: { code: 'INVALID_ARGUMENT', field: 'memo' },
      });
      const order = await buildOrder(context().runtime, { userId: me.userId, memo: 'clean' });
      const updated = await run(me, UPDATE, { id: order.id, input: { memo: '\u0000' } });
      expect(updated.errors?.[0]?.extensions?.code).toBe('INVALID_ARGUMENT');
      expect(await orderRow(order.id)).toMatchObject({ memo: 'clean' });
    });

    it('refuses a memo holding half of a surrogate pair, which would be stored as U+FFFD, and keeps whole pairs', async () => {
      const created = await run(me, CREATE, { input: { items: [{ productId: mug.id, quantity: 1 }], memo: 'a\ud800b' } });
      expect(created.errors?.[0]).toMatchObject({
        message: 'memo must be valid Unicode text (it holds half of a surrogate pair)',
        extensions: { code: 'INVALID_ARGUMENT', field: 'memo' },
      });
      const order = await buildOrder(context().runtime, { userId: me.userId, memo: 'clean' });
      const updated = await run(me, UPDATE, { id: order.id, input: { memo: '\udc00' } });
      expect(updated.errors?.[0]?.extensions?.code).toBe('INVALID_ARGUMENT');
      expect(await orderRow(order.id)).toMatchObject({ memo: 'clean' });
      expect((await run(me, UPDATE, { id: order.id, input: { memo: 'anchor \u{1F6A2}' } })).errors).toBeUndefined();
      expect(await orderRow(order.id)).toMatchObject({ memo: 'anchor \u{1F6A2}' });
    });

    it.each([
      ['no items', [], 'an order has 1 to 100 items, got 0'],
      ['a zero quantity', [{ quantity: 0 }], 'quantity must be from 1 to 1000, got 0'],
      ['a huge quantity', [{ quantity: 1001 }], 'quantity must be from 1 to 1000, got 1001'],
      ['the same product twice', [{ quantity: 1 }, { quantity: 2 }], 'appears twice'],
      ['an unknown product', [{ productId: 424242, quantity: 1 }], 'no product 424242'],
    ])('refuses %s with INVALID_ARGUMENT and creates nothing', async (_label, items, message) => {
      const { runtime } = context();
      const before = await runtime.db.$count(orders);
      const result = await run(me, CREATE, {
        input: { items: (items as { productId?: number; quantity: number }[]).map((item) => ({ productId: mug.id, ...item })) },
      });
      expect(result.errors?.[0]?.extensions?.code).toBe('INVALID_ARGUMENT');
      expect(result.errors?.[0]?.message).toContain(message);
      expect(await runtime.db.$count(orders)).toBe(before);
    });
  });

  describe('a token revoked while a mutation runs', () => {
    const CREATE_AFTER_TYPENAME = (productId: number) =>
      `mutation { __typename a: createOrder(input: { items: [{ productId: ${productId}, quantity: 1 }] }) { id } }`;

    it('answers UNAUTHENTICATED at the field, without the request-level status, beside the data that was produced', async () => {
      const victim = await issueTestToken(context().runtime, { scope: 'orders:write' });
      await context().runtime.db.delete(users).where(eq(users.id, victim.userId));
      const result = await run(victim, CREATE_AFTER_TYPENAME(mug.id));
      expect(result.data).toEqual({ __typename: 'Mutation', a: null });
      expect(result.errors).toHaveLength(1);
      expect(result.errors![0]).toMatchObject({ path: ['a'], extensions: { code: 'UNAUTHENTICATED' } });
      expect(result.errors![0]!.extensions).not.toHaveProperty('http');
    });

    it('answers over HTTP with 200, as a response with data must be (GraphQL over HTTP), not 401', async () => {
      // The account is deleted once its token has been accepted (and its acceptance cached for a second).
      for (let attempt = 0; ; attempt++) {
        const victim = await issueTestToken(context().runtime, { scope: 'orders:write' });
        expect((await postGraphQL(context().app, victim.token, '{ __typename }')).status).toBe(200);
        await context().runtime.db.delete(users).where(eq(users.id, victim.userId));
        const res = await postGraphQL(context().app, victim.token, CREATE_AFTER_TYPENAME(mug.id));
        if (res.body.data === undefined && attempt < 3) continue;
        expect([res.status, res.body.data]).toEqual([200, { __typename: 'Mutation', a: null }]);
        expect(res.body.errors![0]).toEqual({ message: 'the access token has been revoked', locations: [{ line: 1, column: 23 }], path: ['a'], extensions: { code: 'UNAUTHENTICATED' } });
        return;
      }
    });
  });

  describe('updateOrder', () => {
    it('keeps the result of a mutation that succeeded beside the error of one that failed', async () => {
      const order = await buildOrder(context().runtime, { userId: me.userId, status: 'pending' });
      const missing = order.id + 100_000;
      const result = await run(
        me,
        `mutation { a: updateOrder(id: ${order.id}, input: { status: PAID }) { id status } b: updateOrder(id: ${missing}, input: { status: PAID }) { id status } }`,
      );
      expect(result.data).toEqual({ a: { id: order.id, status: 'PAID' }, b: null });
      expect(result.errors).toHaveLength(1);
      expect(result.errors![0]).toMatchObject({ path: ['b'], extensions: { code: 'NOT_FOUND' } });
      expect(await orderRow(order.id)).toMatchObject({ status: 'paid' });
    });

    it('changes only the memo when only the memo is given: UPDATE sets memo and updated_at, nothing else', async () => {
      const order = await buildOrder(context().runtime, { userId: me.userId, status: 'paid', memo: 'old' });
      const sql = await captureSql(context().runtime, async () => {
        const result = await run(me, UPDATE, { id: order.id, input: { memo: 'leave at the door' } });
        expect(result.data).toMatchObject({ updateOrder: { id: order.id, status: 'PAID', memo: 'leave at the door' } });
      });
      const update = sql.find((statement) => statement.startsWith('update'));
      expect(update).toBe(
        `update "orders" set "memo" = $1, "updated_at" = case when "orders"."memo" is distinct from $2 then greatest(date_trunc('milliseconds', now()), date_trunc('milliseconds', "orders"."updated_at") + interval '1 millisecond') else "orders"."updated_at" end where (("orders"."id" = $3) and ("orders"."user_id" = $4)) returning "id"`,
      );
      expect(await orderRow(order.id)).toMatchObject({ status: 'paid', memo: 'leave at the door' });
    });

    it('moves only the status when only the status is given, atomically conditioned on the states it may come from', async () => {
      const order = await buildOrder(context().runtime, { userId: me.userId, status: 'pending', memo: 'keep me' });
      const sql = await captureSql(context().runtime, () => run(me, UPDATE, { id: order.id, input: { status: 'PAID' } }));
      expect(sql.find((statement) => statement.startsWith('update'))).toBe(
        `update "orders" set "status" = $1, "updated_at" = case when "orders"."status" is distinct from $2 then greatest(date_trunc('milliseconds', now()), date_trunc('milliseconds', "orders"."updated_at") + interval '1 millisecond') else "orders"."updated_at" end where (("orders"."id" = $3) and ("orders"."user_id" = $4) and ("orders"."status" in ($5, $6))) returning "id"`,
      );
      expect(await orderRow(order.id)).toMatchObject({ status: 'paid', memo: 'keep me' });
    });

    it('clears the memo on an explicit memo: null and leaves it alone when memo is absent', async () => {
      const order = await buildOrder(context().runtime, { userId: me.userId, memo: 'note' });
      await run(me, UPDATE, { id: order.id, input: { status: 'CANCELLED' } });
      expect((await orderRow(order.id)).memo).toBe('note');
      const cleared = await run(me, UPDATE, { id: order.id, input: { memo: null } });
      expect(cleared.data).toMatchObject({ updateOrder: { memo: null, status: 'CANCELLED' } });
      expect((await orderRow(order.id)).memo).toBeNull();
    });

    it.each(LEGAL_MOVES)('moves an order from %s to %s', async (from, to) => {
      const order = await buildOrder(context().runtime, { userId: me.userId, status: from });
      const result = await run(me, UPDATE, { id: order.id, input: { status: to.toUpperCase() } });
      expect(result.errors).toBeUndefined();
      expect(result.data).toMatchObject({ updateOrder: { status: to.toUpperCase() } });
      expect((await orderRow(order.id)).status).toBe(to);
    });

    it.each(ILLEGAL_MOVES)('refuses to move an order from %s to %s, naming both states, and changes nothing', async (from, to) => {
      const order = await buildOrder(context().runtime, { userId: me.userId, status: from, memo: 'untouched' });
      const before = await orderRow(order.id);
      const result = await run(me, UPDATE, { id: order.id, input: { status: to.toUpperCase(), memo: 'changed' } });
      expect(result.data).toEqual({ updateOrder: null });
      expect(result.errors).toHaveLength(1);
      expect(result.errors![0]!.message).toBe(`cannot move an order from ${from} to ${to}`);
      expect(result.errors![0]!.extensions).toEqual({
        code: 'FAILED_PRECONDITION',
        reason: 'ILLEGAL_STATUS_MOVE',
        from: from.toUpperCase(),
        to: to.toUpperCase(),
      });
      expect(await orderRow(order.id)).toEqual(before);
    });

    it('accepts setting the status an order already has (an idempotent retry)', async () => {
      const order = await buildOrder(context().runtime, { userId: me.userId, status: 'cancelled' });
      const result = await run(me, UPDATE, { id: order.id, input: { status: 'CANCELLED' } });
      expect(result.errors).toBeUndefined();
      expect(result.data).toMatchObject({ updateOrder: { status: 'CANCELLED' } });
    });

    it("answers NOT_FOUND for someone else's order exactly as for a missing one, and changes nothing", async () => {
      const theirs = await buildOrder(context().runtime, { userId: someoneElse.userId, memo: 'theirs' });
      const foreign = await run(me, UPDATE, { id: theirs.id, input: { memo: 'mine now' } });
      const missing = await run(me, UPDATE, { id: 987654, input: { memo: 'mine now' } });
      expect(foreign.errors?.[0]?.extensions).toEqual({ code: 'NOT_FOUND' });
      expect(missing.errors?.[0]?.extensions).toEqual({ code: 'NOT_FOUND' });
      expect(foreign.errors?.[0]?.message).toBe(`no order ${theirs.id}`);
      expect(missing.errors?.[0]?.message).toBe('no order 987654');
      expect((await orderRow(theirs.id)).memo).toBe('theirs');
    });

    it('refuses an empty input, a null status and a memo over 1000 characters with INVALID_ARGUMENT', async () => {
      const order = await buildOrder(context().runtime, { userId: me.userId, memo: 'same' });
      for (const input of [{}, { status: null }, { memo: 'x'.repeat(1001) }]) {
        const result = await run(me, UPDATE, { id: order.id, input });
        expect(result.errors?.[0]?.extensions?.code).toBe('INVALID_ARGUMENT');
      }
      const ok = await run(me, UPDATE, { id: order.id, input: { memo: 'y'.repeat(1000) } });
      expect(ok.errors).toBeUndefined();
    });

    it('keeps both of two concurrent updates of different fields', async () => {
      const { runtime } = context();
      for (let round = 0; round < 5; round++) {
        const order = await buildOrder(runtime, { userId: me.userId, status: 'pending', memo: null });
        const [memoUpdate, statusUpdate] = await Promise.all([
          run(me, UPDATE, { id: order.id, input: { memo: `round ${round}` } }),
          run(me, UPDATE, { id: order.id, input: { status: 'PAID' } }),
        ]);
        expect(memoUpdate.errors).toBeUndefined();
        expect(statusUpdate.errors).toBeUndefined();
        expect(await orderRow(order.id)).toMatchObject({ memo: `round ${round}`, status: 'paid' });
      }
    });
  });

  describe('ETags', () => {
    it('changes on every update, even two within one millisecond', async () => {
      const order = await buildOrder(context().runtime, { userId: me.userId });
      const tags = new Set<string>();
      const read = await run(me, 'query ($id: Int!) { order(id: $id) { etag } }', { id: order.id });
      tags.add((read.data as { order: { etag: string } }).order.etag);
      for (let i = 0; i < 3; i++) {
        const result = await run(me, UPDATE, { id: order.id, input: { memo: `v${i}` } });
        tags.add((result.data as { updateOrder: { etag: string } }).updateOrder.etag);
      }
      expect(tags.size).toBe(4);
      for (const tag of tags) expect(tag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    });

    it('keeps the ETag when an update sets the values the order already has (AIP-161 send-back)', async () => {
      const order = await buildOrder(context().runtime, { userId: me.userId, status: 'paid', memo: 'same' });
      const read = await run(me, 'query ($id: Int!) { order(id: $id) { etag } }', { id: order.id });
      const { etag } = (read.data as { order: { etag: string } }).order;
      const result = await run(me, UPDATE, { id: order.id, input: { status: 'PAID', memo: 'same' }, etag });
      expect(result.errors).toBeUndefined();
      expect((result.data as { updateOrder: { etag: string } }).updateOrder.etag).toBe(etag);
      const changed = await run(me, UPDATE, { id: order.id, input: { memo: 'different' }, etag });
      expect((changed.data as { updateOrder: { etag: string } }).updateOrder.etag).not.toBe(etag);
    });

    it('updates when the ETag matches, with the precondition inside the UPDATE', async () => {
      const order = await buildOrder(context().runtime, { userId: me.userId, memo: 'v1' });
      const read = await run(me, 'query ($id: Int!) { order(id: $id) { etag } }', { id: order.id });
      const { etag } = (read.data as { order: { etag: string } }).order;
      const sql = await captureSql(context().runtime, async () => {
        const result = await run(me, UPDATE, { id: order.id, input: { memo: 'v2' }, etag });
        expect(result.errors).toBeUndefined();
        expect((result.data as { updateOrder: { etag: string } }).updateOrder.etag).not.toBe(etag);
      });
      expect(sql.filter((statement) => statement.startsWith('update'))).toEqual([
        `update "orders" set "memo" = $1, "updated_at" = case when "orders"."memo" is distinct from $2 then greatest(date_trunc('milliseconds', now()), date_trunc('milliseconds', "orders"."updated_at") + interval '1 millisecond') else "orders"."updated_at" end where (("orders"."id" = $3) and ("orders"."user_id" = $4) and (date_trunc('milliseconds', "orders"."updated_at") = $5)) returning "id"`,
      ]);
    });

    it('refuses a stale, malformed or foreign ETag with FAILED_PRECONDITION (ETAG_MISMATCH) and changes nothing', async () => {
      const order = await buildOrder(context().runtime, { userId: me.userId, memo: 'v1' });
      const other = await buildOrder(context().runtime, { userId: me.userId });
      const etagOf = async (id: number) =>
        ((await run(me, 'query ($id: Int!) { order(id: $id) { etag } }', { id })).data as { order: { etag: string } }).order.etag;
      const stale = await etagOf(order.id);
      await run(me, UPDATE, { id: order.id, input: { memo: 'v2' } });
      const current = await etagOf(order.id);
      for (const etag of [stale, '"garbage"', 'W/' + current, await etagOf(other.id)]) {
        const before = await orderRow(order.id);
        const result = await run(me, UPDATE, { id: order.id, input: { memo: 'v3', status: 'PAID' }, etag });
        expect(result.data).toEqual({ updateOrder: null });
        expect(result.errors?.[0]?.extensions).toEqual({ code: 'FAILED_PRECONDITION', reason: 'ETAG_MISMATCH', etag: current });
        expect(await orderRow(order.id)).toEqual(before);
      }
    });

    it("answers NOT_FOUND, not an ETag mismatch, for someone else's order", async () => {
      const theirs = await buildOrder(context().runtime, { userId: someoneElse.userId });
      const read = await run(someoneElse, 'query ($id: Int!) { order(id: $id) { etag } }', { id: theirs.id });
      const { etag } = (read.data as { order: { etag: string } }).order;
      const result = await run(me, UPDATE, { id: theirs.id, input: { memo: 'x' }, etag });
      expect(result.errors?.[0]?.extensions).toEqual({ code: 'NOT_FOUND' });
    });
  });
});
