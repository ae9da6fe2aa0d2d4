import { beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { describeEachDatabase } from '../support/runtime.js';
import { issueTestToken, type TestToken } from '../support/tokens.js';
import { buildProduct } from '../support/factories.js';
import { executeGraphQL, postGraphQL } from '../support/graphql.js';
import { captureSql } from '../support/sql.js';
import { createGraphQL, type GraphQLService } from '../../src/graphql/index.js';
import { DEFAULT_LIMITS, loadLimits } from '../../src/graphql/limits.js';
import { ConfigError } from '../../src/config.js';

const FULL_PRODUCT = 'id name description priceCents currency createdAt updatedAt seller { id name rating } shippingPolicy { id name minDays maxDays feeCents regions } reviews { id author rating body createdAt }';
const ORDERS = 'query Orders($limit: Int) { orders(limit: $limit) { id status memo totalCents createdAt updatedAt etag items { quantity unitPriceCents } } }';
const FULL_ORDERS = `query Orders($limit: Int) { orders(limit: $limit) { id status memo totalCents createdAt updatedAt etag items { quantity unitPriceCents product { ${FULL_PRODUCT} } } } }`;

describe('limit configuration', () => {
  it('has defaults and reads GRAPHQL_MAX_* from the environment', () => {
    expect(loadLimits({})).toEqual(DEFAULT_LIMITS);
    expect(loadLimits({ GRAPHQL_MAX_COST: '1234', GRAPHQL_MAX_DEPTH: ' 4 ' })).toEqual({ ...DEFAULT_LIMITS, maxCost: 1234, maxDepth: 4 });
  });

  it.each(['abc', '0', '-3', '1.5'])('refuses GRAPHQL_MAX_ALIASES=%s at start-up', (value) => {
    expect(() => loadLimits({ GRAPHQL_MAX_ALIASES: value })).toThrow(ConfigError);
    expect(() => loadLimits({ GRAPHQL_MAX_ALIASES: value })).toThrow(/^GRAPHQL_MAX_ALIASES: must be a whole number of at least 1/);
  });
});

describeEachDatabase('GraphQL abuse limits', (context) => {
  let caller: TestToken;
  let graphql: GraphQLService;

  beforeAll(async () => {
    const { runtime } = context();
    caller = await issueTestToken(runtime);
    graphql = createGraphQL(runtime);
    await buildProduct(runtime, { reviews: 1 });
  });

  /** Runs in-process and expects a 400 refusal for `reason`, with no SQL sent. */
  async function expectRefused(service: GraphQLService, query: string, reason: string, variables?: Record<string, unknown>) {
    let result: Awaited<ReturnType<typeof executeGraphQL>> | undefined;
    const sql = await captureSql(context().runtime, async () => {
      result = await executeGraphQL(service, caller.principal, query, variables);
    });
    expect(result!.data).toBeUndefined();
    expect(result!.errors?.[0]?.extensions).toMatchObject({ code: 'INVALID_ARGUMENT', reason, http: { status: 400 } });
    expect(sql).toEqual([]);
    return result!.errors![0]!;
  }

  describe('cost (argument-aware)', () => {
    it('costs a list by its limit and nested lists by theirs: every Order field but item products passes for 200 orders', async () => {
      const ok = await executeGraphQL(graphql, caller.principal, ORDERS, { limit: 200 });
      expect(ok.errors).toBeUndefined();
      // With the full product of each of up to 100 items per order, 20 orders are already too many.
      const error = await expectRefused(graphql, FULL_ORDERS, 'MAX_COST', { limit: 20 });
      expect(error.extensions).toMatchObject({ cost: 144_161, max: 100_000 });
      expect(error.message).toBe('the query costs 144161, more than the limit of 100000; ask for fewer items or fields');
      const fewerItems = FULL_ORDERS.replace('items {', 'items(limit: 5) {');
      expect((await executeGraphQL(graphql, caller.principal, fewerItems, { limit: 20 })).errors).toBeUndefined();
    });

    it('costs literal limits and defaults too', async () => {
      const query = (limit: string) => `{ products${limit} { ${FULL_PRODUCT} } }`;
      expect((await executeGraphQL(graphql, caller.principal, query('(limit: 200)'))).errors).toBeUndefined();
      const strict = createGraphQL(context().runtime, { limits: { maxCost: 13_800 } });
      await expectRefused(strict, query('(limit: 200)'), 'MAX_COST');
      expect((await executeGraphQL(strict, caller.principal, query(''))).errors).toBeUndefined();
    });

    it('never lets a cost remembered for null variables stand for missing ones, which take their defaults', async () => {
      // A missing variable takes its declared default (200 products), a null one the argument's.
      const query = `query ($l: Int = 200) { a: products(limit: $l) { ${FULL_PRODUCT} } b: products(limit: $l) { ${FULL_PRODUCT} } }`;
      const strict = createGraphQL(context().runtime, { limits: { maxCost: 13_800 } });
      expect((await executeGraphQL(strict, caller.principal, query, { l: null })).errors).toBeUndefined();
      await expectRefused(strict, query, 'MAX_COST');
      await expectRefused(strict, query, 'MAX_COST', {});
      expect((await executeGraphQL(strict, caller.principal, query, { l: null })).errors).toBeUndefined();
    });

    it('answers a deeply nested variable that the cost depends on as bad input, not a server error', async () => {
      const nested = JSON.parse(`${'['.repeat(20_000)}${']'.repeat(20_000)}`) as unknown;
      for (const query of ['query ($f: String) { products(filter: $f) { id } }', 'query ($l: Int) { products(limit: $l) { id } }']) {
        const result = await executeGraphQL(graphql, caller.principal, query, { l: nested, f: nested });
        expect(result.errors?.[0]?.extensions).toMatchObject({ code: 'INVALID_ARGUMENT', reason: 'BAD_USER_INPUT', http: { status: 400 } });
      }
    });

    it('multiplies aliased copies of a list', async () => {
      const copies = Array.from({ length: 10 }, (_, i) => `p${i}: products(limit: 200) { ${FULL_PRODUCT} }`).join(' ');
      await expectRefused(graphql, `{ ${copies} }`, 'MAX_COST');
    });
  });

  it('refuses more aliases than the limit (15)', async () => {
    const aliases = (n: number) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: product(id: ${i}) { id }`).join(' ')} }`;
    expect((await executeGraphQL(graphql, caller.principal, aliases(15))).errors).toBeUndefined();
    const error = await expectRefused(graphql, aliases(16), 'MAX_ALIASES');
    expect(error.message).toBe('Aliases limit of 15 exceeded, found 16.');
  });

  it('refuses more directives than the limit (10)', async () => {
    const directives = (n: number) => `{ products(limit: 1) { ${'... @include(if: true) { id } '.repeat(n)} } }`;
    expect((await executeGraphQL(graphql, caller.principal, directives(10))).errors).toBeUndefined();
    const error = await expectRefused(graphql, directives(11), 'MAX_DIRECTIVES');
    expect(error.message).toContain('Directives limit of 10 exceeded');
  });

  it('refuses a deeper selection than the limit (configurable; the schema itself is at most 5 deep)', async () => {
    const shallow = createGraphQL(context().runtime, { limits: { maxDepth: 3 } });
    expect((await executeGraphQL(shallow, caller.principal, '{ products { seller { name } } }')).errors).toBeUndefined();
    const error = await expectRefused(shallow, '{ orders { items { product { name } } } }', 'MAX_DEPTH');
    expect(error.message).toBe('Query depth limit of 3 exceeded, found 4.');
    // Fragments do not count as levels of their own.
    expect((await executeGraphQL(shallow, caller.principal, '{ products { ...P } } fragment P on Product { seller { name } }')).errors).toBeUndefined();
  });

  it('refuses a document with more tokens than the limit (1000) while parsing it', async () => {
    // 10 tokens around n inline fragments of 6 tokens each: 165 make 1000 tokens.
    const fragments = (n: number) => `{ products(limit: 1) { ${'... on Product { id } '.repeat(n)} } }`;
    expect((await executeGraphQL(graphql, caller.principal, fragments(165))).errors).toBeUndefined();
    const res = await postGraphQL(context().app, caller.token, fragments(166));
    expect(res.status).toBe(400);
    expect(res.body.errors![0]!.extensions).toMatchObject({ code: 'INVALID_ARGUMENT', reason: 'MAX_TOKENS', http: { status: 400 } });
    expect(res.body.errors![0]!.message).toBe('the document has more than 1000 tokens');
  });

  it('answers limits over HTTP with 400', async () => {
    const aliases = `{ ${Array.from({ length: 16 }, (_, i) => `a${i}: __typename`).join(' ')} ${Array.from({ length: 16 }, (_, i) => `b${i}: product(id: 1) { id }`).join(' ')} }`;
    const res = await postGraphQL(context().app, caller.token, aliases);
    expect(res.status).toBe(400);
    expect(res.body.data).toBeUndefined();
    expect(res.body.errors![0]!.extensions).toMatchObject({ code: 'INVALID_ARGUMENT', reason: 'MAX_ALIASES' });
    const costly = await postGraphQL(context().app, caller.token, FULL_ORDERS, { limit: 200 });
    expect(costly.status).toBe(400);
    expect(costly.body.errors![0]!.extensions).toMatchObject({ code: 'INVALID_ARGUMENT', reason: 'MAX_COST' });
  });

  it('does not batch: an array of operations is refused with 400', async () => {
    const res = await request(context().app)
      .post('/graphql')
      .set('Authorization', caller.authorization)
      .set('Content-Type', 'application/json')
      .send(JSON.stringify([{ query: '{ __typename }' }, { query: '{ __typename }' }]));
    expect(res.status).toBe(400);
    expect(res.body.errors[0].message).toBe('Batching is not supported.');
  });

  it('suggests no field, argument, type or enum value names', async () => {
    const probes = [
      ['{ products { nam } }', 'Cannot query field "nam" on type "Product".'],
      ['{ products(limt: 1) { id } }', 'Unknown argument "limt" on field "Query.products".'],
      ['query ($i: OrderStatu) { products { id } }', 'Unknown type "OrderStatu".'],
    ] as const;
    for (const [query, message] of probes) {
      const res = await postGraphQL(context().app, caller.token, query);
      expect(res.status).toBe(400);
      expect(res.body.errors![0]!.message).toBe(message);
      expect(res.body.errors![0]!.extensions).toMatchObject({ code: 'INVALID_ARGUMENT', reason: 'GRAPHQL_VALIDATION_FAILED' });
    }
    const badEnum = await postGraphQL(
      context().app,
      caller.token,
      'mutation ($s: OrderStatus) { updateOrder(id: 1, input: { status: $s }) { id } }',
      { s: 'PAYED' },
    );
    expect(badEnum.status).toBe(400);
    expect(badEnum.body.errors![0]!.extensions).toMatchObject({ code: 'INVALID_ARGUMENT', reason: 'BAD_USER_INPUT' });
    expect(JSON.stringify(badEnum.body)).not.toMatch(/did you mean|PAID/i);
  });
});
