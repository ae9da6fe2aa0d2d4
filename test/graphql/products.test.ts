import { beforeAll, expect, it } from 'vitest';
import { describeEachDatabase } from '../support/runtime.js';
import { issueTestToken, type TestToken } from '../support/tokens.js';
import { buildProduct, buildSeller, type Product } from '../support/factories.js';
import { executeGraphQL, postGraphQL } from '../support/graphql.js';
import { captureSql } from '../support/sql.js';
import { createGraphQL, type GraphQLService } from '../../src/graphql/index.js';

describeEachDatabase('GraphQL products', (context) => {
  let caller: TestToken;
  let graphql: GraphQLService;
  let first: Product;
  let second: Product;

  beforeAll(async () => {
    const { runtime } = context();
    graphql = createGraphQL(runtime);
    caller = await issueTestToken(runtime, { scope: 'products:read' });
    const seller = await buildSeller(runtime, { name: 'Northwind', rating: 4.7 });
    first = await buildProduct(runtime, { name: 'Trail Backpack', priceCents: 4999, sellerId: seller.id, reviews: 2, withShippingPolicy: true });
    second = await buildProduct(runtime, { name: 'Camp Mug', description: null, priceCents: 995, sellerId: seller.id });
  });

  /** Runs `query` in-process (no token lookup) and returns its data and the SQL it sent. */
  async function run(query: string, variables?: Record<string, unknown>) {
    let result: Awaited<ReturnType<typeof executeGraphQL>> | undefined;
    const sql = await captureSql(context().runtime, async () => {
      result = await executeGraphQL(graphql, caller.principal, query, variables);
    });
    expect(result!.errors).toBeUndefined();
    return { data: result!.data as Record<string, unknown>, sql };
  }

  it('{ products { id name } } reads only id and name from products, and no other table', async () => {
    const { data, sql } = await run('{ products { id name } }');
    expect(data).toEqual({
      products: [
        { id: first.id, name: 'Trail Backpack' },
        { id: second.id, name: 'Camp Mug' },
      ],
    });
    expect(sql).toMatchInlineSnapshot(`
      [
        "select "d0"."id" as "id", "d0"."name" as "name" from "products" as "d0" order by "d0"."id" asc limit 50",
      ]
    `);
  });

  it('scalars only: one statement naming the selected columns (and the key)', async () => {
    const { data, sql } = await run(`query ($id: Int!) { product(id: $id) { priceCents currency description } }`, { id: second.id });
    expect(data).toEqual({ product: { priceCents: 995, currency: 'USD', description: null } });
    expect(sql).toEqual([
      'select "d0"."price_cents" as "priceCents", "d0"."currency" as "currency", "d0"."description" as "description", "d0"."id" as "id" from "products" as "d0" where "d0"."id" = $1 limit $2',
    ]);
  });

  it('with reviews: the reviews are joined in the same statement, only their selected columns', async () => {
    const { data, sql } = await run(`query ($id: Int!) { product(id: $id) { name reviews { author rating } } }`, { id: first.id });
    expect(data).toEqual({
      product: {
        name: 'Trail Backpack',
        reviews: [
          { author: 'reviewer1', rating: 1 },
          { author: 'reviewer2', rating: 2 },
        ],
      },
    });
    expect(sql).toEqual([
      `select "d0"."name" as "name", "d0"."id" as "id", "reviews"."r" as "reviews" from "products" as "d0" left join lateral(select coalesce(json_agg(row_to_json("t".*)), '[]') as "r" from (select "d1"."author" as "author", "d1"."rating" as "rating", "d1"."id" as "id" from "reviews" as "d1" where "d0"."id" = "d1"."product_id" order by "d1"."id" asc limit $1) as "t") as "reviews" on true where "d0"."id" = $2 limit $3`,
    ]);
  });

  it('with seller and reviews: both joined in one statement; the shipping policy is not', async () => {
    const { data, sql } = await run(`query ($id: Int!) { product(id: $id) { id seller { name rating } reviews { body } } }`, { id: first.id });
    expect(data).toEqual({
      product: { id: first.id, seller: { name: 'Northwind', rating: 4.7 }, reviews: [{ body: 'Works well.' }, { body: 'Works well.' }] },
    });
    expect(sql).toHaveLength(1);
    expect(sql[0]).toBe(
      `select "d0"."id" as "id", "seller"."r" as "seller", "reviews"."r" as "reviews" from "products" as "d0" left join lateral(select row_to_json("t".*) "r" from (select "d1"."name" as "name", "d1"."rating" as "rating", "d1"."id" as "id" from "sellers" as "d1" where "d0"."seller_id" = "d1"."id" limit $1) as "t") as "seller" on true left join lateral(select coalesce(json_agg(row_to_json("t".*)), '[]') as "r" from (select "d1"."body" as "body", "d1"."id" as "id" from "reviews" as "d1" where "d0"."id" = "d1"."product_id" order by "d1"."id" asc limit $2) as "t") as "reviews" on true where "d0"."id" = $3 limit $4`,
    );
    expect(sql[0]).not.toContain('shipping_policies');
  });

  it('a list with nested relations is one statement (no N+1), whatever the number of rows', async () => {
    const { data, sql } = await run(
      `{ products(limit: 10) { name seller { name } shippingPolicy { name minDays maxDays feeCents regions } reviews { rating } } }`,
    );
    const products = (data as { products: Record<string, unknown>[] }).products;
    expect(products).toHaveLength(2);
    expect(products[0]).toMatchObject({ name: 'Trail Backpack', seller: { name: 'Northwind' }, shippingPolicy: { minDays: 2, maxDays: 5, feeCents: 499, regions: ['US', 'CA'] } });
    expect(products[1]).toEqual({ name: 'Camp Mug', seller: { name: 'Northwind' }, shippingPolicy: null, reviews: [] });
    expect(sql).toEqual([
      `select "d0"."name" as "name", "d0"."id" as "id", "seller"."r" as "seller", "shippingPolicy"."r" as "shippingPolicy", "reviews"."r" as "reviews" from (select "d0".* from "products" as "d0" order by "d0"."id" asc limit 10) as "d0" left join lateral(select row_to_json("t".*) "r" from (select "d1"."name" as "name", "d1"."id" as "id" from "sellers" as "d1" where "d0"."seller_id" = "d1"."id" limit $1) as "t") as "seller" on true left join lateral(select row_to_json("t".*) "r" from (select "d1"."name" as "name", "d1"."min_days" as "minDays", "d1"."max_days" as "maxDays", "d1"."fee_cents" as "feeCents", "d1"."regions" as "regions", "d1"."id" as "id" from "shipping_policies" as "d1" where "d0"."shipping_policy_id" = "d1"."id" limit $2) as "t") as "shippingPolicy" on true left join lateral(select coalesce(json_agg(row_to_json("t".*)), '[]') as "r" from (select "d1"."rating" as "rating", "d1"."id" as "id" from "reviews" as "d1" where "d0"."id" = "d1"."product_id" order by "d1"."id" asc limit $3) as "t") as "reviews" on true order by "d0"."id" asc`,
    ]);
  });

  it('serves every Product field, with timestamps as ISO strings', async () => {
    const { data } = await run(
      `query ($id: Int!) { product(id: $id) { id name description priceCents currency createdAt updatedAt shippingPolicy { id name } reviews { id author rating body createdAt } seller { id name rating } } }`,
      { id: first.id },
    );
    const product = (data as { product: Record<string, unknown> }).product;
    expect(product).toMatchObject({ id: first.id, name: 'Trail Backpack', description: 'A test product.', priceCents: 4999, currency: 'USD' });
    expect(product.createdAt).toBe(first.createdAt.toISOString());
    expect(product.updatedAt).toBe(first.updatedAt.toISOString());
    expect((product.reviews as { createdAt: unknown }[])[0]!.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('pages with limit and offset, by id', async () => {
    const { data } = await run('{ products(limit: 1, offset: 1) { id } }');
    expect(data).toEqual({ products: [{ id: second.id }] });
  });

  it('product(id) is null for an unknown id', async () => {
    const { data } = await run('{ product(id: 999999) { id } }');
    expect(data).toEqual({ product: null });
  });

  it('product(id) operations running together, from different callers, share one statement per selection and each get their own answer', async () => {
    const { runtime } = context();
    const other = await issueTestToken(runtime, { scope: 'products:read' });
    const withoutScope = await issueTestToken(runtime, { scope: 'orders:read' });
    const byId = 'query ($id: Int!) { product(id: $id) { id name } }';
    const withReviews = 'query ($id: Int!) { product(id: $id) { name reviews { rating } } }';
    let results: Awaited<ReturnType<typeof executeGraphQL>>[] = [];
    const sql = await captureSql(runtime, async () => {
      results = await Promise.all([
        executeGraphQL(graphql, caller.principal, byId, { id: first.id }),
        executeGraphQL(graphql, other.principal, byId, { id: second.id }),
        executeGraphQL(graphql, caller.principal, byId, { id: 999_999 }),
        executeGraphQL(graphql, withoutScope.principal, byId, { id: first.id }),
        executeGraphQL(graphql, other.principal, withReviews, { id: first.id }),
        executeGraphQL(graphql, caller.principal, byId, { id: first.id }),
      ]);
    });
    expect(results.map((result) => result.data)).toEqual([
      { product: { id: first.id, name: 'Trail Backpack' } },
      { product: { id: second.id, name: 'Camp Mug' } },
      { product: null },
      undefined,
      { product: { name: 'Trail Backpack', reviews: [{ rating: expect.any(Number) }, { rating: expect.any(Number) }] } },
      { product: { id: first.id, name: 'Trail Backpack' } },
    ]);
    // The caller without products:read is refused before anything is read for it.
    expect(results[3]!.errors?.[0]?.extensions).toMatchObject({ code: 'FORBIDDEN' });
    expect(results.filter((result) => result !== results[3]).every((result) => result.errors === undefined)).toBe(true);
    expect(sql).toHaveLength(2);
    expect(sql.filter((statement) => /= any\(\$\d+\)/.test(statement))).toHaveLength(1);
  });

  it('one document asking for several products by alias reads them in one statement', async () => {
    const { data, sql } = await run(`query ($a: Int!, $b: Int!) { a: product(id: $a) { id name } b: product(id: $b) { id name } none: product(id: 999999) { id name } }`, {
      a: first.id,
      b: second.id,
    });
    expect(data).toEqual({ a: { id: first.id, name: 'Trail Backpack' }, b: { id: second.id, name: 'Camp Mug' }, none: null });
    expect(sql).toHaveLength(1);
  });

  it.each([0, 201, -1])('refuses limit %i with INVALID_ARGUMENT', async (limit) => {
    const result = await executeGraphQL(graphql, caller.principal, 'query ($limit: Int) { products(limit: $limit) { id } }', { limit });
    expect(result.data).toBeNull();
    expect(result.errors?.[0]?.extensions).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'limit' });
    expect(result.errors?.[0]?.message).toBe(`limit must be from 1 to 200, got ${limit}`);
  });

  it('refuses a negative offset with INVALID_ARGUMENT', async () => {
    const result = await executeGraphQL(graphql, caller.principal, '{ products(offset: -5) { id } }');
    expect(result.errors?.[0]?.extensions).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'offset' });
  });

  it('serves the same over HTTP at /graphql', async () => {
    const res = await postGraphQL(context().app, caller.token, 'query Two($limit: Int) { products(limit: $limit) { id name } }', { limit: 2 });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body).toEqual({ data: { products: [{ id: first.id, name: 'Trail Backpack' }, { id: second.id, name: 'Camp Mug' }] } });
  });
});
