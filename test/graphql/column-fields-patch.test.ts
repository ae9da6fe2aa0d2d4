/**
 * patches/@pothos+plugin-drizzle+0.20.0.patch, column fields: a field that reads only columns and
 * resolves to a scalar or enum (every `t.exposeX`, or `select: { columns }` with a resolver of its
 * own) answers from the row when the row holds each of its columns, without asking the selection
 * mapper for the field's mapping (which walks the response path). A row without one of them — one
 * a resolver loaded by itself, with other columns — still goes through the mapping and the model
 * loader, as the unpatched plugin does for every field. These tests hold both halves on graphql-js;
 * test/graphql/performance/compiled-queries.test.ts counts the path links a compiled query builds.
 */
import SchemaBuilder from '@pothos/core';
import DrizzlePlugin from '@pothos/plugin-drizzle';
import { getTableConfig } from 'drizzle-orm/pg-core';
import { execute, parse, type GraphQLSchema } from 'graphql';
import { beforeAll, expect, it } from 'vitest';
import type { Db } from '../../src/db/database.js';
import { relations } from '../../src/db/relations.js';
import { describeEachDatabase } from '../support/runtime.js';
import { buildProduct } from '../support/factories.js';
import { captureSql } from '../support/sql.js';

function testSchema(): GraphQLSchema {
  const builder = new SchemaBuilder<{ Context: { db: Db }; DrizzleRelations: typeof relations }>({
    plugins: [DrizzlePlugin],
    drizzle: { client: (context) => context.db, getTableConfig, relations },
  });
  builder.drizzleObject('products', {
    name: 'Product',
    select: {},
    fields: (t) => ({
      id: t.exposeInt('id'),
      name: t.exposeString('name'),
      description: t.exposeString('description', { nullable: true }),
      label: t.string({
        select: { columns: { name: true, priceCents: true } },
        resolve: (product) => `${product.name} (${product.priceCents})`,
      }),
    }),
  });
  builder.queryType({
    fields: (t) => ({
      // Loaded by the plan: the row holds every column the selection reads.
      product: t.drizzleField({
        type: 'products',
        nullable: true,
        args: { id: t.arg.int({ required: true }) },
        resolve: (query, _root, args, context) => context.db.query.products.findFirst(query({ where: { id: args.id } })),
      }),
      // Loaded by the resolver itself, with its id only: the plan never ran for this row.
      productById: t.drizzleField({
        type: 'products',
        nullable: true,
        args: { id: t.arg.int({ required: true }) },
        // Typed as a whole row, which it is not: the point of the field.
        resolve: async (_query, _root, args, context) => (await context.db.query.products.findFirst({ columns: { id: true }, where: { id: args.id } })) as never,
      }),
    }),
  });
  return builder.toSchema();
}

describeEachDatabase('plugin-drizzle column fields (patched)', (context) => {
  let schema: GraphQLSchema;
  let productId: number;

  beforeAll(async () => {
    schema = testSchema();
    productId = (await buildProduct(context().runtime, { name: 'Lantern', priceCents: 1250, description: null })).id;
  });

  const run = async (source: string) => {
    let data: unknown;
    const statements = await captureSql(context().runtime, async () => {
      const result = await execute({ schema, document: parse(source), variableValues: { id: productId }, contextValue: { db: context().runtime.db } });
      expect(result.errors).toBeUndefined();
      data = result.data;
    });
    return { data, statements };
  };

  it('answers column fields from a planned row, a null column included, in one statement', async () => {
    const { data, statements } = await run('query ($id: Int!) { product(id: $id) { id name description label } }');
    expect(data).toEqual({ product: { id: productId, name: 'Lantern', description: null, label: 'Lantern (1250)' } });
    expect(statements).toHaveLength(1);
  });

  it('loads the columns a row loaded without them lacks, through the model loader', async () => {
    const { data, statements } = await run('query ($id: Int!) { productById(id: $id) { id name label } }');
    expect(data).toEqual({ productById: { id: productId, name: 'Lantern', label: 'Lantern (1250)' } });
    // The resolver's own read, then the loader's for what the row lacks.
    expect(statements.length).toBeGreaterThan(1);
    expect(statements.slice(1).join('\n')).toMatch(/"name"/);
  });

  it('never takes a column another field of the row was loaded with for one it lacks', async () => {
    // `id` is on the row, `description` is not: the null it would read as undefined is loaded, not assumed.
    const { data, statements } = await run('query ($id: Int!) { productById(id: $id) { id description } }');
    expect(data).toEqual({ productById: { id: productId, description: null } });
    expect(statements.slice(1).join('\n')).toMatch(/"description"/);
  });
});
