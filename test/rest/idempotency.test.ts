/**
 * Safe retries of order creation (draft-ietf-httpapi-idempotency-key-header §2): the REST
 * `Idempotency-Key` header and GraphQL `createOrder(idempotencyKey:)`, across users, clients,
 * concurrent duplicates and expiry.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { randomUUID } from 'node:crypto';
import postgres from 'postgres';
import { and, count, eq } from 'drizzle-orm';
import { describeEachDatabase } from '../support/runtime.js';
import { issueTestToken, type TestToken } from '../support/tokens.js';
import { buildProduct, type Product } from '../support/factories.js';
import { postGraphQL } from '../support/graphql.js';
import { idempotencyKeys, orders } from '../../src/db/schema.js';
import { orderRequestHash } from '../../src/graphql/idempotency.js';

describeEachDatabase('idempotent order creation', (context) => {
  let buyer: TestToken;
  let product: Product;
  let other: Product;

  beforeAll(async () => {
    const { runtime } = context();
    buyer = await issueTestToken(runtime);
    product = await buildProduct(runtime, { name: 'Kettle', priceCents: 3000 });
    other = await buildProduct(runtime, { name: 'Mug', priceCents: 800 });
  });

  const app = () => request(context().app);
  const post = (key: string | undefined, body: object, token: TestToken = buyer, query = '') => {
    let req = app().post(`/orders${query}`).set('Authorization', token.authorization);
    if (key !== undefined) req = req.set('Idempotency-Key', key);
    return req.send(body);
  };
  const orderCount = async (userId = buyer.userId) =>
    (await context().runtime.db.select({ n: count() }).from(orders).where(eq(orders.userId, userId)))[0]!.n;
  const body = () => ({ items: [{ productId: product.id, quantity: 1 }], memo: 'retry me' });

  describe('REST Idempotency-Key', () => {
    it('replays the first answer byte for byte for the same key and body, creating one order', async () => {
      const key = randomUUID();
      const before = await orderCount();
      const first = await post(key, body());
      expect(first.status).toBe(201);
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      // Even after the order moves on, the retry gets the first answer.
      await context().runtime.db.update(orders).set({ status: 'paid' }).where(eq(orders.id, first.body.id));
      const again = await post(key, body());
      expect(again.status).toBe(201);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.text).toBe(first.text);
      expect(again.headers.location).toBe(first.headers.location);
      expect(again.headers.etag).toBe(first.headers.etag);
      expect(await orderCount()).toBe(before + 1);
    });

    it('replays no field the retrying token may not read: items.product needs products:read', async () => {
      const key = randomUUID();
      const first = await post(key, body(), buyer, '?fields=id,items(product(name))');
      expect(first.status).toBe(201);
      expect(first.body.items[0].product.name).toBe('Kettle');
      // The same user and client, with a token narrowed to orders:write.
      const { token } = await context().runtime.accessTokens.issue({ userId: buyer.userId, clientId: buyer.clientId, scope: 'orders:write', grantId: buyer.grantId });
      const narrow = { ...buyer, token, authorization: `Bearer ${token}` };
      const again = await post(key, body(), narrow, '?fields=id,items(product(name))');
      expect(again.status).toBe(403);
      expect(again.text).not.toContain('Kettle');
      expect(again.body.error.details[0]).toMatchObject({ reason: 'INSUFFICIENT_SCOPE', metadata: { requiredScope: 'products:read' } });
      // What it may read is still replayed.
      const bare = await post(key, body(), narrow, '?fields=id');
      expect(bare.status).toBe(201);
      expect(bare.body).toEqual({ id: first.body.id });
    });

    it('accepts the key as a structured-field string ("…") as well as bare', async () => {
      const key = `k-${randomUUID()}`;
      const first = await post(`"${key}"`, body());
      const again = await post(key, body());
      expect(again.status).toBe(201);
      expect(again.body.id).toBe(first.body.id);
    });

    it('answers 10 concurrent requests with one key with one order: one creates it, the other nine are replays', async () => {
      const key = randomUUID();
      const before = await orderCount();
      const results = await Promise.all(Array.from({ length: 10 }, () => post(key, body())));
      expect(results.map((res) => res.status)).toEqual(Array<number>(10).fill(201));
      expect(new Set(results.map((res) => res.body.id)).size).toBe(1);
      expect(results.filter((res) => res.headers['idempotent-replayed'] === undefined)).toHaveLength(1);
      expect(results.filter((res) => res.headers['idempotent-replayed'] === 'true')).toHaveLength(9);
      expect(await orderCount()).toBe(before + 1);
    });

    it('a duplicate that waited on the key while the first request ran is answered as a replay of its order', async () => {
      const { kind, testDatabase } = context();
      if (kind !== 'postgres') return; // PGlite runs one transaction at a time: nothing can wait on the key
      const key = randomUUID();
      const holder = postgres(testDatabase.url!, { max: 1, onnotice: () => {} });
      const observer = postgres(testDatabase.url!, { max: 1, onnotice: () => {} });
      try {
        let duplicate: Promise<request.Response> | undefined;
        let created: number | undefined;
        // The first request's transaction (claimKey, the order, recordOrder), held open until the duplicate waits on the key.
        await holder.begin(async (tx) => {
          const [order] = await tx`insert into orders (user_id, memo, total_cents) values (${buyer.userId}, 'retry me', 3000) returning id`;
          created = order!.id as number;
          await tx`insert into order_items (order_id, product_id, quantity, unit_price_cents) values (${created}, ${product.id}, 1, 3000)`;
          await tx`insert into idempotency_keys (user_id, client_id, key, request_hash, order_id, expires_at)
            values (${buyer.userId}, ${buyer.clientId}, ${key}, ${orderRequestHash(body().items, body().memo)}, ${created}, now() + interval '1 day')`;
          duplicate = post(key, body()).then((res) => res);
          for (let attempt = 0; attempt < 200; attempt++) {
            const waiting = await observer`select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query like '%idempotency_keys%'`;
            if (waiting.length > 0) return;
            await new Promise((resolve) => setTimeout(resolve, 25));
          }
          throw new Error('the duplicate never waited on the idempotency key');
        });
        const res = await duplicate!;
        expect(res.status).toBe(201);
        expect(res.body.id).toBe(created);
        expect(res.headers['idempotent-replayed']).toBe('true');
        expect(res.headers.location).toBe(`${context().config.issuer}/orders/${created}`);
      } finally {
        await Promise.all([holder.end(), observer.end()]);
      }
    });

    it('a key first used by GraphQL createOrder is a replay for REST', async () => {
      const key = randomUUID();
      const viaGraphQL = await postGraphQL(context().app, buyer.token, 'mutation ($input: CreateOrderInput!, $key: String) { createOrder(input: $input, idempotencyKey: $key) { id } }', {
        input: body(),
        key,
      });
      const id = (viaGraphQL.body.data?.createOrder as { id?: number } | null | undefined)?.id;
      expect(id).toEqual(expect.any(Number));
      const res = await post(key, body());
      expect(res.status).toBe(201);
      expect(res.body.id).toBe(id);
      expect(res.headers['idempotent-replayed']).toBe('true');
    });

    it('refuses the same key with another body with 422 IDEMPOTENCY_KEY_REUSED, creating nothing', async () => {
      const key = randomUUID();
      expect((await post(key, body())).status).toBe(201);
      const before = await orderCount();
      for (const changed of [{ ...body(), memo: 'other' }, { items: [{ productId: other.id, quantity: 1 }], memo: 'retry me' }, { items: body().items }]) {
        const res = await post(key, changed);
        expect(res.status).toBe(422);
        expect(res.body.error).toMatchObject({ code: 422, status: 'FAILED_PRECONDITION' });
        expect(res.body.error.details[0]).toMatchObject({ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'IDEMPOTENCY_KEY_REUSED' });
      }
      expect(await orderCount()).toBe(before);
    });

    it('scopes keys per user and per client', async () => {
      const key = randomUUID();
      const mine = await post(key, body());
      const otherUser = await issueTestToken(context().runtime);
      const sameUserOtherClient = await issueTestToken(context().runtime, { userId: buyer.userId });
      const theirs = await post(key, body(), otherUser);
      const mineElsewhere = await post(key, body(), sameUserOtherClient);
      expect([theirs.status, mineElsewhere.status]).toEqual([201, 201]);
      expect(new Set([mine.body.id, theirs.body.id, mineElsewhere.body.id]).size).toBe(3);
    });

    it('a failed request keeps no key, so the corrected retry creates the order', async () => {
      const key = randomUUID();
      const failed = await post(key, { items: [{ productId: 2_147_483_000, quantity: 1 }] });
      expect(failed.status).toBe(400);
      const fixed = await post(key, body());
      expect(fixed.status).toBe(201);
    });

    it('an expired key is free again', async () => {
      const key = randomUUID();
      const first = await post(key, body());
      await context()
        .runtime.db.update(idempotencyKeys)
        .set({ expiresAt: new Date(Date.now() - 1000) })
        .where(and(eq(idempotencyKeys.userId, buyer.userId), eq(idempotencyKeys.key, key)));
      const second = await post(key, { ...body(), memo: 'new request' });
      expect(second.status).toBe(201);
      expect(second.body.id).not.toBe(first.body.id);
    });

    it('with other fields, the retry gets the same order shaped as asked', async () => {
      const key = randomUUID();
      const first = await post(key, body(), buyer, '?fields=id');
      const again = await post(key, body(), buyer, '?fields=id,memo');
      expect(again.status).toBe(201);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body).toEqual({ id: first.body.id, memo: 'retry me' });
    });

    it('two Idempotency-Key fields are 400 naming the header, creating nothing and claiming neither key', async () => {
      const [shared, other] = [`shared-${randomUUID()}`, `other-${randomUUID()}`];
      const before = await orderCount();
      // superagent sends an array as repeated header fields; its types allow that only for Cookie.
      const res = await app()
        .post('/orders')
        .set('Authorization', buyer.authorization)
        .set('Idempotency-Key', [shared, other] as unknown as string)
        .send(body());
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT', message: 'the Idempotency-Key header is given more than once' });
      expect(res.body.error.details).toEqual([
        expect.objectContaining({ reason: 'INVALID_IDEMPOTENCY_KEY' }),
        expect.objectContaining({ fieldViolations: [expect.objectContaining({ field: 'Idempotency-Key' })] }),
      ]);
      expect(await orderCount()).toBe(before);
      const stored = await context().runtime.db.select().from(idempotencyKeys).where(eq(idempotencyKeys.userId, buyer.userId));
      expect(stored.map((row) => row.key)).not.toContain(`${shared}, ${other}`);
      // Neither key was used: each still creates its own order.
      expect((await post(shared, body())).status).toBe(201);
      expect((await post(other, body())).status).toBe(201);
      expect(await orderCount()).toBe(before + 2);
    });

    it('a reused key names the Idempotency-Key header, not the GraphQL argument', async () => {
      const key = randomUUID();
      expect((await post(key, body())).status).toBe(201);
      const res = await post(key, { ...body(), memo: 'other' });
      expect(res.status).toBe(422);
      expect(res.body.error.details[1]).toEqual({
        '@type': 'type.googleapis.com/google.rpc.BadRequest',
        fieldViolations: [{ field: 'Idempotency-Key', description: expect.any(String) }],
      });
      expect(JSON.stringify(res.body)).not.toContain('idempotencyKey');
    });

    it.each([
      ['', 'empty'],
      ['x'.repeat(256), 'too long'],
      ['tab\there', 'a control character'],
    ])('an invalid key (%#: %s) is 400 naming the header', async (key) => {
      const before = await orderCount();
      const res = await post(key, body());
      expect(res.status).toBe(400);
      expect(res.body.error.details).toEqual([
        expect.objectContaining({ reason: 'INVALID_IDEMPOTENCY_KEY' }),
        expect.objectContaining({ fieldViolations: [expect.objectContaining({ field: 'Idempotency-Key' })] }),
      ]);
      expect(await orderCount()).toBe(before);
    });
  });

  describe('GraphQL createOrder(idempotencyKey:)', () => {
    const CREATE = 'mutation ($input: CreateOrderInput!, $key: String) { createOrder(input: $input, idempotencyKey: $key) { id memo } }';
    const create = (key: string, input: object) => postGraphQL(context().app, buyer.token, CREATE, { input, key });

    it('returns the first order for the same key and input, also across REST and GraphQL', async () => {
      const key = randomUUID();
      const before = await orderCount();
      const viaRest = await post(key, body());
      const results = await Promise.all(Array.from({ length: 5 }, () => create(key, body())));
      for (const result of results) expect(result.body.data?.createOrder).toEqual({ id: viaRest.body.id, memo: 'retry me' });
      expect(await orderCount()).toBe(before + 1);
    });

    it('refuses another input with FAILED_PRECONDITION (IDEMPOTENCY_KEY_REUSED) and an invalid key with INVALID_ARGUMENT', async () => {
      const key = randomUUID();
      expect((await create(key, body())).body.errors).toBeUndefined();
      const reused = await create(key, { ...body(), memo: 'changed' });
      expect(reused.body.data?.createOrder).toBeNull();
      expect(reused.body.errors?.[0]?.extensions).toMatchObject({ code: 'FAILED_PRECONDITION', reason: 'IDEMPOTENCY_KEY_REUSED' });
      const invalid = await create('', body());
      expect(invalid.body.errors?.[0]?.extensions).toMatchObject({ code: 'INVALID_ARGUMENT', reason: 'INVALID_IDEMPOTENCY_KEY', field: 'idempotencyKey' });
    });
  });
});
