/**
 * src/graphql/performance/compiled-queries.ts: repeated queries run as code graphql-jit compiles
 * from them, and answer exactly what graphql-js answers. Every case here is run on an Executor
 * that compiles and on one that never does, and the two results must be the same JSON.
 */
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { createRequire } from 'node:module';
import { parse, type DocumentNode, type ExecutionResult } from 'graphql';
import { Executor, type ExecutorOptions } from '../../../src/graphql/executor.js';
import { DEFAULT_LIMITS } from '../../../src/graphql/limits.js';
import { refusal } from '../../../src/graphql/performance/compiled-queries.js';
import { schema } from '../../../src/graphql/schema/index.js';
import { loadConfig } from '../../../src/config.js';
import { PageTokens } from '../../../src/api/page-token.js';
import { buildOrder, buildProduct } from '../../support/factories.js';
import { describeEachDatabase } from '../../support/runtime.js';
import { captureSql } from '../../support/sql.js';
import { postGraphQL } from '../../support/graphql.js';
import request from 'supertest';
import { issueTestToken, type TestToken } from '../../support/tokens.js';

/** graphql-jit's runtime helpers, as the compiled code calls them (the CommonJS build is what runs). */
const { jitRuntime } = createRequire(import.meta.url)('graphql-jit/dist/runtime.js') as { jitRuntime: { pathLink: (...args: unknown[]) => unknown } };

const NESTED_LIST = '{ products(limit: 20) { id name seller { name } reviews { rating } } }';

/** graphql-jit's marker for a Date in the argument literals it writes as code. */
const DATE_MARKER = '__MAGIC_DATE__33a9e76d_02e0_4128_8e92_3530ad3da74d';

interface Case {
  source?: string;
  document?: DocumentNode;
  variables?: Record<string, unknown>;
  operationName?: string;
}

const json = (result: ExecutionResult): unknown => JSON.parse(JSON.stringify(result));

describeEachDatabase('compiled queries', (context) => {
  let caller: TestToken;
  let reference: Executor;
  let productIds: number[];
  let orderId: number;

  // One key for every Executor here, so their cursors compare equal.
  const pageTokens = new PageTokens('compiled-queries-test-key');
  const executor = (options: ExecutorOptions['compiledQueries'] = { compileAfterUses: 0 }) => {
    const { runtime } = context();
    return new Executor({ schema, db: runtime.db, logger: runtime.logger, limits: DEFAULT_LIMITS, pageTokens, compiledQueries: options });
  };
  const run = (on: Executor, request: Case) => on.run({ principal: caller.principal, ...request });

  /**
   * Runs `request` three times compiled, and once on graphql-js; each result must be graphql-js',
   * and the last compiled run must send as many SQL statements as graphql-js' run.
   */
  const expectSameAsGraphQLJs = async (compiled: Executor, request: Case) => {
    let expected: unknown;
    const referenceStatements = await captureSql(context().runtime, async () => {
      expected = json(await run(reference, request));
    });
    for (let i = 0; i < 2; i++) expect(json(await run(compiled, request))).toEqual(expected);
    const compiledStatements = await captureSql(context().runtime, async () => {
      expect(json(await run(compiled, request))).toEqual(expected);
    });
    expect(compiledStatements).toHaveLength(referenceStatements.length);
    return expected as ExecutionResult;
  };

  beforeAll(async () => {
    const { runtime } = context();
    caller = await issueTestToken(runtime);
    const products = [
      await buildProduct(runtime, { name: 'Anchor', priceCents: 2500, reviews: 3, withShippingPolicy: true }),
      await buildProduct(runtime, { name: 'Buoy', priceCents: 900, reviews: 1 }),
      await buildProduct(runtime, { name: 'Cleat', priceCents: 400, reviews: 0 }),
    ];
    productIds = products.map((product) => product.id);
    const order = await buildOrder(runtime, { userId: caller.userId, memo: 'dock', items: [{ product: products[0], quantity: 2 }, { product: products[1] }] });
    orderId = order.id;
    reference = executor(false);
  });

  it('compiles a query on its second use, and runs it as one SQL statement', async () => {
    const compiled = executor({});
    await run(compiled, { source: NESTED_LIST });
    expect(compiled.compiled?.stats).toEqual({ compiled: 0, refused: 0 });
    await run(compiled, { source: NESTED_LIST });
    expect(compiled.compiled?.stats).toEqual({ compiled: 1, refused: 0 });

    let result: ExecutionResult | undefined;
    const statements = await captureSql(context().runtime, async () => {
      result = await run(compiled, { source: NESTED_LIST });
    });
    // graphql-jit as released hands resolvers fresh path links, and the relations are loaded by
    // a query each; patches/graphql-jit+0.8.9.patch shares them as graphql-js does.
    expect(statements).toHaveLength(1);
    expect(json(result!)).toEqual(json(await run(reference, { source: NESTED_LIST })));
    expect(compiled.compiled?.stats).toEqual({ compiled: 1, refused: 0 });
  });

  it('builds path links only for the fields that read one: the root and the relations, not the columns', async () => {
    const compiled = executor();
    await run(compiled, { source: NESTED_LIST });
    const pathLink = vi.spyOn(jitRuntime, 'pathLink');
    try {
      const result = await run(compiled, { source: NESTED_LIST });
      const rows = (result.data as { products: unknown[] }).products.length;
      expect(rows).toBeGreaterThanOrEqual(3);
      // `products`, then per row the paths of `seller` and `reviews`, three links each (a path is
      // asked for from the root, the links above it found again). Without
      // patches/graphql-jit+0.8.9.patch every field's path is built (id, name, seller.name and each
      // review's rating as well); without patches/@pothos+plugin-drizzle+0.20.0.patch every column
      // field reads its path.
      expect(pathLink).toHaveBeenCalledTimes(1 + 6 * rows);
    } finally {
      pathLink.mockRestore();
    }
  });

  it('never compiles a document used once', async () => {
    const compiled = executor({});
    for (const limit of [1, 2, 3, 4]) await run(compiled, { source: `{ products(limit: ${limit}) { id } }` });
    expect(compiled.compiled?.stats).toEqual({ compiled: 0, refused: 0 });
  });

  describe('answers what graphql-js answers', () => {
    const cases: [string, () => Case][] = [
      ['a nested list', () => ({ source: NESTED_LIST })],
      [
        'every product field, with aliases, fragments, __typename and relation arguments',
        () => ({
          source: `query Catalogue($limit: Int, $reviews: Int) {
            all: products(limit: $limit, orderBy: "name desc") { ...card __typename shippingPolicy { name minDays maxDays feeCents regions } }
            cheap: products(filter: "priceCents < 1000") { id ... on Product { priceCents currency } }
          }
          fragment card on Product { id name description priceCents createdAt updatedAt seller { id name rating }
            reviews(limit: $reviews, orderBy: "rating desc") { id author rating body createdAt } }`,
          variables: { limit: 10, reviews: 2 },
        }),
      ],
      ['REST’s read, by a variable', () => ({ source: 'query ($id: Int!) { product(id: $id) { id name } }', variables: { id: productIds[1] } })],
      ['a product that does not exist (null)', () => ({ source: 'query ($id: Int!) { product(id: $id) { id name } }', variables: { id: 999_999 } })],
      [
        '@include and @skip by variables',
        () => ({
          source: 'query ($seller: Boolean!, $reviews: Boolean!) { products { id seller @include(if: $seller) { name } reviews @skip(if: $reviews) { rating } } }',
          variables: { seller: false, reviews: true },
        }),
      ],
      [
        'a cursor connection',
        () => ({ source: '{ productsConnection(first: 2, orderBy: "priceCents") { edges { cursor node { id name } } nodes { id } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }' }),
      ],
      [
        "the caller's orders, with enums and their items' products",
        () => ({ source: '{ orders { id status memo totalCents etag createdAt items { productId quantity unitPriceCents product { name seller { name } } } } }' }),
      ],
      ['one order by id', () => ({ source: 'query ($id: Int!) { order(id: $id) { id status items(limit: 1) { quantity } } }', variables: { id: orderId } })],
      [
        'one operation of several, by name',
        () => ({ source: 'query A { products { id } } query B { orders { id } }', operationName: 'B' }),
      ],
      [
        'an AST the REST layer would build, never parsed from text',
        () => ({
          document: parse('query ($id: Int!) { product(id: $id) { id name seller { name } } }', { noLocation: true }),
          variables: { id: productIds[0] },
        }),
      ],
    ];

    for (const [name, request] of cases) {
      it(name, async () => {
        const compiled = executor();
        const expected = await expectSameAsGraphQLJs(compiled, request());
        expect(expected.errors).toBeUndefined();
        expect(compiled.compiled?.stats).toEqual({ compiled: 1, refused: 0 });
      });
    }
  });

  describe('hands every error to graphql-js, which words and masks it', () => {
    const cases: [string, Case, string][] = [
      ['a variable of the wrong type', { source: 'query ($id: Int!) { product(id: $id) { id } }', variables: { id: 'one' } }, 'INVALID_ARGUMENT'],
      ['a missing required variable', { source: 'query ($id: Int!) { product(id: $id) { id } }', variables: {} }, 'INVALID_ARGUMENT'],
      ['an unknown variable field', { source: 'query ($f: Boolean!) { products { id @include(if: $f) } }', variables: { f: 'yes' } }, 'INVALID_ARGUMENT'],
      ['a cursor that was never issued', { source: '{ productsConnection(after: "garbage") { nodes { id } } }' }, 'INVALID_ARGUMENT'],
      ['a filter that does not parse', { source: '{ products(filter: "name = ") { id } }' }, 'INVALID_ARGUMENT'],
      ['an order by an unknown field', { source: '{ products(orderBy: "password") { id } }' }, 'INVALID_ARGUMENT'],
    ];

    for (const [name, request, code] of cases) {
      it(name, async () => {
        const expected = await expectSameAsGraphQLJs(executor(), request);
        expect(expected.errors?.[0]?.extensions?.code).toBe(code);
      });
    }
  });

  describe('never compiles a document that could steer the code graphql-jit writes', () => {
    it('keeps a string holding graphql-jit’s value markers a string, and runs nothing from it', async () => {
      const compiled = executor();
      const injected = `{ products(limit: 1, filter: "${DATE_MARKER}0), pwned: (globalThis.FIELDGATE_PWNED = 1") { id } }`;
      await expectSameAsGraphQLJs(compiled, { source: injected });
      const quoted = `{ products(filter: "name = \\"${DATE_MARKER}1\\"") { id } }`;
      expect(await expectSameAsGraphQLJs(compiled, { source: quoted })).toEqual({ data: { products: [] } });
      expect((globalThis as { FIELDGATE_PWNED?: unknown }).FIELDGATE_PWNED).toBeUndefined();
      expect(compiled.compiled?.stats).toEqual({ compiled: 0, refused: 2 });
    });

    it('keeps response paths that would share a resolve info name apart', async () => {
      const compiled = executor();
      const result = await expectSameAsGraphQLJs(compiled, { source: '{ x: products { seller { name } } seller_idx0_x: products { id } }' });
      expect(result.errors).toBeUndefined();
      await expectSameAsGraphQLJs(compiled, { source: '{ products { idx0: seller { name } } }' });
      expect(compiled.compiled?.stats).toEqual({ compiled: 0, refused: 2 });
    });

    it('refuses names that are not GraphQL names in a built AST, and keys graphql-jit would misread', () => {
      // The REST layer builds its ASTs; one that was never parsed could hold any text as a name.
      const hostile = JSON.parse(JSON.stringify(parse('{ a: products { id } }', { noLocation: true })));
      hostile.definitions[0].selectionSet.selections[0].alias.value = 'a"]=1;//';
      expect(refusal(hostile)).toMatch(/is not a GraphQL name/);
      expect(refusal(parse('{ __proto__: products { id } }', { noLocation: true }))).toMatch(/response key/);
      expect(refusal(parse('{ products { __typename id } }'))).toBeUndefined();
      expect(refusal(parse('{ products { t: __typename } }'))).toBeUndefined();
      expect(refusal(parse('{ products { __typename: name } }'))).toMatch(/response key/);
    });

    it('refuses @skip and @include where graphql-jit would select otherwise than graphql-js', () => {
      // graphql-jit decides conditions per field node when it compiles: a key selected twice, or a
      // fragment spread twice, would come out in another order or with other fields.
      expect(refusal(parse('query ($a: Boolean!) { products { id @include(if: $a) name id } }'))).toMatch(/response key id selected twice/);
      expect(refusal(parse('query ($a: Boolean!) { products { seller @skip(if: $a) { id } seller { name } } }'))).toMatch(/response key seller selected twice/);
      expect(refusal(parse('query ($a: Boolean!) { products { ...f @skip(if: $a) } } fragment f on Product { id name ... on Product { id } }'))).toMatch(/response key id/);
      expect(refusal(parse('query ($a: Boolean!) { a: products { ...f @skip(if: $a) } b: products { ...f } } fragment f on Product { id }'))).toMatch(/fragment f spread 2 times/);
      // Without a condition both agree; with one, distinct keys and single spreads still compile.
      expect(refusal(parse('{ products { id name id ...f } } fragment f on Product { id }'))).toBeUndefined();
      expect(refusal(parse('query ($a: Boolean!) { products { id seller @include(if: $a) { id name } ...f @skip(if: $a) } } fragment f on Product { reviews { id } }'))).toBeUndefined();
    });

    it('refuses literals a built AST shaped otherwise than the parser would, and runs nothing from them', async () => {
      // graphql-jit writes `if: true` into its code as it finds it, and validation lets a Boolean
      // literal that holds text through: a built AST's literals must be what parsing makes.
      const compiled = executor();
      const built = JSON.parse(JSON.stringify(parse('{ products(limit: 1) { id @include(if: true) } }', { noLocation: true })));
      built.definitions[0].selectionSet.selections[0].selectionSet.selections[0].directives[0].arguments[0].value.value =
        'true && (globalThis.FIELDGATE_PWNED = 2)';
      await expectSameAsGraphQLJs(compiled, { document: built });
      expect((globalThis as { FIELDGATE_PWNED?: unknown }).FIELDGATE_PWNED).toBeUndefined();
      expect(compiled.compiled?.stats).toEqual({ compiled: 0, refused: 1 });

      const literal = (source: string, set: (value: { value: unknown }) => void) => {
        const document = JSON.parse(JSON.stringify(parse(source, { noLocation: true })));
        set(document.definitions[0].selectionSet.selections[0].arguments[0].value);
        return refusal(document);
      };
      expect(literal('{ product(id: 1) { id } }', (value) => (value.value = `1${DATE_MARKER}`))).toMatch(/Int literal/);
      expect(literal('{ product(id: 1) { id } }', (value) => (value.value = '1e3'))).toMatch(/Int literal/);
      expect(literal('{ products(limit: 1.5) { id } }', (value) => (value.value = 'NaN'))).toMatch(/Float literal/);
      expect(literal('{ products(sort: NAME) { id } }', (value) => (value.value = 'NAME"]'))).toMatch(/enum value/);
      expect(refusal(parse('{ product(id: -12) { id } products(limit: 2, filter: "x = 1.5e3") { id @skip(if: false) } }'))).toBeUndefined();
      expect(refusal(parse('{ a: product(id: 0) { id } }'))).toBeUndefined();
    });

    it('keeps variables named like inherited properties on graphql-js, so their values count', async () => {
      // Compiled, `$__proto__` would set the prototype of graphql-jit's variables object: the
      // variable would vanish and the limit fall back to its default, past the checked cost.
      const compiled = executor();
      for (const name of ['__proto__', 'constructor', 'toString']) {
        const request = { source: `query ($${name}: Int) { products(limit: $${name}) { id } }`, variables: JSON.parse(`{"${name}": 1}`) };
        const result = await expectSameAsGraphQLJs(compiled, request);
        expect((result.data as { products: unknown[] }).products).toHaveLength(1);
      }
      expect(compiled.compiled?.stats).toEqual({ compiled: 0, refused: 3 });
    });

    it('leaves mutations to graphql-js', async () => {
      const compiled = executor();
      const create = { source: 'mutation ($input: CreateOrderInput!) { createOrder(input: $input) { id status } }', variables: { input: { items: [{ productId: productIds[2], quantity: 1 }] } } };
      for (let i = 0; i < 3; i++) expect((await run(compiled, create)).errors).toBeUndefined();
      expect(compiled.compiled?.stats).toEqual({ compiled: 0, refused: 0 });
    });
  });

  describe('over HTTP, where the server compiles by default', () => {
    it('answers a repeated injection attempt on /graphql as graphql-js does, and runs nothing from it', async () => {
      const { app } = context();
      const injected = `{ products(limit: 1, filter: "${DATE_MARKER}0), pwned: (globalThis.FIELDGATE_PWNED_HTTP = 1") { id } }`;
      const first = await postGraphQL(app, caller.token, injected);
      expect(first.body.errors?.[0]?.extensions).toMatchObject({ code: 'INVALID_ARGUMENT' });
      for (let i = 0; i < 3; i++) {
        const again = await postGraphQL(app, caller.token, injected);
        expect([again.status, again.body]).toEqual([first.status, first.body]);
      }
      expect((globalThis as { FIELDGATE_PWNED_HTTP?: unknown }).FIELDGATE_PWNED_HTTP).toBeUndefined();
    });

    it('answers a repeated REST read and nested list the same each time, one statement each', async () => {
      const { app, runtime } = context();
      for (const path of [`/products/${productIds[0]}?fields=id,name,seller.name,reviews.rating`, '/products?fields=id,name,reviews(rating)&page_size=2']) {
        const first = await request(app).get(path).set('Authorization', caller.authorization);
        expect(first.status).toBe(200);
        for (let i = 0; i < 3; i++) {
          let again: request.Response | undefined;
          const statements = await captureSql(runtime, async () => {
            again = await request(app).get(path).set('Authorization', caller.authorization);
          });
          expect([again!.status, again!.body]).toEqual([200, first.body]);
          expect(statements).toHaveLength(1);
        }
      }
    });
  });

  it('runs on graphql-js a compiled query whose @include or @skip variable is null', async () => {
    // `$a: Boolean = true` may be sent as null; graphql-jit would skip the field, graphql-js refuses.
    const compiled = executor();
    const source = 'query ($a: Boolean = true) { products(limit: 1) { id } orders @include(if: $a) { id } }';
    await expectSameAsGraphQLJs(compiled, { source, variables: { a: true } });
    const refused = await expectSameAsGraphQLJs(compiled, { source, variables: { a: null } });
    expect(refused).toMatchObject({ data: null, errors: [{ message: expect.stringMatching(/"if"/) }] });
    expect(compiled.compiled?.stats).toEqual({ compiled: 1, refused: 0 });
  });

  it('keeps concurrent executions of one compiled query apart', async () => {
    const compiled = executor();
    const page = 'query ($id: Int!, $limit: Int) { product(id: $id) { id name reviews(limit: $limit) { rating } } products(limit: $limit) { id seller { name } } }';
    const requests = Array.from({ length: 48 }, (_, i) => ({ source: page, variables: { id: productIds[i % 3], limit: (i % 4) + 1 } }));
    const expected = await Promise.all(requests.map(async (request) => json(await run(reference, request))));
    const results = await Promise.all(requests.map(async (request) => json(await run(compiled, request))));
    expect(results).toEqual(expected);
    expect(compiled.compiled?.stats).toEqual({ compiled: 1, refused: 0 });
  });

  it('keeps a bounded number of compiled queries, compiling an evicted one again', async () => {
    const compiled = executor({ compileAfterUses: 0, max: 3 });
    const sources = [1, 2, 3, 4, 5].map((limit) => `{ products(limit: ${limit}) { id } }`);
    for (const source of sources) await run(compiled, { source });
    expect(compiled.compiled?.size).toBe(3);
    await run(compiled, { source: sources[4]! });
    expect(compiled.compiled?.stats.compiled).toBe(5);
    await run(compiled, { source: sources[0]! });
    expect(compiled.compiled?.stats.compiled).toBe(6);
    expect(compiled.compiled?.size).toBe(3);
  });
});

describe('GRAPHQL_COMPILED_QUERIES', () => {
  it('is on unless set to false', () => {
    expect(loadConfig({}).graphqlCompiledQueries).toBe(true);
    expect(loadConfig({ GRAPHQL_COMPILED_QUERIES: 'false' }).graphqlCompiledQueries).toBe(false);
    expect(() => loadConfig({ GRAPHQL_COMPILED_QUERIES: 'sometimes' })).toThrow(/GRAPHQL_COMPILED_QUERIES/);
  });
});
