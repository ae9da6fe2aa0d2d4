import { describe, expect, it } from 'vitest';
import { print, validate } from 'graphql';
import { parseFields } from '../../src/rest/fields.js';
import { allowedFields, OperationCache, type OperationSpec } from '../../src/rest/selection.js';
import { fixtureSchema } from '../support/rest-fixture-schema.js';

const product = fixtureSchema.getType('Product') as import('graphql').GraphQLObjectType;

function spec(fields: string, overrides: Partial<OperationSpec> = {}): OperationSpec {
  return { route: 'products.list', schema: fixtureSchema, operation: 'query', field: 'products', args: ['limit', 'offset'], fields: parseFields(fields), ...overrides };
}

describe('allow-list from the schema', () => {
  it('is the object type’s fields, less those with required arguments and introspection', () => {
    expect([...allowedFields(product).keys()]).toEqual([
      'id', 'name', 'description', 'priceCents', 'currency', 'seller', 'shippingPolicy', 'reviews', 'createdAt', 'updatedAt',
    ]);
  });
});

describe('document building', () => {
  it('builds the operation as AST, with variables typed as the schema types the arguments', () => {
    const operation = new OperationCache().get(spec('name, id'));
    expect(print(operation.document)).toBe(
      'query Rest_products_list($limit: Int, $offset: Int) {\n  products(limit: $limit, offset: $offset) {\n    id\n    name\n  }\n}',
    );
    expect(validate(fixtureSchema, operation.document)).toEqual([]);
  });

  it('expands every field, nested objects included, and stops at a type already being expanded', () => {
    const operation = new OperationCache().get(spec('*'));
    const text = print(operation.document);
    expect(text).toContain('seller {\n      id\n      name\n      rating\n    }');
    expect(text).toContain('reviews {');
    expect(text).not.toContain('products {\n      '); // Seller.products would re-enter Product
    expect(text).not.toContain('priceIn');
    expect(validate(fixtureSchema, operation.document)).toEqual([]);
  });

  it('expands the items of a nested list to their own fields only: an object per item must be named', () => {
    const whole = print(new OperationCache().get(spec('*', { route: 'orders.list', field: 'orders' })).document);
    expect(whole).toContain('items {\n      quantity\n      unitPriceCents\n    }');
    const named = print(new OperationCache().get(spec('items(product(name))', { route: 'orders.list', field: 'orders' })).document);
    expect(named).toContain('items {\n      product {\n        name\n      }\n    }');
  });

  it('adds internal fields to the document but keeps them out of the response', () => {
    const operation = new OperationCache().get(
      spec('memo', { route: 'orders.get', field: 'order', args: ['id'], internal: new Map([['etag', true], ['id', true]]) }),
    );
    expect(print(operation.document)).toContain('order(id: $id) {\n    etag\n    id\n    memo\n  }');
    expect(operation.project({ etag: '"t"', id: 1, memo: null })).toStrictEqual({ memo: null });
  });

  it('projects exactly the requested keys, lower-casing enum values', () => {
    const operation = new OperationCache().get(spec('status,items(quantity)', { route: 'orders.list', field: 'orders' }));
    expect(operation.project([{ status: 'PAID', items: [{ quantity: 2 }], extra: 1 }])).toStrictEqual([{ status: 'paid', items: [{ quantity: 2 }] }]);
  });

  it('caches by (route, normalized field set) in a bounded LRU, but checks the paths every time', () => {
    const cache = new OperationCache(2);
    const first = cache.get(spec('id,name'));
    expect(cache.get(spec(' name ,id,id'))).toBe(first);
    expect(cache.get(spec('id,name', { route: 'other' }))).not.toBe(first);
    expect(() => cache.get(spec('id,name,id.nope'))).toThrow("fields: 'id' has no subfields, so 'id.nope' is not a field");
    cache.get(spec('id'));
    cache.get(spec('name'));
    expect(cache.size).toBe(2);
    expect(cache.get(spec('id,name'))).not.toBe(first);
  });

  it('keeps user text out of the document: only schema names reach it', () => {
    expect(() => new OperationCache().get(spec('id){__schema{types{name}}}'))).toThrow(/fields: unmatched '\)' after 'id'/);
    expect(() => new OperationCache().get(spec('__schema'))).toThrow("fields: '__schema' is not a field of Product");
  });
});
