/**
 * Page tokens (AIP-158), order_by (AIP-132) and filter (AIP-160) on GET /products and
 * GET /orders, on both databases.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import fc from 'fast-check';
import { inArray, sql } from 'drizzle-orm';
import { describeEachDatabase } from '../support/runtime.js';
import { issueTestToken, type TestToken } from '../support/tokens.js';
import { buildOrder, buildProduct, buildSeller, type Seller } from '../support/factories.js';
import { captureSql } from '../support/sql.js';
import { products } from '../../src/db/schema.js';

type Item = { id: number; name?: string; priceCents?: number };

describeEachDatabase('REST list paging, ordering and filtering', (context) => {
  let caller: TestToken;
  let acme: Seller;
  let other: Seller;

  beforeAll(async () => {
    const { runtime } = context();
    caller = await issueTestToken(runtime, { scope: 'products:read orders:read' });
    acme = await buildSeller(runtime, { name: 'Acme' });
    other = await buildSeller(runtime, { name: "O'Brien & Sons" });
    const prices = [4999, 1200, 4999, 800, 9900, 1200, 300, 6000, 4999, 2500];
    for (const [i, priceCents] of prices.entries()) {
      await buildProduct(runtime, { name: `Item ${String.fromCharCode(74 - i)}`, priceCents, sellerId: i % 2 ? other.id : acme.id, reviews: i % 3 });
    }
  });

  const get = (path: string, authorization = caller.authorization) => request(context().app).get(path).set('Authorization', authorization);
  const ids = (body: Item[]) => body.map((item) => item.id);

  /** Follows `Link: rel="next"` from `path`, checking Next-Page-Token agrees; returns every page's ids. */
  async function walk(path: string, authorization?: string): Promise<number[][]> {
    const pages: number[][] = [];
    let next: string | undefined = path;
    while (next) {
      const res = await get(next, authorization);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      pages.push(ids(res.body));
      const link = res.headers.link as string | undefined;
      const token = res.headers['next-page-token'] as string | undefined;
      expect(link === undefined).toBe(token === undefined);
      if (!link) break;
      const url = new URL(/^<([^>]+)>; rel="next"$/.exec(link)![1]!);
      expect(url.searchParams.get('page_token')).toBe(token);
      next = `${url.pathname}${url.search}`;
      expect(pages.length).toBeLessThan(100);
    }
    return pages;
  }

  describe('page tokens (AIP-158)', () => {
    it('walks every product exactly once by page_size, the next token in Link and Next-Page-Token', async () => {
      const all = ids((await get('/products?page_size=100&fields=id')).body);
      expect(all).toHaveLength(10);
      const pages = await walk('/products?page_size=3&fields=id');
      expect(pages.map((page) => page.length)).toEqual([3, 3, 3, 1]);
      expect(pages.flat()).toEqual(all);
    });

    it('keeps fields, filter and order_by in the next link', async () => {
      const res = await get('/products?page_size=2&fields=id,name&order_by=name&filter=price>1000');
      const url = new URL(/^<([^>]+)>/.exec(res.headers.link as string)![1]!);
      expect(Object.fromEntries(url.searchParams)).toEqual({
        page_token: res.headers['next-page-token'],
        page_size: '2',
        fields: 'id,name',
        order_by: 'name',
        filter: 'price>1000',
      });
      expect(Object.keys(res.body[0])).toEqual(['id', 'name']);
    });

    it('coerces page_size above the maximum to 200, reads 0 as the default, and refuses negative or garbage sizes', async () => {
      expect((await get('/products?page_size=100000000000000&fields=id')).body).toHaveLength(10);
      expect((await get('/products?page_size=0&fields=id')).body).toHaveLength(10);
      expect((await get('/products?page_size=1&fields=id')).body).toHaveLength(1);
      // A whole number is read by its value, however many leading zeros it has.
      expect((await get('/products?page_size=000000000003&fields=id')).body).toHaveLength(3);
      for (const size of ['-1', 'abc', '1.5', '', '1e3', '0x10']) {
        const res = await get(`/products?page_size=${encodeURIComponent(size)}`);
        expect(res.status, size).toBe(400);
        expect(res.body.error).toMatchObject({ status: 'INVALID_ARGUMENT', message: expect.stringContaining('page_size') });
      }
    });

    it('refuses a tampered, foreign or reused-with-other-parameters token with 400 naming page_token', async () => {
      const first = await get('/products?page_size=2&order_by=price desc&filter=price > 1000');
      const token = first.headers['next-page-token'] as string;
      expect(token).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
      const [payload, mac] = token.split('.') as [string, string];
      const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), k: [0, 1] })).toString('base64url');
      const orders = (await get('/orders?page_size=1')).headers['next-page-token'];
      const cases: [string, string][] = [
        ['another filter', `/products?page_size=2&order_by=price desc&filter=price > 1001&page_token=${token}`],
        ['another order', `/products?page_size=2&order_by=price&filter=price > 1000&page_token=${token}`],
        ['no filter', `/products?page_size=2&order_by=price desc&page_token=${token}`],
        ['forged position', `/products?page_size=2&order_by=price desc&filter=price > 1000&page_token=${forged}.${mac}`],
        ['flipped signature', `/products?page_size=2&order_by=price desc&filter=price > 1000&page_token=${payload}.${mac.slice(0, -2)}AA`],
        ['garbage', '/products?page_token=not-a-token'],
        ['huge', `/products?page_token=${'A'.repeat(5000)}`],
      ];
      if (orders) cases.push(['another list', `/products?page_token=${orders}`]);
      for (const [name, path] of cases) {
        const res = await get(path.replaceAll(' ', '%20'));
        expect(res.status, name).toBe(400);
        expect(res.body.error, name).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT', message: expect.stringMatching(/^page_token: /) });
      }
      // Changing only page_size is allowed (AIP-158).
      expect((await get(`/products?page_size=5&order_by=price%20desc&filter=price%20%3E%201000&page_token=${token}`)).status).toBe(200);
    });

    it('pages by name through long names: a token the server issued is never refused for its length', async () => {
      const { runtime } = context();
      const seller = await buildSeller(runtime);
      // A token carries the last row's sort key, so names of 1 to 3.6 KB in UTF-8 (3 bytes a character here) make tokens of
      // 1.4 to 5 KB. (The response carries the token twice, in Next-Page-Token and Link, and Node's HTTP client reads at most
      // 16 KiB of response head: sort keys much longer than this cannot be paged past over REST.)
      const names = ['日本語の長い商品名'.repeat(40), 'a'.repeat(3000), 'b', '商品'.repeat(600), 'c'.repeat(1000)];
      const made: number[] = [];
      try {
        for (const name of names) made.push((await buildProduct(runtime, { sellerId: seller.id, name })).id);
        const pages = await walk(`/products?fields=id&page_size=1&order_by=name&filter=${encodeURIComponent(`seller.id = ${seller.id}`)}`);
        expect(pages).toHaveLength(names.length);
        expect(pages.flat().sort((a, b) => a - b)).toEqual(made);
      } finally {
        await runtime.db.delete(products).where(inArray(products.id, made));
      }
    });

    it('refuses mixing page tokens with limit/offset, which still page the legacy way', async () => {
      const res = await get('/products?limit=2&page_size=2');
      expect(res.status).toBe(400);
      expect(res.body.error.message).toMatch(/page_size\/page_token or with limit\/offset/);
      const legacy = await get('/products?limit=4&offset=2&fields=id&order_by=price desc&filter=price>1000');
      expect(legacy.status).toBe(200);
      expect(legacy.headers.link).toMatch(/offset=6/);
      expect(legacy.headers['next-page-token']).toBeUndefined();
    });

    it("binds an order token to its caller: another user's token is refused", async () => {
      const { runtime } = context();
      const alice = await issueTestToken(runtime, { scope: 'orders:read' });
      const bob = await issueTestToken(runtime, { scope: 'orders:read' });
      for (const who of [alice, bob]) for (let i = 0; i < 3; i++) await buildOrder(runtime, { userId: who.userId });
      const pages = await walk('/orders?page_size=2&fields=id', alice.authorization);
      expect(pages.flat()).toHaveLength(3);
      expect(pages.flat()).toEqual([...pages.flat()].sort((a, b) => b - a));
      const token = (await get('/orders?page_size=2', alice.authorization)).headers['next-page-token'];
      const stolen = await get(`/orders?page_size=2&page_token=${token}`, bob.authorization);
      expect(stolen.status).toBe(400);
      expect(stolen.body.error.message).toMatch(/^page_token: /);
    });
  });

  describe('order_by (AIP-132) and filter (AIP-160)', () => {
    it('orders by price desc, then name, with id breaking ties, across pages', async () => {
      const all = (await get('/products?page_size=100&fields=id,name,priceCents')).body as Required<Item>[];
      const expected = [...all].sort((a, b) => b.priceCents - a.priceCents || a.name.localeCompare(b.name) || a.id - b.id).map((item) => item.id);
      expect((await walk('/products?page_size=3&order_by=price%20desc,name&fields=id')).flat()).toEqual(expected);
      const byPriceThenId = [...all].sort((a, b) => a.priceCents - b.priceCents || a.id - b.id).map((item) => item.id);
      expect((await walk('/products?page_size=4&order_by=priceCents&fields=id')).flat()).toEqual(byPriceThenId);
    });

    it('filters with comparisons, AND/OR/NOT, has, and relation paths', async () => {
      const all = (await get('/products?page_size=100&fields=id,name,priceCents,seller.name,reviews.rating')).body as {
        id: number;
        name: string;
        priceCents: number;
        seller: { name: string };
        reviews: { rating: number }[];
      }[];
      const cases: [string, (p: (typeof all)[number]) => boolean][] = [
        ['price < 5000 AND seller.name = "Acme"', (p) => p.priceCents < 5000 && p.seller.name === 'Acme'],
        ['price < 1000 OR price >= 6000', (p) => p.priceCents < 1000 || p.priceCents >= 6000],
        ['NOT seller.name = "Acme"', (p) => p.seller.name !== 'Acme'],
        ['-seller.name = "Acme" price != 1200', (p) => p.seller.name !== 'Acme' && p.priceCents !== 1200],
        ['name : "item j"', (p) => p.name === 'Item J'],
        ['reviews.rating = 2', (p) => p.reviews.some((review) => review.rating === 2)],
        ['seller.name:"o\'brien"', (p) => p.seller.name.startsWith("O'Brien")],
        ['description:*', () => true],
        ['createdAt > "2000-01-01T00:00:00Z" AND createdAt < "2999-01-01T00:00:00+02:00"', () => true],
        ['name : "%"', () => false],
      ];
      for (const [filter, predicate] of cases) {
        const res = await get(`/products?page_size=100&fields=id&filter=${encodeURIComponent(filter)}`);
        expect(res.status, filter).toBe(200);
        expect(ids(res.body).sort(), filter).toEqual(all.filter(predicate).map((p) => p.id).sort());
      }
    });

    it('matches a timestamp as the API prints it (milliseconds) against the stored one, whatever the database keeps below', async () => {
      const { runtime } = context();
      const [row] = await runtime.db.insert(products).values({ name: 'Timed', priceCents: 100, sellerId: acme.id, createdAt: new Date(), updatedAt: new Date() }).returning({ id: products.id });
      // PostgreSQL keeps microseconds: a time PostgreSQL wrote, not one JavaScript rounded to the millisecond.
      await runtime.db.execute(sql`update products set created_at = '2031-05-06T07:08:09.123456Z' where id = ${row!.id}`);
      const shown = (await get(`/products/${row!.id}?fields=createdAt`)).body.createdAt as string;
      expect(shown).toBe('2031-05-06T07:08:09.123Z');
      const plusTwo = '2031-05-06T09:08:09.123+02:00';
      const cases: [string, boolean][] = [
        [`createdAt = "${shown}"`, true],
        [`createdAt = "${plusTwo}"`, true],
        [`createdAt : "${shown}"`, true],
        [`createdAt <= "${shown}"`, true],
        [`createdAt >= "${shown}"`, true],
        [`createdAt < "${shown}"`, false],
        [`createdAt > "${shown}"`, false],
        [`createdAt != "${shown}"`, false],
        [`createdAt > "2031-05-06T07:08:09.122Z"`, true],
        [`createdAt < "2031-05-06T07:08:09.124Z"`, true],
        // Written to the microsecond, a literal is compared as written.
        [`createdAt = "2031-05-06T07:08:09.123456Z"`, true],
        [`createdAt = "2031-05-06T07:08:09.123000Z"`, false],
        [`createdAt > "2031-05-06T07:08:09.123455Z"`, true],
        // Without a fraction, a literal is a whole second's first millisecond, as "…09.000Z" would be.
        [`createdAt = "2031-05-06T07:08:09Z"`, false],
      ];
      for (const [filter, found] of cases) {
        const res = await get(`/products?page_size=100&fields=id&filter=${encodeURIComponent(`${filter} AND name = "Timed"`)}`);
        expect(res.status, filter).toBe(200);
        expect([filter, ids(res.body)]).toEqual([filter, found ? [row!.id] : []]);
      }
    });

    it('reads the last millisecond of year 9999 and a leap second as instants PostgreSQL takes', async () => {
      for (const filter of ['createdAt = "9999-12-31T23:59:59.999Z"', 'createdAt <= "9999-12-31T23:59:59.999+00:00"', 'createdAt > "9999-12-31T23:59:59.999Z"', 'createdAt = "2016-12-31T23:59:60Z"', 'createdAt != "0001-01-01T00:00:00+15:00"']) {
        const res = await get(`/products?page_size=100&fields=id&filter=${encodeURIComponent(filter)}`);
        expect([filter, res.status]).toEqual([filter, 200]);
      }
    });

    it('answers injection attempts as plain values: no SQL text from the filter', async () => {
      const { runtime } = context();
      const before = (await runtime.db.select({ id: products.id }).from(products)).length;
      for (const filter of [`name = "x' OR 1=1 --"`, `name = "x\\" OR 1=1 --"`, `seller.name = "'; drop table products; --"`, `name:"_"`]) {
        let res: request.Response | undefined;
        const sql = await captureSql(runtime, async () => {
          res = await get(`/products?fields=id&filter=${encodeURIComponent(filter)}`);
        });
        expect(res!.status, filter).toBe(200);
        expect(res!.body, filter).toEqual([]);
        expect(sql).toHaveLength(1);
        expect(sql[0]).not.toMatch(/1=1|drop table/i);
      }
      expect((await runtime.db.select({ id: products.id }).from(products)).length).toBe(before);
    });

    it.each([
      ['colour = "red"', /^filter: 'colour' is not a filterable field.* at position 1$/],
      ['price < "cheap"', /^filter: 'price' takes a whole number at position 1$/],
      ['price < 5000 AND', /^filter: expected a field name, found the end of the filter at position 17$/],
      ['seller.password = "x"', /not a filterable field/],
      ['createdAt > "yesterday"', /RFC 3339/],
      [`${'('.repeat(40)}price = 1${')'.repeat(40)}`, /nested deeper than 16 levels/],
      ['x'.repeat(3000), /longer than 2048 characters/],
    ])('refuses the filter %j with 400 and the position', async (filter, message) => {
      const res = await get(`/products?filter=${encodeURIComponent(filter)}`);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT', message: expect.stringMatching(message) });
    });

    it.each(['colour', 'price up', 'seller.name', 'price,price', 'description'])('refuses order_by=%j with 400 naming order_by', async (orderBy) => {
      const res = await get(`/products?order_by=${encodeURIComponent(orderBy)}`);
      expect(res.status).toBe(400);
      expect(res.body.error.message).toMatch(/^order_by /);
    });

    it('filters and orders orders by status, total and items', async () => {
      const { runtime } = context();
      const owner = await issueTestToken(runtime, { scope: 'orders:read' });
      const mug = await buildProduct(runtime, { name: 'Mug', priceCents: 700 });
      const paid = await buildOrder(runtime, { userId: owner.userId, status: 'paid', items: [{ product: mug, quantity: 3 }] });
      const pending = await buildOrder(runtime, { userId: owner.userId, items: [{ product: mug, quantity: 1 }] });
      const get2 = (path: string) => get(path, owner.authorization);
      expect(ids((await get2('/orders?filter=status%20%3D%20PAID&fields=id')).body)).toEqual([paid.id]);
      expect(ids((await get2('/orders?filter=status%20!%3D%20"paid"&fields=id')).body)).toEqual([pending.id]);
      expect(ids((await get2(`/orders?filter=items.quantity%20%3E%202%20AND%20items.productId%20%3D%20${mug.id}&fields=id`)).body)).toEqual([paid.id]);
      expect(ids((await get2('/orders?order_by=totalCents&fields=id')).body)).toEqual([pending.id, paid.id]);
      expect((await get2('/orders?filter=status%20%3C%20paid')).status).toBe(400);
      expect((await get2('/orders?filter=status%20%3D%20lost')).body.error.message).toMatch(/takes one of pending, paid/);
    });
  });

  describe('stability under concurrent writes', () => {
    it('walking every page while rows are inserted and deleted shows each surviving row exactly once (fast-check)', async () => {
      const { runtime } = context();
      const op = fc.record({ insert: fc.boolean(), price: fc.constantFrom(100, 500, 500, 900), name: fc.constantFrom('a', 'b', 'm', 'z'), pick: fc.nat() });
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom('', 'price desc', 'name', 'price,name desc', 'createdAt desc', 'id desc'),
          fc.integer({ min: 1, max: 4 }),
          fc.array(fc.constantFrom(100, 500, 900), { minLength: 1, maxLength: 10 }),
          fc.array(op, { maxLength: 12 }),
          async (orderBy, pageSize, prices, ops) => {
            const seller = await buildSeller(runtime);
            const existing: number[] = [];
            for (const [i, priceCents] of prices.entries()) existing.push((await buildProduct(runtime, { sellerId: seller.id, priceCents, name: `n${i % 3}` })).id);
            const deleted = new Set<number>();
            const seen: number[] = [];
            const queue = [...ops];
            const write = async () => {
              for (const next of queue.splice(0, 2)) {
                if (next.insert) {
                  await buildProduct(runtime, { sellerId: seller.id, priceCents: next.price, name: next.name });
                } else {
                  const victim = existing[next.pick % existing.length]!;
                  deleted.add(victim);
                  await runtime.db.delete(products).where(inArray(products.id, [victim]));
                }
              }
            };
            let path: string | undefined = `/products?fields=id&page_size=${pageSize}&filter=${encodeURIComponent(`seller.id = ${seller.id}`)}&order_by=${encodeURIComponent(orderBy)}`;
            for (let pages = 0; path; pages++) {
              expect(pages).toBeLessThan(100);
              // The page is read while the next writes go in.
              const [res] = await Promise.all([get(path), write()]);
              expect(res.status).toBe(200);
              seen.push(...ids(res.body));
              const token = res.headers['next-page-token'] as string | undefined;
              path = token ? `${path.replace(/&page_token=[^&]*/, '')}&page_token=${token}` : undefined;
            }
            expect(new Set(seen).size).toBe(seen.length);
            for (const id of existing) if (!deleted.has(id)) expect(seen).toContain(id);
          },
        ),
        { numRuns: 12 },
      );
    });
  });

  describe('sort keys that change between pages', () => {
    it('a row whose sort key changes is shown where it stands when each page is read (twice, or not at all); every other row exactly once', async () => {
      const { runtime } = context();
      const seller = await buildSeller(runtime);
      const made = [];
      for (const priceCents of [100, 200, 300, 400, 500, 600]) made.push(await buildProduct(runtime, { sellerId: seller.id, priceCents }));
      const [a, b, c, d, e, f] = made.map((product) => product.id) as [number, number, number, number, number, number];
      const path = `/products?fields=id&page_size=2&order_by=price&filter=${encodeURIComponent(`seller.id = ${seller.id}`)}`;
      const first = await get(path);
      expect(ids(first.body)).toEqual([a, b]);
      // Keyset pages continue after the last row's values: a row moved past them comes again, one moved before them is not seen.
      await runtime.db.update(products).set({ priceCents: 550 }).where(inArray(products.id, [a]));
      await runtime.db.update(products).set({ priceCents: 150 }).where(inArray(products.id, [e]));
      const rest = await walk(`${path}&page_token=${first.headers['next-page-token'] as string}`);
      expect(rest).toEqual([[c, d], [a, f]]);
    });
  });

  describe('SQL', () => {
    it('a paged, filtered, ordered request is one parameterised statement', async () => {
      const first = await get('/products?page_size=2&order_by=price%20desc,name&filter=price%20%3C%205000%20AND%20seller.name%20%3D%20%22Acme%22&fields=id,name');
      const token = first.headers['next-page-token'] as string;
      let res: request.Response | undefined;
      const sql = await captureSql(context().runtime, async () => {
        res = await get(`/products?page_size=2&order_by=price%20desc,name&filter=price%20%3C%205000%20AND%20seller.name%20%3D%20%22Acme%22&fields=id,name&page_token=${token}`);
      });
      expect(res!.status).toBe(200);
      expect(sql).toMatchInlineSnapshot(`
        [
          "select "d0"."price_cents" as "priceCents", "d0"."name" as "name", "d0"."id" as "id" from "products" as "d0" where (((("d0"."price_cents" < $1) and (exists (select * from "sellers" as "f0" where (("d0"."seller_id" = "f0"."id") and ("f0"."name" = $2)))))) and ((("d0"."price_cents" <= $3) and ((("d0"."price_cents" < $4) or ((("d0"."price_cents" = $5) and ("d0"."name" > $6))) or ((("d0"."price_cents" = $7) and ("d0"."name" = $8) and ("d0"."id" > $9)))))))) order by "d0"."price_cents" desc, "d0"."name" asc, "d0"."id" asc limit 3",
        ]
      `);
    });
  });
});
