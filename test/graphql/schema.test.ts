import { describe, expect, it } from 'vitest';
import { printSchema, getNamedType, isObjectType, isEnumType, type GraphQLObjectType } from 'graphql';
import { schema } from '../../src/graphql/schema/index.js';

describe('schema', () => {
  it('matches the committed schema.graphql (run `npx vitest run -u test/graphql/schema.test.ts` after a deliberate change)', async () => {
    await expect(`${printSchema(schema)}\n`).toMatchFileSnapshot('../../schema.graphql');
  });

  it('has the field names and types the REST layer relies on', () => {
    const fields = (name: string) => {
      const type = schema.getType(name) as GraphQLObjectType;
      return Object.fromEntries(Object.values(type.getFields()).map((field) => [field.name, String(field.type)]));
    };
    expect(fields('Product')).toEqual({
      id: 'Int!',
      name: 'String!',
      description: 'String',
      priceCents: 'Int!',
      currency: 'String!',
      seller: 'Seller!',
      shippingPolicy: 'ShippingPolicy',
      reviews: '[Review!]!',
      createdAt: 'DateTime!',
      updatedAt: 'DateTime!',
    });
    expect(fields('Seller')).toEqual({ id: 'Int!', name: 'String!', rating: 'Float' });
    expect(fields('ShippingPolicy')).toEqual({
      id: 'Int!',
      name: 'String!',
      minDays: 'Int!',
      maxDays: 'Int!',
      feeCents: 'Int!',
      regions: '[String!]!',
    });
    expect(fields('Review')).toEqual({ id: 'Int!', author: 'String!', rating: 'Int!', body: 'String', createdAt: 'DateTime!' });
    expect(fields('Order')).toEqual({
      id: 'Int!',
      status: 'OrderStatus!',
      memo: 'String',
      items: '[OrderItem!]!',
      totalCents: 'Int!',
      createdAt: 'DateTime!',
      updatedAt: 'DateTime!',
      etag: 'String!',
    });
    expect(fields('OrderItem')).toEqual({ productId: 'Int!', product: 'Product!', quantity: 'Int!', unitPriceCents: 'Int!' });
    expect(fields('Query')).toEqual({
      products: '[Product!]!',
      productsConnection: 'ProductConnection!',
      product: 'Product',
      orders: '[Order!]!',
      ordersConnection: 'OrderConnection!',
      order: 'Order',
    });
    expect(fields('ProductConnection')).toEqual({ edges: '[ProductEdge!]!', nodes: '[Product!]!', pageInfo: 'PageInfo!' });
    expect(fields('ProductEdge')).toEqual({ cursor: 'String!', node: 'Product!' });
    expect(fields('PageInfo')).toEqual({ hasNextPage: 'Boolean!', hasPreviousPage: 'Boolean!', startCursor: 'String', endCursor: 'String' });
    expect(fields('Mutation')).toEqual({ createOrder: 'Order', updateOrder: 'Order' });

    const status = schema.getType('OrderStatus');
    expect(isEnumType(status) && status.getValues().map((value) => [value.name, value.value])).toEqual([
      ['PENDING', 'pending'],
      ['PAID', 'paid'],
      ['SHIPPED', 'shipped'],
      ['DELIVERED', 'delivered'],
      ['CANCELLED', 'cancelled'],
    ]);
    const products = schema.getQueryType()!.getFields().products!;
    expect(products.args.map((arg) => `${arg.name}: ${String(arg.type)} = ${String(arg.defaultValue)}`)).toEqual([
      'limit: Int = 50',
      'offset: Int = 0',
      'orderBy: String = undefined',
      'filter: String = undefined',
    ]);
    const connection = schema.getQueryType()!.getFields().productsConnection!;
    expect(connection.args.map((arg) => `${arg.name}: ${String(arg.type)}`)).toEqual(['first: Int', 'after: String', 'orderBy: String', 'filter: String']);
    const updateOrder = schema.getMutationType()!.getFields().updateOrder!;
    expect(updateOrder.args.map((arg) => `${arg.name}: ${String(arg.type)}`)).toEqual(['id: Int!', 'input: UpdateOrderInput!', 'etag: String']);
    const input = schema.getType('UpdateOrderInput');
    expect(input && 'getFields' in input && Object.values(input.getFields()).map((field) => `${field.name}: ${String(field.type)}`)).toEqual([
      'status: OrderStatus',
      'memo: String',
    ]);
    // Every object type is reachable and built from the database types.
    expect(isObjectType(getNamedType(products.type))).toBe(true);
  });
});
