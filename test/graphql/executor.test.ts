import { beforeAll, describe, expect, it } from 'vitest';
import { parse, print } from 'graphql';
import { sql } from 'drizzle-orm';
import { describeEachDatabase } from '../support/runtime.js';
import { issueTestToken, type TestToken } from '../support/tokens.js';
import { buildProduct } from '../support/factories.js';
import { executeGraphQL, postGraphQL } from '../support/graphql.js';
import { Executor } from '../../src/graphql/executor.js';
import { DEFAULT_LIMITS } from '../../src/graphql/limits.js';
import { schema } from '../../src/graphql/schema/index.js';
import { createGraphQL } from '../../src/graphql/index.js';

describeEachDatabase('GraphQL executor', (context) => {
  let caller: TestToken;
  let executor: Executor;

  beforeAll(async () => {
    const { runtime } = context();
    caller = await issueTestToken(runtime);
    await buildProduct(runtime, { name: 'Hammock', reviews: 1 });
    executor = new Executor({ schema, db: runtime.db, logger: runtime.logger, limits: DEFAULT_LIMITS });
  });

  describe('document cache', () => {
    it('parses and validates the same text once', async () => {
      const before = { ...executor.stats };
      for (let i = 0; i < 3; i++) {
        const result = await executor.run({ principal: caller.principal, source: '{ products { name } }' });
        expect(result).toEqual({ data: { products: [{ name: 'Hammock' }] } });
      }
      expect(executor.stats).toEqual({ parsed: before.parsed + 1, validated: before.validated + 1 });
    });

    it('validates an AST once, found again by identity and, for a rebuilt AST, by its printed text', async () => {
      const query = 'query ($limit: Int) { products(limit: $limit) { id reviews { rating } } }';
      const before = { ...executor.stats };
      const document = parse(query);
      await executor.run({ principal: caller.principal, document, variables: { limit: 1 } });
      await executor.run({ principal: caller.principal, document, variables: { limit: 2 } });
      const rebuilt = parse(query);
      const result = await executor.run({ principal: caller.principal, document: rebuilt, variables: { limit: 1 } });
      expect(result.errors).toBeUndefined();
      expect(executor.stats).toEqual({ parsed: before.parsed, validated: before.validated + 1 });
      // The same shape sent as its printed text is found without even parsing it.
      await executor.run({ principal: caller.principal, source: print(document) });
      expect(executor.stats).toEqual({ parsed: before.parsed, validated: before.validated + 1 });
    });

    it('remembers invalid documents too', async () => {
      const before = { ...executor.stats };
      for (let i = 0; i < 2; i++) {
        const result = await executor.run({ principal: caller.principal, source: '{ products { nope } }' });
        expect(result.errors?.[0]?.extensions).toMatchObject({ code: 'INVALID_ARGUMENT', reason: 'GRAPHQL_VALIDATION_FAILED' });
        const syntax = await executor.run({ principal: caller.principal, source: '{ products { ' });
        expect(syntax.errors?.[0]?.extensions).toMatchObject({ code: 'INVALID_ARGUMENT', reason: 'GRAPHQL_PARSE_FAILED' });
      }
      expect(executor.stats).toEqual({ parsed: before.parsed + 2, validated: before.validated + 1 });
    });

    it('shares one cache between /graphql and execute()', async () => {
      // createGraphQL builds one Executor behind both faces; the HTTP face sees the in-process errors.
      const res = await postGraphQL(context().app, caller.token, 'query Missing { products { id } }', undefined, 'Other');
      expect(res.status).toBe(400);
      expect(res.body.errors![0]).toMatchObject({
        message: 'the document has no operation named "Other"',
        extensions: { code: 'INVALID_ARGUMENT', reason: 'OPERATION_RESOLUTION_FAILURE' },
      });
    });
  });

  describe('errors', () => {
    it('keeps the locations of syntax and validation errors', async () => {
      const res = await postGraphQL(context().app, caller.token, '{\n  products { nope }\n}');
      expect(res.status).toBe(400);
      expect(res.body.errors![0]).toMatchObject({ message: 'Cannot query field "nope" on type "Product".', locations: [{ line: 2, column: 14 }] });
    });

    it('answers variables that do not fit the operation with 400 BAD_USER_INPUT', async () => {
      const res = await postGraphQL(context().app, caller.token, 'query ($id: Int!) { product(id: $id) { id } }', { id: 'seven' });
      expect(res.status).toBe(400);
      expect(res.body.errors![0]!.extensions).toMatchObject({ code: 'INVALID_ARGUMENT', reason: 'BAD_USER_INPUT' });
    });

    it('picks the operation named by operationName', async () => {
      const result = await executor.run({
        principal: caller.principal,
        source: 'query A { products { name } } query B { __typename }',
        operationName: 'B',
      });
      expect(result).toEqual({ data: { __typename: 'Query' } });
      const ambiguous = await executor.run({ principal: caller.principal, source: 'query A { __typename } query B { __typename }' });
      expect(ambiguous.errors?.[0]?.extensions).toMatchObject({ reason: 'OPERATION_RESOLUTION_FAILURE' });
    });

    it('answers a null that a defaulted variable brings into a non-null argument as INVALID_ARGUMENT, in graphql-js’ words, and logs no error', async () => {
      // Validation lets `$id: Int = 1` stand where `Int!` is wanted; an explicit null fails at run time.
      const { app, logs } = context();
      const before = logs.records().filter((record) => (record.level as number) >= 50).length;
      for (let i = 0; i < 3; i++) {
        const res = await postGraphQL(app, caller.token, 'query ($id: Int = 1) { product(id: $id) { id } }', { id: null });
        expect(res.status).toBe(200);
        expect(res.body).toEqual({
          data: { product: null },
          errors: [{
            message: 'Argument "id" of non-null type "Int!" must not be null.',
            locations: [{ line: 1, column: 36 }],
            path: ['product'],
            extensions: { code: 'INVALID_ARGUMENT', reason: 'BAD_USER_INPUT' },
          }],
        });
      }
      const mutation = await postGraphQL(app, caller.token, 'mutation ($i: UpdateOrderInput = { memo: "z" }) { updateOrder(id: 1, input: $i) { id } }', { i: null });
      expect(mutation.body.errors?.[0]).toMatchObject({ message: 'Argument "input" of non-null type "UpdateOrderInput!" must not be null.', extensions: { code: 'INVALID_ARGUMENT' } });
      expect(logs.records().filter((record) => (record.level as number) >= 50)).toHaveLength(before);
    });

    it('answers a null @include or @skip condition on a root field as INVALID_ARGUMENT, in graphql-js’ words', async () => {
      // graphql-js refuses it while collecting the root fields, before any field runs: data is null.
      const res = await postGraphQL(context().app, caller.token, 'query ($a: Boolean = true) { products { id } orders @include(if: $a) { id } }', { a: null });
      expect(res.body).toEqual({
        data: null,
        errors: [{
          message: 'Argument "if" of non-null type "Boolean!" must not be null.',
          locations: [{ line: 1, column: 66 }],
          extensions: { code: 'INVALID_ARGUMENT', reason: 'BAD_USER_INPUT' },
        }],
      });
    });

    it('refuses a subscription, which this API does not have, as it refuses an unknown operation', async () => {
      for (const query of ['subscription { products { id } }', 'subscription S { __typename }']) {
        const res = await postGraphQL(context().app, caller.token, query);
        expect(res.status).toBe(400);
        expect(res.body.data).toBeUndefined();
        expect(res.body.errors![0]).toMatchObject({
          message: 'this API has no subscription operations: send a query or a mutation',
          extensions: { code: 'INVALID_ARGUMENT', reason: 'OPERATION_RESOLUTION_FAILURE' },
        });
      }
    });

    it('hands a string argument to its resolver as the string it is, never as code', async () => {
      // graphql-jit 0.8.9 turned this marker into `new Date(…)` in the code it compiles (docs/PERFORMANCE.md).
      const marker = '__MAGIC_DATE__33a9e76d_02e0_4128_8e92_3530ad3da74d';
      const filter = `${marker}0), pwned: (globalThis.fieldgateExecutorProbe = 1`;
      const result = await executor.run({ principal: caller.principal, source: `{ products(limit: 1, filter: ${JSON.stringify(filter)}) { id } }` });
      expect(result.data).toBeNull();
      expect(result.errors?.[0]?.extensions).toMatchObject({ code: 'INVALID_ARGUMENT', reason: 'INVALID_FILTER' });
      expect(result.errors?.[0]?.message).toMatch(/^filter: /);
      expect('fieldgateExecutorProbe' in globalThis).toBe(false);
    });
  });
});

// On its own database: it breaks the reviews table to make the resolvers fail.
describeEachDatabase('GraphQL error masking', (context) => {
  it('masks an unexpected error as INTERNAL_SERVER_ERROR, with no SQL or stack in the response, and logs it', async () => {
    const { runtime, app, logs } = context();
    const caller = await issueTestToken(runtime);
    const product = await buildProduct(runtime, { reviews: 1 });
    await runtime.db.execute(sql`alter table reviews rename column author to writer`);

    const res = await postGraphQL(app, caller.token, 'query ($id: Int!) { product(id: $id) { name reviews { author } } }', { id: product.id });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      data: { product: null },
      errors: [{ message: 'Unexpected error.', locations: [{ line: 1, column: 21 }], path: ['product'], extensions: { code: 'INTERNAL_SERVER_ERROR' } }],
    });
    expect(JSON.stringify(res.body)).not.toMatch(/select|author|writer|reviews"|at /i);

    const inProcess = await executeGraphQL(createGraphQL(runtime), caller.principal, '{ products { reviews { author } } }');
    expect(inProcess.data).toBeNull();
    expect(inProcess.errors?.map((error) => error.toJSON())).toEqual([
      { message: 'Unexpected error.', locations: [{ line: 1, column: 3 }], path: ['products'], extensions: { code: 'INTERNAL_SERVER_ERROR' } },
    ]);

    const logged = logs.records().filter((record) => record.msg === 'graphql resolver failed');
    expect(logged.length).toBeGreaterThanOrEqual(2);
    expect(JSON.stringify(logged[0]!.err)).toMatch(/author/);
  });
});
