/**
 * patches/@pothos+plugin-drizzle+0.20.0.patch (with the `query(seed, info, context)` change in
 * patches/@pothos+selection-mapper+0.1.0.patch): a `drizzleField` keeps the plan of its selection
 * per parsed field node and the values of the variables used beneath it, instead of walking the
 * selection on every execution. These tests build a small schema on the installed plugin and
 * count the calls of a relation's `query` callback, which runs once per walk; they fail on the
 * unpatched plugin, which walks every time. A kept plan played behind a seed of plain data builds
 * its query once: every execution gets the same frozen query, and its own mappings.
 * docs/PERFORMANCE.md says when the patch can go.
 */
import SchemaBuilder from '@pothos/core';
import DrizzlePlugin from '@pothos/plugin-drizzle';
import { getTableConfig } from 'drizzle-orm/pg-core';
import { execute, parse, type DocumentNode, type GraphQLSchema } from 'graphql';
import { beforeAll, expect, it } from 'vitest';
import type { Db } from '../../src/db/database.js';
import { relations } from '../../src/db/relations.js';
import { describeEachDatabase } from '../support/runtime.js';
import { buildProduct, buildReview } from '../support/factories.js';
import { captureSql } from '../support/sql.js';

interface Context {
  db: Db;
  /** Read by the context-dependent field only. */
  reviewLimit: number;
}

const calls = { reviews: 0, reviewsByContext: 0 };
/** The queries the `seeded` field's resolver was handed, in order. */
const seen: object[] = [];

function testSchema(): GraphQLSchema {
  const builder = new SchemaBuilder<{ Context: Context; DrizzleRelations: typeof relations }>({
    plugins: [DrizzlePlugin],
    drizzle: { client: (context) => context.db, getTableConfig, relations },
  });
  builder.drizzleObject('reviews', {
    name: 'Review',
    select: {},
    fields: (t) => ({ id: t.exposeInt('id'), rating: t.exposeInt('rating') }),
  });
  builder.drizzleObject('products', {
    name: 'Product',
    select: {},
    fields: (t) => ({
      id: t.exposeInt('id'),
      name: t.exposeString('name'),
      reviews: t.relation('reviews', {
        args: { limit: t.arg.int({ defaultValue: 10 }) },
        query: (args) => {
          calls.reviews++;
          return { orderBy: { id: 'asc' }, limit: args.limit ?? 10 };
        },
      }),
      reviewsByContext: t.relation('reviews', {
        query: (_args, context) => {
          calls.reviewsByContext++;
          return { orderBy: { id: 'asc' }, limit: context.reviewLimit };
        },
      }),
    }),
  });
  builder.queryType({
    fields: (t) => ({
      // Its resolver's seed: an order as plain data, or (`newest`) as a function.
      seeded: t.drizzleField({
        type: 'products',
        nullable: true,
        args: { id: t.arg.int({ required: true }), newest: t.arg.boolean(), limit: t.arg.int() },
        resolve: (query, _root, args, context) => {
          const config = query(
            args.newest
              ? ({ orderBy: (products: { id: unknown }, { desc }: { desc: (column: unknown) => unknown }) => desc(products.id) } as never)
              : { orderBy: { id: 'asc' }, ...(args.limit != null && { limit: args.limit }) },
          );
          seen.push(config);
          return context.db.query.products.findFirst({ ...config, where: { id: args.id } });
        },
      }),
      product: t.drizzleField({
        type: 'products',
        nullable: true,
        args: { id: t.arg.int({ required: true }) },
        resolve: (query, _root, args, context) => context.db.query.products.findFirst(query({ where: { id: args.id } })),
      }),
    }),
  });
  return builder.toSchema();
}

describeEachDatabase('plugin-drizzle plans kept across executions (patched)', (context) => {
  let schema: GraphQLSchema;
  let productId: number;
  let reviewIds: number[];

  beforeAll(async () => {
    const { runtime } = context();
    schema = testSchema();
    const product = await buildProduct(runtime, { name: 'Kept' });
    productId = product.id;
    reviewIds = [];
    for (let i = 0; i < 5; i++) reviewIds.push((await buildReview(runtime, { productId: product.id, rating: (i % 5) + 1 })).id);
  });

  const run = async (document: DocumentNode, variables: Record<string, unknown> = {}, reviewLimit = 10) => {
    const result = await execute({ schema, document, variableValues: { id: productId, ...variables }, contextValue: { db: context().runtime.db, reviewLimit } });
    expect(result.errors).toBeUndefined();
    return result.data as { product: { reviews?: { id: number }[]; reviewsByContext?: { id: number }[] } };
  };

  it('walks a parsed document once, and each execution still loads its relations in one statement', async () => {
    const document = parse('query ($id: Int!) { product(id: $id) { id name reviews { id rating } } }');
    const before = calls.reviews;
    const { runtime } = context();
    for (let i = 0; i < 3; i++) {
      let data: Awaited<ReturnType<typeof run>> | undefined;
      const sql = await captureSql(runtime, async () => {
        data = await run(document);
      });
      expect(sql).toHaveLength(1);
      expect(data!.product.reviews!.map((review) => review.id)).toEqual(reviewIds);
    }
    expect(calls.reviews - before).toBe(1);
    // The same text parsed again is another document: planned once more.
    await run(parse('query ($id: Int!) { product(id: $id) { id name reviews { id rating } } }'));
    expect(calls.reviews - before).toBe(2);
  });

  it('keeps a plan per value of the variables used beneath the field, not of its own arguments', async () => {
    const document = parse('query ($id: Int!, $n: Int) { product(id: $id) { reviews(limit: $n) { id } } }');
    const before = calls.reviews;
    expect((await run(document, { n: 2 })).product.reviews!.map((review) => review.id)).toEqual(reviewIds.slice(0, 2));
    expect((await run(document, { n: 3 })).product.reviews!.map((review) => review.id)).toEqual(reviewIds.slice(0, 3));
    // Absent is not null: the argument's default applies.
    expect((await run(document, {})).product.reviews!.map((review) => review.id)).toEqual(reviewIds);
    expect((await run(document, { n: 2 })).product.reviews!.map((review) => review.id)).toEqual(reviewIds.slice(0, 2));
    expect(calls.reviews - before).toBe(3);
    // Another product id (the field's own argument) reuses the plan.
    await run(document, { n: 2, id: productId + 1_000_000 });
    expect(calls.reviews - before).toBe(3);
  });

  it('never keeps a plan whose selection reads the context: each execution plans with its own', async () => {
    const document = parse('query ($id: Int!) { product(id: $id) { reviewsByContext { id } } }');
    const before = calls.reviewsByContext;
    expect((await run(document, {}, 2)).product.reviewsByContext!.map((review) => review.id)).toEqual(reviewIds.slice(0, 2));
    expect((await run(document, {}, 4)).product.reviewsByContext!.map((review) => review.id)).toEqual(reviewIds.slice(0, 4));
    expect((await run(document, {}, 1)).product.reviewsByContext!.map((review) => review.id)).toEqual(reviewIds.slice(0, 1));
    expect(calls.reviewsByContext - before).toBe(3);
  });

  it('hands every execution of a kept plan the same frozen query for the same seed, and plays other seeds afresh', async () => {
    const document = parse('query ($id: Int!, $newest: Boolean, $limit: Int) { seeded(id: $id, newest: $newest, limit: $limit) { id reviews { id } } }');
    const { runtime } = context();
    seen.length = 0;
    for (let i = 0; i < 3; i++) {
      const sql = await captureSql(runtime, async () => {
        const data = (await execute({ schema, document, variableValues: { id: productId }, contextValue: { db: runtime.db, reviewLimit: 10 } })) as {
          data: { seeded: { reviews: { id: number }[] } };
        };
        expect(data.data.seeded.reviews.map((review) => review.id)).toEqual(reviewIds);
      });
      // The mappings still reach each execution: the reviews come with the product.
      expect(sql).toHaveLength(1);
    }
    const [first, ...rest] = seen as Array<{ with: { reviews: object } }>;
    for (const query of rest) expect(query).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    expect(Object.isFrozen(first!.with.reviews)).toBe(true);
    // Another seed is another query; a seed holding a function is never kept, so each execution gets its own.
    const other = async (variables: Record<string, unknown>) => {
      const result = await execute({ schema, document, variableValues: { id: productId, ...variables }, contextValue: { db: runtime.db, reviewLimit: 10 } });
      expect(result.errors).toBeUndefined();
      return seen.at(-1)!;
    };
    const limited = await other({ limit: 1 });
    expect(limited).not.toBe(first);
    expect(await other({ limit: 1 })).toBe(limited);
    const newest = await other({ newest: true });
    expect(await other({ newest: true })).not.toBe(newest);
    expect(Object.isFrozen(newest)).toBe(false);
  });

  it('records the mappings on each execution’s own context, however executions interleave', async () => {
    const document = parse('query ($id: Int!) { product(id: $id) { reviews { id } } }');
    await run(document);
    const { runtime } = context();
    let results: Awaited<ReturnType<typeof run>>[] = [];
    const sql = await captureSql(runtime, async () => {
      results = await Promise.all(Array.from({ length: 8 }, () => run(document)));
    });
    // One statement per execution: no row fell back to loading its reviews on its own.
    expect(sql).toHaveLength(8);
    for (const data of results) expect(data.product.reviews!.map((review) => review.id)).toEqual(reviewIds);
  });
});
