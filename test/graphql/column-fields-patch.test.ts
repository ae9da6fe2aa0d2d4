/**
 * patches/@pothos+plugin-drizzle+0.20.0.patch, column fields: a field that reads only columns and
 * resolves to a scalar or enum (every `t.exposeX`, or `select: { columns }` with a resolver of its
 * own) answers from the row when the row holds each of its columns, without asking the selection
 * mapper for the field's mapping (which walks the response path). A row without one of them — one
 * a resolver loaded by itself, with other columns — still goes through the mapping and the model
 * loader, as the unpatched plugin does for every field. These tests hold both halves on graphql-js;
 * test/graphql/performance/compiled-queries.test.ts counts the path links a compiled query builds.
 *
 * An exposed column (`t.exposeX(name)`) also says on its resolver which row property it returns, and
 * graphql-jit (patches/graphql-jit+0.8.9.patch) compiles such a field as a read of that property:
 * the resolver runs only for a row without it. The last tests hold that on compiled queries.
 */
import SchemaBuilder, { BasePlugin, type SchemaTypes } from '@pothos/core';
import DrizzlePlugin from '@pothos/plugin-drizzle';
import { getTableConfig } from 'drizzle-orm/pg-core';
import { execute, isObjectType, parse, type GraphQLFieldResolver, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { Db } from '../../src/db/database.js';
import { CompiledQueries } from '../../src/graphql/performance/compiled-queries.js';
import { relations } from '../../src/db/relations.js';
import { describeEachDatabase } from '../support/runtime.js';
import { buildProduct } from '../support/factories.js';
import { captureSql } from '../support/sql.js';

/** Where plugin-drizzle (patched) says which row property a resolver returns. */
const COLUMN_PROPERTY = Symbol.for('pothos-drizzle.columnProperty');

/** A plugin that wraps every resolver, as a tracing or authorization plugin would. */
class WrapEveryResolver<Types extends SchemaTypes> extends BasePlugin<Types> {
  override wrapResolve(resolver: GraphQLFieldResolver<unknown, Types['Context'], object>): GraphQLFieldResolver<unknown, Types['Context'], object> {
    return (parent, args, context, info) => resolver(parent, args, context, info);
  }
}
SchemaBuilder.registerPlugin('wrapEveryResolverForTest' as never, WrapEveryResolver as never);

function testSchema(plugins: string[] = [DrizzlePlugin]): GraphQLSchema {
  const builder = new SchemaBuilder<{ Context: { db: Db }; DrizzleRelations: typeof relations }>({
    plugins: plugins as never,
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

function columnPropertyOf(schema: GraphQLSchema, typeName: string, fieldName: string): unknown {
  const type = schema.getType(typeName);
  if (!isObjectType(type)) throw new Error(`${typeName} is not an object type`);
  const resolve = type.getFields()[fieldName]?.resolve as { [COLUMN_PROPERTY]?: unknown } | undefined;
  return resolve?.[COLUMN_PROPERTY];
}

describe('plugin-drizzle column fields (patched): the property an exposed column resolves to', () => {
  it('is said for every exposed column, and for no field that computes, loads or lists', () => {
    const schema = testSchema();
    expect(columnPropertyOf(schema, 'Product', 'id')).toBe('id');
    expect(columnPropertyOf(schema, 'Product', 'name')).toBe('name');
    expect(columnPropertyOf(schema, 'Product', 'description')).toBe('description');
    expect(columnPropertyOf(schema, 'Product', 'label')).toBeUndefined();
    expect(columnPropertyOf(schema, 'Query', 'product')).toBeUndefined();
  });

  it('is not said when another plugin wraps the resolver, inside plugin-drizzle or outside it', () => {
    // Reading the property would skip that plugin's work.
    for (const plugins of [
      [DrizzlePlugin, 'wrapEveryResolverForTest'],
      ['wrapEveryResolverForTest', DrizzlePlugin],
    ]) {
      const schema = testSchema(plugins);
      expect(columnPropertyOf(schema, 'Product', 'name'), plugins.join(', ')).toBeUndefined();
    }
  });
});

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

  describe('compiled by graphql-jit', () => {
    /** Runs `source` compiled on its first use, with `Product.name`'s resolver counted (its property still said). */
    const runCompiled = async (source: string) => {
      const compiledSchema = testSchema();
      const nameField = (compiledSchema.getType('Product') as import('graphql').GraphQLObjectType).getFields().name!;
      const original = nameField.resolve!;
      const resolveName = vi.fn(original);
      Object.assign(resolveName, { [COLUMN_PROPERTY]: (original as { [COLUMN_PROPERTY]?: string })[COLUMN_PROPERTY] });
      nameField.resolve = resolveName;
      const queries = new CompiledQueries(compiledSchema, context().runtime.logger, { compileAfterUses: 0 });
      const document = parse(source);
      let data: unknown;
      const statements = await captureSql(context().runtime, async () => {
        const result = await queries.run({
          document,
          operation: document.definitions[0] as OperationDefinitionNode,
          variables: { id: productId },
          context: () => ({ db: context().runtime.db }),
        });
        expect(result?.errors).toBeUndefined();
        data = result?.data;
      });
      expect(queries.stats.compiled).toBe(1);
      return { data, statements, nameResolverCalls: resolveName.mock.calls.length };
    };

    it('reads exposed columns from a planned row, a null one included, without calling their resolvers', async () => {
      const { data, statements, nameResolverCalls } = await runCompiled('query ($id: Int!) { product(id: $id) { id name description label } }');
      expect(data).toEqual({ product: { id: productId, name: 'Lantern', description: null, label: 'Lantern (1250)' } });
      expect(statements).toHaveLength(1);
      expect(nameResolverCalls).toBe(0);
    });

    it('calls the resolver of a column the row lacks, which loads it through the model loader', async () => {
      const { data, statements, nameResolverCalls } = await runCompiled('query ($id: Int!) { productById(id: $id) { id name label } }');
      expect(data).toEqual({ productById: { id: productId, name: 'Lantern', label: 'Lantern (1250)' } });
      expect(nameResolverCalls).toBe(1);
      expect(statements.slice(1).join('\n')).toMatch(/"name"/);
    });

    it('keeps @skip and @include on a column read from the row', async () => {
      const { data } = await runCompiled(
        'query ($id: Int!, $yes: Boolean = true, $no: Boolean = false) { product(id: $id) { id name @include(if: $no) description @skip(if: $no) label @include(if: $yes) } }',
      );
      expect(data).toEqual({ product: { id: productId, description: null, label: 'Lantern (1250)' } });
    });
  });
});
