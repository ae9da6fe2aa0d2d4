/**
 * Differential test of the compiled query path (src/graphql/performance/compiled-queries.ts):
 * an app that compiles repeated queries (the default) and one started with
 * GRAPHQL_COMPILED_QUERIES=false share one database, and every request, sent to both, must get
 * the same status, the same content-type and cache-control, and the same body to the byte — on
 * its first use (graphql-js) and on the uses after it (graphql-jit's code). JSON key order is
 * part of the bytes, so bodies are compared as text, never parsed.
 *
 * The random queries are seeded: DIFFERENTIAL_SEED and DIFFERENTIAL_RUNS explore further.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import request from 'supertest';
import type { Express } from 'express';
import { parse, type DocumentNode } from 'graphql';
import { createApp } from '../../src/app.js';
import { Executor } from '../../src/graphql/executor.js';
import { DEFAULT_LIMITS } from '../../src/graphql/limits.js';
import { schema } from '../../src/graphql/schema/index.js';
import { PageTokens } from '../../src/api/page-token.js';
import { users } from '../../src/db/schema.js';
import { eq } from 'drizzle-orm';
import { buildOrder, buildProduct, buildSeller, type Product } from '../support/factories.js';
import { describeEachDatabase } from '../support/runtime.js';
import { issueTestToken, type TestToken } from '../support/tokens.js';

interface Exchange {
  status: number;
  contentType: string | undefined;
  cacheControl: string | undefined;
  etag: string | undefined;
  body: string;
}

interface GraphQLCase {
  query: string;
  variables?: Record<string, unknown> | undefined;
  operationName?: string | undefined;
}

/** Variables as JSON text: built from text so that keys such as `__proto__` stay own keys. */
type VariablesText = string;

describeEachDatabase('compiled queries, differentially against graphql-js', (context) => {
  let compiledApp: Express;
  let referenceApp: Express;
  let caller: TestToken;
  let catalogueOnly: TestToken;
  let products: Product[];
  let orderId: number;
  let strangersOrderId: number;

  beforeAll(async () => {
    const { runtime } = context();
    compiledApp = createApp(runtime);
    referenceApp = createApp({ ...runtime, config: { ...runtime.config, graphqlCompiledQueries: false } });
    caller = await issueTestToken(runtime);
    catalogueOnly = await issueTestToken(runtime, { scope: 'products:read' });
    const stranger = await issueTestToken(runtime);
    const seller = await buildSeller(runtime, { name: 'Quay "Ltd" \\ ${x} */ \u2028', rating: 3.25 });
    products = [
      await buildProduct(runtime, { name: 'Anchor', priceCents: 2500, reviews: 3, withShippingPolicy: true, sellerId: seller.id }),
      await buildProduct(runtime, { name: 'Buoy', priceCents: 900, reviews: 1, description: null }),
      await buildProduct(runtime, { name: 'Cleat \u2029 </script>', priceCents: 400, reviews: 0, sellerId: seller.id }),
      await buildProduct(runtime, { name: 'Davit', priceCents: 400, reviews: 2, withShippingPolicy: true }),
    ];
    orderId = (await buildOrder(runtime, { userId: caller.userId, memo: 'dock "7"', items: [{ product: products[0]!, quantity: 2 }, { product: products[1]! }] })).id;
    await buildOrder(runtime, { userId: caller.userId, status: 'paid', items: [{ product: products[3]!, quantity: 5 }] });
    strangersOrderId = (await buildOrder(runtime, { userId: stranger.userId, items: [{ product: products[2]! }] })).id;
  });

  const exchange = async (response: Promise<request.Response>): Promise<Exchange> => {
    const res = await response;
    return {
      status: res.status,
      contentType: res.headers['content-type'],
      cacheControl: res.headers['cache-control'],
      etag: res.headers['etag'],
      body: res.text,
    };
  };

  const postOn = (app: Express, token: TestToken, body: string) =>
    exchange(request(app).post('/graphql').set('Authorization', token.authorization).set('Content-Type', 'application/json').set('Accept', 'application/json').send(body));

  const bodyOf = ({ query, variables, operationName }: GraphQLCase, variablesText?: VariablesText) =>
    `{"query":${JSON.stringify(query)}${variablesText !== undefined ? `,"variables":${variablesText}` : variables !== undefined ? `,"variables":${JSON.stringify(variables)}` : ''}${operationName !== undefined ? `,"operationName":${JSON.stringify(operationName)}` : ''}}`;

  /**
   * Sends the case to graphql-js, then three times to the compiling app (its first use runs on
   * graphql-js, the others compiled): every answer must be graphql-js' to the byte.
   */
  const expectSameOverGraphQL = async (graphqlCase: GraphQLCase, token = caller, variablesText?: VariablesText): Promise<Exchange> => {
    const body = bodyOf(graphqlCase, variablesText);
    const expected = await postOn(referenceApp, token, body);
    for (let use = 1; use <= 3; use++) {
      const actual = await postOn(compiledApp, token, body);
      expect({ use, ...actual }, `${body}`).toEqual({ use, ...expected });
    }
    return expected;
  };

  const expectSameOverRest = async (path: string, token = caller): Promise<Exchange> => {
    const get = (app: Express) => exchange(request(app).get(path).set('Authorization', token.authorization));
    const expected = await get(referenceApp);
    for (let use = 1; use <= 3; use++) expect({ use, ...(await get(compiledApp)) }, path).toEqual({ use, ...expected });
    return expected;
  };

  describe('keeps the order of response keys graphql-js gives', () => {
    it('when a field is first selected under a condition that is false, and again without one', async () => {
      const result = await expectSameOverGraphQL({
        query: 'query ($a: Boolean!) { products(limit: 1) { id @include(if: $a) name id } }',
        variables: { a: false },
      });
      expect(result.body).toMatch(/^\{"data":\{"products":\[\{"name":"[^"]*","id":\d+\}\]\}\}$/);
    });

    it('when a fragment that is skipped selects a field the selection repeats later', async () => {
      await expectSameOverGraphQL({
        query: 'query ($s: Boolean!) { ... on Query @skip(if: $s) { orders { id } } products(limit: 2) { id } orders { memo id } }',
        variables: { s: true },
      });
      await expectSameOverGraphQL({
        query: 'query ($s: Boolean!) { products(limit: 2) { ...card @skip(if: $s) __typename name } } fragment card on Product { name seller { name } }',
        variables: { s: true },
      });
    });
  });

  describe('selects what graphql-js selects', () => {
    it('when a fragment is spread twice, first under a condition that is false', async () => {
      const result = await expectSameOverGraphQL({
        query: 'query ($s: Boolean!) { products(limit: 1) { ...card @skip(if: $s) ...card } } fragment card on Product { id }',
        variables: { s: true },
      });
      expect(result.body).toMatch(/^\{"data":\{"products":\[\{"id":\d+\}\]\}\}$/);
    });

    it('when a field is selected twice, first under a condition that is false, with different subfields', async () => {
      await expectSameOverGraphQL({
        query: 'query ($s: Boolean!) { products(limit: 2) { seller @skip(if: $s) { id rating } seller { name id } } }',
        variables: { s: true },
      });
    });
  });

  describe('answers a null @include or @skip condition as graphql-js does', () => {
    it('a nullable Boolean with a default, sent as null', async () => {
      const result = await expectSameOverGraphQL({ query: 'query ($a: Boolean = true) { products(limit: 1) { id name @include(if: $a) } }', variables: { a: null } });
      expect(JSON.parse(result.body).errors?.[0]?.extensions?.code).toBeDefined();
      await expectSameOverGraphQL({ query: 'query ($a: Boolean = false) { products(limit: 1) { id name @skip(if: $a) } }', variables: { a: null } });
    });

    it('on a root field', async () => {
      const result = await expectSameOverGraphQL({ query: 'query ($a: Boolean = true) { products(limit: 1) { id } orders @include(if: $a) { id } }', variables: { a: null } });
      expect(JSON.parse(result.body)).toMatchObject({ data: null, errors: [{ message: expect.stringMatching(/"if"/) }] });
    });
  });

  describe('answers variables, absent, null, defaulted and mistyped, as graphql-js does', () => {
    const cases: [string, GraphQLCase][] = [
      ['an absent variable for an argument with a default', { query: 'query ($l: Int) { products(limit: $l) { id } }', variables: {} }],
      ['a null variable for an argument with a default', { query: 'query ($l: Int) { products(limit: $l) { id } }', variables: { l: null } }],
      ['a null literal for an argument with a default', { query: '{ products(limit: null, offset: null) { id } }' }],
      ['an absent variable with a default', { query: 'query ($l: Int = 2) { products(limit: $l) { id } }' }],
      ['a null variable with a default', { query: 'query ($l: Int = 2) { products(limit: $l) { id } }', variables: { l: null } }],
      ['a null variable for a non-null argument', { query: 'query ($id: Int = 1) { product(id: $id) { id } }', variables: { id: null } }],
      ['an Int variable sent as a string', { query: 'query ($l: Int) { products(limit: $l) { id } }', variables: { l: '2' } }],
      ['an Int variable sent as a fraction', { query: 'query ($l: Int) { products(limit: $l) { id } }', variables: { l: 1.5 } }],
      ['an Int variable past 32 bits', { query: 'query ($l: Int) { products(limit: $l) { id } }', variables: { l: 2 ** 31 } }],
      ['a huge number', { query: 'query ($l: Int) { products(limit: $l) { id } }', variables: { l: 1e300 } }],
      ['a String variable sent as a number', { query: 'query ($f: String) { products(filter: $f) { id } }', variables: { f: 5 } }],
      ['a String variable sent as an object', { query: 'query ($f: String) { products(filter: $f) { id } }', variables: { f: { a: 1 } } }],
      ['a Boolean sent as a string', { query: 'query ($a: Boolean!) { products { id @include(if: $a) } }', variables: { a: 'true' } }],
      ['a list variable given one value', { query: 'query ($l: [Int!]) { products(limit: 1) { id } }', variables: { l: 3 } }],
      ['variables that were never declared', { query: '{ products(limit: 1) { id } }', variables: { extra: 1 } }],
      ['a variable named like an inherited property', { query: 'query ($valueOf: Int) { products(limit: $valueOf) { id } }', variables: { valueOf: 1 } }],
    ];
    for (const [name, graphqlCase] of cases) it(name, async () => void (await expectSameOverGraphQL(graphqlCase)));

    it('variables sent as __proto__ keys', async () => {
      await expectSameOverGraphQL({ query: 'query ($l: Int) { products(limit: $l) { id } }' }, caller, '{"__proto__":{"l":1}}');
      await expectSameOverGraphQL({ query: 'query ($l: Int) { products(limit: $l) { id } }' }, caller, '{"__proto__":{"l":1},"l":2}');
    });
  });

  describe('answers errors as graphql-js does', () => {
    it('an order that does not exist or is someone else’s', async () => {
      for (const id of [999_999, () => strangersOrderId] as const) {
        const value = typeof id === 'function' ? id() : id;
        await expectSameOverGraphQL({ query: 'query ($id: Int!) { order(id: $id) { id memo } products(limit: 1) { id } }', variables: { id: value } });
      }
    });

    it('a token without the scope a field needs', async () => {
      await expectSameOverGraphQL({ query: '{ products(limit: 1) { id } orders { id } }' }, catalogueOnly);
      await expectSameOverGraphQL({ query: '{ products(limit: 1) { id } }' }, catalogueOnly);
    });

    it('a token whose user was deleted after it was issued', async () => {
      const { runtime } = context();
      const doomed = await issueTestToken(runtime);
      const query = { query: '{ orders { id } products(limit: 1) { id } }' };
      await expectSameOverGraphQL(query, doomed);
      await runtime.db.delete(users).where(eq(users.id, doomed.userId));
      await expectSameOverGraphQL(query, doomed);
    });
  });

  describe('over GET /graphql', () => {
    it('answers with the same headers and bytes', async () => {
      const query = encodeURIComponent('query ($a: Boolean!) { products(limit: 2) { id name seller @include(if: $a) { name } } }');
      for (const path of [`/graphql?query=${query}&variables=${encodeURIComponent('{"a":true}')}`, `/graphql?query=${query}&variables=${encodeURIComponent('{"a":null}')}`]) {
        const get = (app: Express) => exchange(request(app).get(path).set('Authorization', caller.authorization).set('Accept', 'application/json'));
        const expected = await get(referenceApp);
        for (let use = 1; use <= 3; use++) expect({ use, ...(await get(compiledApp)) }, path).toEqual({ use, ...expected });
      }
    });
  });

  describe('over REST, which executes through the same schema', () => {
    it('answers reads and field masks as graphql-js does', async () => {
      const paths = [
        `/products/${products[0]!.id}`,
        `/products/${products[0]!.id}?fields=id,name,seller.name,reviews.rating`,
        `/products/${products[2]!.id}?fields=name,seller`,
        '/products?fields=id,name,reviews(rating)&page_size=2',
        '/products?order_by=priceCents%20desc,name&fields=name,priceCents',
        '/products?filter=priceCents%20%3C%201000&fields=name',
        `/orders/${orderId}`,
        `/orders/${orderId}?fields=memo,items.product.name`,
        '/orders?fields=id,status,items(quantity)',
        `/orders/${strangersOrderId}`,
        '/products/999999',
      ];
      for (const path of paths) await expectSameOverRest(path);
      await expectSameOverRest('/orders', catalogueOnly);
    });
  });

  describe('never lets a document steer the code graphql-jit writes', () => {
    const hostile = ['"', '\\', '\\"', '${globalThis.FIELDGATE_DIFF_PWNED=1}', '*/ globalThis.FIELDGATE_DIFF_PWNED=1 /*', '\u2028', '\u2029', '`', "'", '</script>', '\0'];

    it('keeps hostile strings in arguments strings', async () => {
      for (const text of hostile) {
        await expectSameOverGraphQL({ query: `{ products(filter: ${JSON.stringify(`name = ${JSON.stringify(text)}`)}) { id } }` });
        await expectSameOverGraphQL({ query: `{ products(orderBy: ${JSON.stringify(text)}) { id } }` });
        await expectSameOverGraphQL({ query: `query ($f: String) { products(filter: $f) { id } }`, variables: { f: `name = ${JSON.stringify(text)}` } });
        await expectSameOverGraphQL({ query: `query { products(filter: """name = "${text.replaceAll('"', '\\"')}" """) { id } }` });
      }
      expect((globalThis as { FIELDGATE_DIFF_PWNED?: unknown }).FIELDGATE_DIFF_PWNED).toBeUndefined();
    });

    it('answers aliases named like object properties', async () => {
      for (const alias of ['constructor', 'toString', 'hasOwnProperty', 'valueOf', 'then', 'length', 'prototype', 'caller', 'arguments', 'eval', 'undefined', 'null', 'this', 'idx', 'idx0a', 'parent', 'args', 'context']) {
        await expectSameOverGraphQL({ query: `{ ${alias}: products(limit: 1) { ${alias}: name id seller { ${alias}: id } } }` });
      }
      await expectSameOverGraphQL({ query: '{ __proto__: products(limit: 1) { id } }' });
      await expectSameOverGraphQL({ query: '{ products(limit: 1) { __proto__: id } }' });
    });

    it('answers one field under several aliases with different arguments', async () => {
      await expectSameOverGraphQL({
        query: `query ($a: Int!, $b: Int!) { a: product(id: $a) { id name r: reviews(limit: 1) { rating } s: reviews(orderBy: "rating desc") { rating } } b: product(id: $b) { id } c: products(limit: 2, offset: 1) { id } d: products(limit: 1) { id } }`,
        variables: { a: products[0]!.id, b: products[3]!.id },
      });
    });

    it('answers introspection as graphql-js does', async () => {
      await expectSameOverGraphQL({ query: '{ __typename __schema { queryType { name } mutationType { name } types { name kind } } }' });
      await expectSameOverGraphQL({ query: 'query ($n: String!) { __type(name: $n) { name kind fields(includeDeprecated: true) { name args { name defaultValue type { name kind ofType { name } } } } } }', variables: { n: 'Product' } });
      await expectSameOverGraphQL({ query: 'query ($n: String!) { __type(name: $n) { name } }', variables: { n: 'Nope' } });
    });

    it('answers deep nesting as graphql-js does', async () => {
      await expectSameOverGraphQL({ query: '{ orders { items { product { seller { name } reviews { rating } shippingPolicy { regions } } } } }' });
      await expectSameOverGraphQL({ query: `{ products(limit: 1) { ${'... on Product { '.repeat(30)} id ${'} '.repeat(30)} } }` });
    });

    it('answers huge literals as graphql-js does', async () => {
      for (const literal of ['99999999999999999999', '-0', '2147483648', '1e3', '0.5']) await expectSameOverGraphQL({ query: `{ products(limit: ${literal}) { id } }` });
    });
  });

  describe('random queries over the whole schema', () => {
    it('answer what graphql-js answers, on each use', async () => {
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 1, max: 2 ** 31 - 1 }), async (seed) => {
          const generated = generateQuery(seed, { productIds: products.map((product) => product.id), orderId: () => orderId, strangersOrderId: () => strangersOrderId });
          await expectSameOverGraphQL(generated);
        }),
        { seed: Number(process.env.DIFFERENTIAL_SEED ?? 20261125), numRuns: Number(process.env.DIFFERENTIAL_RUNS ?? 120), endOnFailure: true },
      );
    });
  });

  describe('random queries run in-process', () => {
    it('answer what graphql-js answers, most of them compiled', async () => {
      const { runtime } = context();
      const pageTokens = new PageTokens('compiled-differential-key');
      const make = (compiledQueries: false | { compileAfterUses: number }) =>
        new Executor({ schema, db: runtime.db, logger: runtime.logger, limits: DEFAULT_LIMITS, pageTokens, compiledQueries });
      const compiled = make({ compileAfterUses: 0 });
      const reference = make(false);
      let answered = 0;
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 1, max: 2 ** 31 - 1 }), async (seed) => {
          const { query, variables } = generateQuery(seed, { productIds: products.map((product) => product.id), orderId: () => orderId, strangersOrderId: () => strangersOrderId });
          const expected = JSON.stringify(await reference.run({ principal: caller.principal, source: query, variables }));
          for (let use = 1; use <= 2; use++) expect(JSON.stringify(await compiled.run({ principal: caller.principal, source: query, variables })), query).toBe(expected);
          if (!expected.includes('"errors"')) answered++;
        }),
        { seed: Number(process.env.DIFFERENTIAL_SEED ?? 20261125) + 1, numRuns: Number(process.env.DIFFERENTIAL_RUNS ?? 120), endOnFailure: true },
      );
      // The comparison means something only if many queries ran compiled, not all on graphql-js.
      const compiledCount = compiled.compiled!.stats.compiled;
      expect(compiledCount).toBeGreaterThan(answered / 4);
    });
  });

  describe('the compiled-query cache', () => {
    it('stays bounded under many distinct documents each used twice', async () => {
      const { runtime } = context();
      const executor = new Executor({ schema, db: runtime.db, logger: runtime.logger, limits: DEFAULT_LIMITS, compiledQueries: { max: 16 } });
      for (let i = 0; i < 64; i++) {
        const document: DocumentNode = parse(`{ products(limit: 1, offset: ${i}) { id } }`);
        for (let use = 0; use < 2; use++) await executor.run({ principal: caller.principal, document });
      }
      expect(executor.compiled?.stats.compiled).toBe(64);
      expect(executor.compiled?.size).toBe(16);
    });
  });
});

interface GeneratorData {
  productIds: number[];
  orderId: () => number;
  strangersOrderId: () => number;
}

/** A seeded random query over the schema (mulberry32), with the variables it declares. */
function generateQuery(seed: number, data: GeneratorData): GraphQLCase {
  let state = seed >>> 0;
  const random = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const chance = (p: number) => random() < p;
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const variableDefinitions: string[] = [];
  const variables: Record<string, unknown> = {};
  const fragments: string[] = [];
  let names = 0;
  let aliases = 0;
  /** A unique alias for a field with arguments, so two never conflict. */
  const used = new Set<string>();
  const withArguments = (field: string, args: string) => {
    if (!args) return key(field);
    if (!used.has(field)) return used.add(field), `${field}${args}`;
    return `w${aliases++}: ${field}${args}`;
  };

  /** An argument value: a literal, or a variable declared with its type, default and value. */
  const value = (type: 'Int' | 'String' | 'Int!' | 'String!', literals: string[], values: unknown[]): string => {
    if (chance(0.5)) return pick(literals);
    const name = `v${names++}`;
    const nullable = type.replace('!', '');
    const declared = chance(0.3) ? `${nullable} = ${pick(literals)}` : chance(0.5) && type === nullable ? nullable : `${nullable}!`;
    variableDefinitions.push(`$${name}: ${declared}`);
    const roll = random();
    if (roll < 0.7) variables[name] = pick(values);
    else if (roll < 0.8) variables[name] = null;
    else if (roll < 0.85) variables[name] = nullable === 'Int' ? pick(['3', 1.5, true, 2 ** 40]) : pick([7, false, ['a']]);
    return `$${name}`;
  };
  let directives = 0;
  const condition = (): string => {
    if (directives >= 8 || !chance(0.2)) return '';
    directives++;
    const directive = pick(['include', 'skip']);
    if (chance(0.3)) return ` @${directive}(if: ${pick(['true', 'false'])})`;
    const name = `v${names++}`;
    const declared = chance(0.7) ? 'Boolean!' : `Boolean = ${pick(['true', 'false'])}`;
    variableDefinitions.push(`$${name}: ${declared}`);
    const roll = random();
    if (roll < 0.85) variables[name] = chance(0.5);
    else if (roll < 0.95 && declared !== 'Boolean!') variables[name] = null;
    else if (declared === 'Boolean!') variables[name] = roll < 0.98;
    return ` @${directive}(if: $${name})`;
  };
  const aliasNames = ['a', 'b', 'first', 'constructor', 'toString', 'valueOf', 'then', 'hasOwnProperty', 'length', 'idx', 'x1'];
  const key = (field: string) => (chance(0.2) ? `${pick(aliasNames)}: ${field}` : field);

  const ints = (...values: number[]) => values.map(String);
  const filters = ['"priceCents < 1000"', '"name = \\"Anchor\\""', '"seller.name = \\"Quay \\\\\\"Ltd\\\\\\"\\""', '"name = "', '"rating > 2"', '"priceCents >= 400 AND priceCents <= 2500"'];
  const productOrders = ['"name"', '"priceCents desc, name"', '"id desc"', '"password"', '""'];
  const reviewOrders = ['"rating desc"', '"createdAt"', '"id"', '"body"'];

  /** A field as its head (alias, name, arguments) and its selection set, directives going between. */
  type FieldMaker = () => [head: string, selectionSet?: string];
  const selection = (fields: FieldMaker[], depth: number, typeName: string): string => {
    const parts: string[] = [];
    const count = 1 + Math.floor(random() * (depth > 1 ? 3 : 4));
    for (let i = 0; i < count; i++) {
      const roll = random();
      if (roll < 0.12) parts.push(`... on ${typeName}${condition()} { ${selection(fields, depth + 1, typeName)} }`);
      else if (roll < 0.2 && depth < 3) {
        const name = `F${names++}`;
        fragments.push(`fragment ${name} on ${typeName} { ${selection(fields, depth + 1, typeName)} }`);
        parts.push(`...${name}${condition()}`);
      } else if (roll < 0.25) parts.push(`__typename${condition()}`);
      else {
        const [head, selectionSet] = pick(fields)();
        parts.push(`${head}${condition()}${selectionSet ? ` { ${selectionSet} }` : ''}`);
      }
    }
    return parts.join(' ');
  };
  const leaf = (name: string): FieldMaker => () => [key(name)];
  const seller: FieldMaker = () => [key('seller'), selection(['id', 'name', 'rating'].map(leaf), 2, 'Seller')];
  const shippingPolicy: FieldMaker = () => [key('shippingPolicy'), selection(['id', 'name', 'minDays', 'maxDays', 'feeCents', 'regions'].map(leaf), 2, 'ShippingPolicy')];
  const reviews: FieldMaker = () => {
    const args: string[] = [];
    if (chance(0.5)) args.push(`limit: ${value('Int', ints(1, 2, 50), [1, 2, 0, 51])}`);
    if (chance(0.4)) args.push(`orderBy: ${value('String', reviewOrders, ['rating desc', 'nope'])}`);
    return [withArguments('reviews', args.length ? `(${args.join(', ')})` : ''), selection(['id', 'author', 'rating', 'body', 'createdAt'].map(leaf), 2, 'Review')];
  };
  const productFields = [...['id', 'name', 'description', 'priceCents', 'currency', 'createdAt', 'updatedAt'].map(leaf), seller, shippingPolicy, reviews];
  const product = (depth: number) => selection(productFields, depth, 'Product');
  const itemFields = [...['productId', 'quantity', 'unitPriceCents'].map(leaf), (): ReturnType<FieldMaker> => [key('product'), product(3)]];
  const items: FieldMaker = () => {
    const args = chance(0.4) ? `(limit: ${value('Int', ints(1, 100), [1, 0, 101])})` : '';
    return [withArguments('items', args), selection(itemFields, 2, 'OrderItem')];
  };
  const orderFields = [...['id', 'status', 'memo', 'totalCents', 'createdAt', 'updatedAt', 'etag'].map(leaf), items];
  const order = (depth: number) => selection(orderFields, depth, 'Order');
  const listArgs = (orders: string[]) => {
    const args: string[] = [];
    if (chance(0.5)) args.push(`limit: ${value('Int', ints(1, 2, 200), [1, 3, 0, 201])}`);
    if (chance(0.3)) args.push(`offset: ${value('Int', ints(0, 1, 5), [0, 2, -1])}`);
    if (chance(0.3)) args.push(`orderBy: ${value('String', orders, ['name desc', 'nope'])}`);
    if (chance(0.3)) args.push(`filter: ${value('String', filters, ['priceCents > 500', 'id = '])}`);
    return args.length ? `(${args.join(', ')})` : '';
  };
  const connectionArgs = (orders: string[]) => {
    const args: string[] = [];
    if (chance(0.5)) args.push(`first: ${value('Int', ints(0, 1, 2, 300), [1, 2, -1])}`);
    if (chance(0.2)) args.push(`after: ${value('String', ['"garbage"', '""'], ['garbage'])}`);
    if (chance(0.3)) args.push(`orderBy: ${value('String', orders, ['priceCents desc'])}`);
    return args.length ? `(${args.join(', ')})` : '';
  };
  const connection = (node: () => string, typeName: string) =>
    selection(
      [
        (): ReturnType<FieldMaker> => [key('edges'), `${key('cursor')} ${key('node')} { ${node()} }`],
        (): ReturnType<FieldMaker> => [key('nodes'), node()],
        (): ReturnType<FieldMaker> => [key('pageInfo'), selection(['hasNextPage', 'hasPreviousPage', 'startCursor', 'endCursor'].map(leaf), 2, 'PageInfo')],
      ],
      1,
      typeName,
    );
  const idValue = (ids: number[]) => value('Int!', ids.map(String), ids);
  const rootFields: FieldMaker[] = [
    () => [withArguments('products', listArgs(productOrders)), product(1)],
    () => [withArguments('product', `(id: ${idValue([...data.productIds, 999_999])})`), product(1)],
    () => [withArguments('productsConnection', connectionArgs(productOrders)), connection(() => product(2), 'ProductConnection')],
    () => [withArguments('orders', listArgs(['"createdAt desc"', '"id"', '"status"'])), order(1)],
    () => [withArguments('order', `(id: ${idValue([data.orderId(), data.strangersOrderId(), 999_999])})`), order(1)],
    () => [withArguments('ordersConnection', connectionArgs(['"id"', '"createdAt desc"'])), connection(() => order(2), 'OrderConnection')],
    () => ['__typename'],
    () => [withArguments('__type', `(name: ${value('String!', ['"Product"', '"Order"', '"Nope"'], ['Seller', 'Nope'])})`), 'name kind fields { name }'],
  ];
  const body = selection(rootFields, 0, 'Query');
  const header = variableDefinitions.length ? `query Q(${variableDefinitions.join(', ')})` : chance(0.5) ? 'query Q' : '';
  return { query: [`${header} { ${body} }`, ...fragments].join('\n'), variables: Object.keys(variables).length || chance(0.5) ? variables : undefined };
}
