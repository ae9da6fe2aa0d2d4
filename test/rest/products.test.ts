import { beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import fc from 'fast-check';
import { describeEachDatabase } from '../support/runtime.js';
import { issueTestToken } from '../support/tokens.js';
import { captureSql } from '../support/sql.js';
import { buildProduct, buildSeller, type Product } from '../support/factories.js';
import { products } from '../../src/db/schema.js';

/** Every field of a product as GraphQL serves it, from the issue-4 type list. */
const PRODUCT_FIELDS = ['id', 'name', 'description', 'priceCents', 'currency', 'seller', 'shippingPolicy', 'reviews', 'createdAt', 'updatedAt'];
const NESTED: Record<string, string[]> = {
  seller: ['id', 'name', 'rating'],
  shippingPolicy: ['id', 'name', 'minDays', 'maxDays', 'feeCents', 'regions'],
  reviews: ['id', 'author', 'rating', 'body', 'createdAt'],
};

describeEachDatabase('REST products', (context) => {
  let authorization: string;
  let full: Product;
  let bare: Product;

  beforeAll(async () => {
    const { runtime } = context();
    ({ authorization } = await issueTestToken(runtime, { scope: 'products:read' }));
    const seller = await buildSeller(runtime, { name: 'Cedar & Pine', rating: null });
    full = await buildProduct(runtime, { name: 'Trail Backpack', priceCents: 4999, reviews: 3, withShippingPolicy: true });
    bare = await buildProduct(runtime, { name: 'Camp Mug', description: null, sellerId: seller.id });
    for (let i = 0; i < 5; i++) await buildProduct(runtime, { name: `Filler ${i}` });
  });

  const get = (path: string) => request(context().app).get(path).set('Authorization', authorization);

  describe('lists, single products, paging and Link', () => {
    it('GET /products returns a JSON array of products in id order', async () => {
      const res = await get('/products');
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(Array.isArray(res.body)).toBe(true);
      expect(res.body.length).toBe(7);
      expect(res.body.map((p: { id: number }) => p.id)).toEqual([...res.body.map((p: { id: number }) => p.id)].sort((a, b) => a - b));
      expect(res.headers.link).toBeUndefined();
    });

    it('GET /products/{id} returns one product', async () => {
      const res = await get(`/products/${full.id}`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: full.id, name: 'Trail Backpack', priceCents: 4999, currency: 'USD' });
    });

    it('pages with limit and offset, and links the next page keeping fields', async () => {
      const first = await get('/products?limit=3&fields=id, name');
      expect(first.status).toBe(200);
      expect(first.body).toHaveLength(3);
      const link = first.headers.link as string;
      const match = /^<([^>]+)>; rel="next"$/.exec(link);
      expect(match).not.toBeNull();
      const next = new URL(match![1]!);
      expect(next.origin + next.pathname).toBe(`${context().config.issuer}/products`);
      expect(Object.fromEntries(next.searchParams)).toEqual({ limit: '3', offset: '3', fields: 'id, name' });

      const second = await get(`${next.pathname}${next.search}`);
      expect(second.body.map((p: { id: number }) => p.id)).toEqual(
        (await get('/products?offset=3&limit=3&fields=id')).body.map((p: { id: number }) => p.id),
      );
      expect(Object.keys(second.body[0])).toEqual(['id', 'name']);
      expect(second.headers.link).toMatch(/offset=6/);

      const last = await get('/products?limit=3&offset=6');
      expect(last.body).toHaveLength(1);
      expect(last.headers.link).toBeUndefined();
      // Exactly a full last page: no next link either.
      const exact = await get('/products?limit=7');
      expect(exact.body).toHaveLength(7);
      expect(exact.headers.link).toBeUndefined();
    });

    it('links the next page at the largest page size, where one-more cannot be asked for', async () => {
      const res = await get('/products?limit=200&offset=0&fields=id');
      expect(res.body).toHaveLength(7);
      expect(res.headers.link).toBeUndefined();
    });

    it.each(['0', '201', '-1', 'ten', '1.5', '', '5&limit=6'])('refuses limit=%j with 400', async (limit) => {
      const res = await get(`/products?limit=${limit}`);
      expect(res.status).toBe(400);
      expect(res.body.error.status).toBe('INVALID_ARGUMENT');
      expect(res.body.error.message).toMatch(/limit/);
    });

    it.each(['-1', 'x', '2147483648'])('refuses offset=%j with 400', async (offset) => {
      const res = await get(`/products?offset=${offset}`);
      expect(res.status).toBe(400);
      expect(res.body.error.message).toMatch(/offset/);
    });
  });

  describe('fields is a trimmed, de-duplicated, unordered list', () => {
    it('trims whitespace, collapses duplicates and ignores order', async () => {
      const a = await get(`/products/${full.id}?fields=${encodeURIComponent(' name ,id,name,\tid ')}`);
      const b = await get(`/products/${full.id}?fields=id,name`);
      expect(a.status).toBe(200);
      expect(a.body).toEqual({ id: full.id, name: 'Trail Backpack' });
      expect(a.body).toEqual(b.body);
    });

    it('answers every spelling of the same fields with the same bytes and ETag, keys in the order of a full product', async () => {
      // Names no other test asks for, so the first request below compiles its operation.
      const first = await get(`/products/${full.id}?fields=seller(rating,id),currency,description`);
      const second = await get(`/products/${full.id}?fields=description,currency,seller(id,rating)`);
      expect(first.status).toBe(200);
      expect(Object.keys(first.body)).toEqual(['description', 'currency', 'seller']);
      expect(Object.keys(first.body.seller)).toEqual(['id', 'rating']);
      expect(second.text).toBe(first.text);
      expect(second.headers.etag).toBe(first.headers.etag);
    });

    it('refuses a repeated fields parameter', async () => {
      const res = await get(`/products/${full.id}?fields=id&fields=name`);
      expect(res.status).toBe(400);
      expect(res.body.error.message).toMatch(/'fields' is given more than once/);
    });
  });

  describe('a non-empty fields gives exactly the named fields', () => {
    it('leaves unnamed keys out, not null', async () => {
      const res = await get(`/products/${full.id}?fields=priceCents`);
      expect(res.body).toStrictEqual({ priceCents: 4999 });
    });

    it('keeps a named field whose value is null, as null', async () => {
      const res = await get(`/products/${bare.id}?fields=description,shippingPolicy,seller.rating`);
      expect(res.body).toStrictEqual({ description: null, shippingPolicy: null, seller: { rating: null } });
    });

    it('shapes every item of a list the same way', async () => {
      const res = await get('/products?fields=id,currency');
      for (const product of res.body) expect(Object.keys(product).sort()).toEqual(['currency', 'id']);
    });
  });

  describe('absent, empty or * fields gives every field', () => {
    it.each(['', '?fields=', '?fields=*', '?fields=%20', '?fields=,'])('%s', async (query) => {
      const res = await get(`/products/${full.id}${query}`);
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual([...PRODUCT_FIELDS].sort());
      expect(Object.keys(res.body.seller).sort()).toEqual([...NESTED.seller!].sort());
      expect(Object.keys(res.body.shippingPolicy).sort()).toEqual([...NESTED.shippingPolicy!].sort());
      expect(res.body.reviews).toHaveLength(3);
      for (const review of res.body.reviews) expect(Object.keys(review).sort()).toEqual([...NESTED.reviews!].sort());
    });
  });

  describe('nested selection, Google style and path form', () => {
    it('seller(name,rating) and reviews(rating,author)', async () => {
      const res = await get(`/products/${full.id}?fields=seller(name,rating),reviews(rating,author)`);
      expect(Object.keys(res.body).sort()).toEqual(['reviews', 'seller']);
      expect(Object.keys(res.body.seller).sort()).toEqual(['name', 'rating']);
      expect(res.body.reviews).toEqual([
        { rating: 1, author: 'reviewer1' },
        { rating: 2, author: 'reviewer2' },
        { rating: 3, author: 'reviewer3' },
      ]);
    });

    it('seller.name and seller.rating merge into one seller', async () => {
      const paths = await get(`/products/${full.id}?fields=seller.name,seller.rating,id`);
      const nested = await get(`/products/${full.id}?fields=id,seller(rating,name)`);
      expect(paths.body).toEqual(nested.body);
      expect(Object.keys(paths.body.seller).sort()).toEqual(['name', 'rating']);
    });

    it('a bare object name returns it whole', async () => {
      const res = await get(`/products/${full.id}?fields=seller,shippingPolicy.name`);
      expect(Object.keys(res.body.seller).sort()).toEqual([...NESTED.seller!].sort());
      expect(res.body.shippingPolicy).toStrictEqual({ name: expect.any(String) });
    });
  });

  describe('bad fields are a 400 naming the offending field', () => {
    it.each([
      ['nope', "fields: 'nope' is not a field of Product"],
      ['rating', "fields: 'rating' is not a field of Product"],
      ['seller.nope', "fields: 'seller.nope' is not a field (Seller has no field 'nope')"],
      ['reviews(rating,stars)', "fields: 'reviews.stars' is not a field (Review has no field 'stars')"],
      ['seller,seller.nope', "fields: 'seller.nope' is not a field (Seller has no field 'nope')"],
      ['name.first', "fields: 'name' has no subfields, so 'name.first' is not a field"],
      ['name(first)', "fields: 'name' has no subfields, so 'name.first' is not a field"],
      ['reviews[0]', "fields: list indexes are not supported, in 'reviews[…]'"],
      ['reviews.0.rating', "fields: list indexes are not supported, in 'reviews.0'"],
      ['seller(name', "fields: unclosed '(' after 'seller'"],
      ['seller)name', "fields: unmatched ')' after 'seller'"],
      ['id;name', `fields: unexpected ";" after 'id'`],
      ['__typename', "fields: '__typename' is not a field of Product"],
    ])('%s', async (fields, message) => {
      const res = await get(`/products/${full.id}?fields=${encodeURIComponent(fields)}`);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT', message });
      expect(res.body.error.details).toContainEqual({ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: 'fields', description: message }] });
    });

    it('skips an empty name between two commas', async () => {
      const res = await get(`/products/${full.id}?fields=id,,name,`);
      expect(res.status).toBe(200);
      expect(res.body).toStrictEqual({ id: full.id, name: 'Trail Backpack' });
    });

    it('checks the list route the same way', async () => {
      const res = await get('/products?fields=id,rating');
      expect(res.status).toBe(400);
      expect(res.body.error.message).toBe("fields: 'rating' is not a field of Product");
    });
  });

  describe('translation: schema allow-list, AST, LRU, column-level SQL', () => {
    // The token's revocation check is left out of each capture (test/support/sql.ts): only the data statement remains.
    it('GET /products?fields=id,name is one SQL statement reading only id and name', async () => {
      await get('/products?fields=id,name');
      const statements = await captureSql(context().runtime, async () => {
        expect((await get('/products?fields=id,name')).status).toBe(200);
      });
      expect(statements).toMatchInlineSnapshot(`
        [
          "select "d0"."id" as "id", "d0"."name" as "name" from "products" as "d0" order by "d0"."id" asc limit 51",
        ]
      `);
    });

    it('GET /products/{id}?fields=id,name is one statement, as the README architecture section shows', async () => {
      let body: unknown;
      await get(`/products/${full.id}?fields=id,name`);
      const statements = await captureSql(context().runtime, async () => {
        body = (await get(`/products/${full.id}?fields=id,name`)).body;
      });
      expect(body).toEqual({ id: full.id, name: 'Trail Backpack' });
      expect(statements).toMatchInlineSnapshot(`
        [
          "select "d0"."id" as "id", "d0"."name" as "name" from "products" as "d0" where "d0"."id" = $1 limit $2",
        ]
      `);
    });

    it('answers reads of many products sent at once each with its own product and fields, and a missing one with 404', async () => {
      const paths = [`/products/${full.id}?fields=id,name`, `/products/${bare.id}?fields=id,name`, '/products/999999?fields=id,name', `/products/${full.id}?fields=name,reviews.rating`];
      const responses = await Promise.all([...paths, ...paths].map((path) => get(path)));
      for (const round of [0, paths.length]) {
        expect(responses[round]!.body).toEqual({ id: full.id, name: 'Trail Backpack' });
        expect(responses[round + 1]!.body).toEqual({ id: bare.id, name: 'Camp Mug' });
        expect(responses[round + 2]!.status).toBe(404);
        expect(responses[round + 2]!.body.error).toMatchObject({ code: 404, status: 'NOT_FOUND' });
        expect(responses[round + 3]!.body).toEqual({ name: 'Trail Backpack', reviews: [expect.objectContaining({ rating: expect.any(Number) }), expect.anything(), expect.anything()] });
      }
    });

    it('reads the seller and reviews only when they are named, still in one statement', async () => {
      const statements = await captureSql(context().runtime, () => get('/products?fields=name,seller.name'));
      expect(statements).toHaveLength(1);
      expect(statements[0]).toMatch(/"sellers"/);
      expect(statements[0]).not.toMatch(/"reviews"|"shipping_policies"|price_cents|description/);
    });

    it('user text never reaches the query: a GraphQL-looking name is just an unknown field', async () => {
      const res = await get(`/products?fields=${encodeURIComponent('id}} mutation{createOrder')}`);
      expect(res.status).toBe(400);
      expect(res.body.error.message).toBe(`fields: unexpected "}" after 'id'`);
    });
  });

  describe('the {id} path segment', () => {
    it.each(['abc', '0', '-1', '1.0', '01', '1e3', '2147483648', '99999999999999999999'])('%s is a 400', async (id) => {
      const res = await get(`/products/${id}`);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
      expect(res.body.error.message).toMatch(/id must be a positive integer/);
    });

    it('a product that does not exist is a 404', async () => {
      const res = await get('/products/2147483647');
      expect(res.status).toBe(404);
      expect(res.body).toStrictEqual({
        error: { code: 404, status: 'NOT_FOUND', message: 'no product 2147483647', details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', domain: 'fieldgate.dev', reason: 'NOT_FOUND', metadata: {} }] },
      });
    });

    it('fields is checked before existence', async () => {
      const res = await get('/products/2147483647?fields=nope');
      expect(res.status).toBe(400);
    });
  });

  describe('properties (fast-check)', () => {
    const fieldsText = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.stringMatching(/^[a-zA-Z_.,()*[\] 0-9]{0,40}$/),
      fc.array(fc.constantFrom('id', 'name', 'seller', 'seller.name', 'reviews(rating', ')', ',', '.', 'rating', '*', '(', 'x'), { maxLength: 8 }).map((parts) => parts.join('')),
    );

    it('any fields value gets 200 or 400, never anything else', async () => {
      await fc.assert(
        fc.asyncProperty(fieldsText, fc.boolean(), async (fields, list) => {
          const res = await request(context().app)
            .get(list ? '/products' : `/products/${full.id}`)
            .query({ fields, limit: 2 })
            .set('Authorization', authorization);
          expect([200, 400]).toContain(res.status);
          if (res.status === 400) {
            expect(Object.keys(res.body.error).sort()).toEqual(['code', 'details', 'message', 'status']);
            expect(res.body.error.status).toBe('INVALID_ARGUMENT');
          }
        }),
        { numRuns: 150 },
      );
    });

    /** A random valid selection and the exact keys it must produce. */
    type Expected = { [name: string]: Expected | true };
    const nestedSelection = (names: string[]) => fc.subarray(names, { minLength: 1 });
    const selection = fc
      .tuple(
        fc.subarray(PRODUCT_FIELDS, { minLength: 1 }),
        nestedSelection(NESTED.seller!),
        nestedSelection(NESTED.shippingPolicy!),
        nestedSelection(NESTED.reviews!),
        fc.boolean(),
      )
      .map(([top, seller, policy, reviews, pathForm]) => {
        const expected: Expected = {};
        const parts: string[] = [];
        for (const name of top) {
          const sub = { seller, shippingPolicy: policy, reviews }[name];
          if (sub) {
            expected[name] = Object.fromEntries(sub.map((s) => [s, true]));
            parts.push(pathForm ? sub.map((s) => `${name}.${s}`).join(',') : `${name}(${sub.join(',')})`);
          } else {
            expected[name] = true;
            parts.push(name);
          }
        }
        return { fields: parts.join(','), expected };
      });

    function checkKeys(value: unknown, expected: Expected): void {
      if (value === null) return;
      if (Array.isArray(value)) {
        for (const item of value) checkKeys(item, expected);
        return;
      }
      expect(Object.keys(value as object).sort()).toEqual(Object.keys(expected).sort());
      for (const [name, sub] of Object.entries(expected)) {
        if (sub !== true) checkKeys((value as Record<string, unknown>)[name], sub);
      }
    }

    it('returns exactly the requested keys, at every level, for random valid selections', async () => {
      await fc.assert(
        fc.asyncProperty(selection, async ({ fields, expected }) => {
          const res = await get(`/products?limit=3&fields=${encodeURIComponent(fields)}`);
          expect(res.status).toBe(200);
          expect(res.body.length).toBeGreaterThan(0);
          for (const product of res.body) checkKeys(product, expected);
          const one = await get(`/products/${full.id}?fields=${encodeURIComponent(fields)}`);
          checkKeys(one.body, expected);
        }),
        { numRuns: 60 },
      );
    });
  });
});

describe('REST products without a fields parameter on an unknown route', () => {
  it('is not served for other methods: 405 with Allow', async () => {
    const { createTestRuntime } = await import('../support/runtime.js');
    const context = await createTestRuntime('pglite');
    try {
      const res = await request(context.app).delete('/products/1');
      expect(res.status).toBe(405);
      expect(res.headers.allow).toBe('GET, HEAD, OPTIONS');
    } finally {
      await context.close();
    }
  });
});

describeEachDatabase('REST products: the largest page', (context) => {
  it('at limit=200, links the next page only when one more product exists', async () => {
    const { runtime, app } = context();
    const { authorization } = await issueTestToken(runtime, { scope: 'products:read' });
    const seller = await buildSeller(runtime);
    const insert = (count: number, from: number) =>
      runtime.db.insert(products).values(Array.from({ length: count }, (_, i) => ({ name: `Bulk ${from + i}`, priceCents: 100, sellerId: seller.id })));
    await insert(200, 0);
    const full = await request(app).get('/products?limit=200&fields=id').set('Authorization', authorization);
    await insert(1, 200);
    let firstPage: request.Response | undefined;
    const statements = await captureSql(runtime, async () => {
      firstPage = await request(app).get('/products?limit=200&fields=id').set('Authorization', authorization);
    });
    expect(full.body).toHaveLength(200);
    expect(full.headers.link).toBeUndefined();
    // One statement, loading one row past the page, even at the largest page size.
    expect(statements).toEqual(['select "d0"."id" as "id" from "products" as "d0" order by "d0"."id" asc limit 201']);
    expect(firstPage!.body).toHaveLength(200);
    expect(firstPage!.headers.link).toMatch(/offset=200/);
    const more = await request(app).get('/products?limit=200').set('Authorization', authorization);
    expect(more.status).toBe(200);
    expect(more.body).toHaveLength(200);
    expect(more.headers.link).toBe(`<${context().config.issuer}/products?limit=200&offset=200>; rel="next"`);
    const next = await request(app).get('/products?limit=200&offset=200&fields=name').set('Authorization', authorization);
    expect(next.body).toEqual([{ name: 'Bulk 200' }]);
  });
});
