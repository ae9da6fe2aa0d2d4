/**
 * Filter literals (AIP-160) checked against the column they are compared with: a value PostgreSQL
 * would refuse (NUL, a lone surrogate, an impossible timestamp, a number out of the column's
 * range) is 400 INVALID_FILTER on REST and INVALID_ARGUMENT on GraphQL, before any SQL is sent;
 * the edge values PostgreSQL does accept still filter correctly, on both databases.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import fc from 'fast-check';
import { getTableColumns, type Table } from 'drizzle-orm';
import { describeEachDatabase } from '../support/runtime.js';
import { issueTestToken, type TestToken } from '../support/tokens.js';
import { buildOrder, buildProduct, buildSeller, type Product } from '../support/factories.js';
import { postGraphQL } from '../support/graphql.js';
import { captureSql } from '../support/sql.js';
import { FilterSyntaxError, parseFilter } from '../../src/api/filter.js';
import { compileFilter, type FieldType, type ListSpec } from '../../src/graphql/listing.js';
import { PRODUCT_LIST } from '../../src/graphql/schema/product.js';
import { ORDER_LIST } from '../../src/graphql/schema/order.js';
import { orderItems, orders, products, reviews, sellers } from '../../src/db/schema.js';

type List = 'products' | 'orders';

/** The PostgreSQL column types each field type's checks are written for. */
const COLUMN_TYPES: Record<Exclude<FieldType, 'enum'>, string[]> = {
  int: ['integer', 'serial'],
  real: ['real'],
  string: ['text'],
  timestamp: ['timestamp with time zone'],
};

const TABLES: Record<List, { spec: ListSpec; tables: Record<string, Table> }> = {
  products: { spec: PRODUCT_LIST, tables: { '': products, seller: sellers, reviews } },
  orders: { spec: ORDER_LIST, tables: { '': orders, items: orderItems } },
};

/** Values the parser and the field types accept but PostgreSQL refused (500 before the fix), with the position and message of the 400. */
const REFUSED: [List, string, number, RegExp][] = [
  ['products', 'name = "a\u0000b"', 10, /^filter: NUL character in string at position 10$/],
  ['products', 'createdAt > "2020-02-30T00:00:00Z"', 1, /^filter: 'createdAt' takes a day from 01 to 29 in 2020-02 at position 1$/],
  ['products', 'createdAt > "2021-02-29T00:00:00Z"', 1, /takes a day from 01 to 28 in 2021-02/],
  ['products', 'createdAt > "1900-02-29T00:00:00Z"', 1, /takes a day from 01 to 28 in 1900-02/],
  ['products', 'createdAt > "2020-04-31T00:00:00Z"', 1, /takes a day from 01 to 30 in 2020-04/],
  ['products', 'createdAt > "2020-01-00T00:00:00Z"', 1, /takes a day from 01 to 31 in 2020-01/],
  ['products', 'createdAt > "2020-13-01T00:00:00Z"', 1, /takes a month from 01 to 12/],
  ['products', 'createdAt > "0000-01-01T00:00:00Z"', 1, /takes a year from 0001 to 9999/],
  ['products', 'createdAt > "2020-01-01T00:00:00+23:59"', 1, /takes a UTC offset from -15:59 to \+15:59/],
  ['products', 'createdAt > "2020-01-01T00:00:00-16:00"', 1, /takes a UTC offset from -15:59 to \+15:59/],
  ['products', 'createdAt > "2020-01-01T00:00:00+15:60"', 1, /takes a UTC offset/],
  ['products', 'createdAt > "2020-01-01T24:00:00Z"', 1, /takes an hour from 00 to 23/],
  ['products', 'createdAt > "2020-01-01T12:60:00Z"', 1, /takes minutes from 00 to 59/],
  ['products', 'createdAt > "2020-01-01T12:00:61Z"', 1, /takes seconds from 00 to 59/],
  ['products', 'createdAt > "2016-12-31T23:59:60.5Z"', 1, /takes seconds from 00 to 59 \(60, without a fraction/],
  ['products', 'price > 0 AND updatedAt < "2020-02-30T00:00:00Z"', 15, /^filter: 'updatedAt' takes a day .* at position 15$/],
  ['products', 'seller.rating > 1e308', 1, /^filter: 'seller.rating' takes a number in the range of a 4-byte float: 0, or a magnitude from 1e-45 to 3.4028235e\+38 at position 1$/],
  ['products', 'seller.rating > 3.4028236e38', 1, /4-byte float/],
  ['products', 'seller.rating < -1e39', 1, /4-byte float/],
  ['products', 'seller.rating = 1e-50', 1, /4-byte float/],
  ['products', 'seller.rating = -7e-46', 1, /4-byte float/],
  ['products', 'price > 2147483648', 1, /^filter: 'price' takes a whole number from -2147483648 to 2147483647 at position 1$/],
  ['products', 'price > 1e308', 1, /takes a whole number from -2147483648 to 2147483647/],
  ['products', 'reviews.rating < -2147483649', 1, /takes a whole number from/],
  ['orders', 'memo:"a\u0000b"', 8, /^filter: NUL character in string at position 8$/],
  ['orders', 'createdAt < "2019-02-29T00:00:00Z"', 1, /takes a day from 01 to 28 in 2019-02/],
  ['orders', 'totalCents > 1e308', 1, /takes a whole number from/],
  ['orders', 'items.quantity > 99999999999', 1, /takes a whole number from/],
];

/** Lone UTF-16 surrogates, which a URL cannot carry but a JSON GraphQL request can. */
const REFUSED_GRAPHQL_ONLY: [List, string, number, RegExp][] = [
  ['products', 'name = "\ud800"', 9, /^filter: unpaired UTF-16 surrogate in string at position 9$/],
  ['products', 'name = "\ud83d"', 9, /unpaired UTF-16 surrogate/],
  ['orders', 'memo = "x\udc00y"', 10, /^filter: unpaired UTF-16 surrogate in string at position 10$/],
];

const LIST_QUERY: Record<List, string> = {
  products: 'query ($filter: String) { products(limit: 100, filter: $filter) { id } }',
  orders: 'query ($filter: String) { orders(limit: 100, filter: $filter) { id } }',
};

describe('filter field types', () => {
  it.each(Object.keys(TABLES) as List[])('match the PostgreSQL type of each filterable column of %s', (list) => {
    const { spec, tables } = TABLES[list];
    for (const [path, field] of Object.entries(spec.filter)) {
      const column = getTableColumns(tables[field.relation ?? '']!)[field.column]!;
      expect(column, path).toBeDefined();
      if (field.type === 'enum') expect(column.enumValues, path).toEqual(field.values);
      else expect(COLUMN_TYPES[field.type], path).toContain(column.getSQLType());
    }
  });

  it.each(REFUSED.concat(REFUSED_GRAPHQL_ONLY))('%s: compileFilter refuses %j at position %i', (list, filter, position, message) => {
    let error: unknown;
    try {
      compileFilter(TABLES[list].spec, parseFilter(filter));
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(FilterSyntaxError);
    expect((error as FilterSyntaxError).position).toBe(position);
    expect(`filter: ${(error as FilterSyntaxError).message}`).toMatch(message);
  });
});

describeEachDatabase('filter literals the column cannot hold', (context) => {
  let caller: TestToken;
  const product: Record<'leap' | 'lastSecond' | 'newYear' | 'year9999' | 'year1', Product> = {} as never;
  let all: number[];
  let noteOrder: number;
  let plainOrder: number;

  beforeAll(async () => {
    const { runtime } = context();
    caller = await issueTestToken(runtime, { scope: 'products:read orders:read' });
    const max = await buildSeller(runtime, { rating: 3.4028235e38 });
    const min = await buildSeller(runtime, { rating: -3.4028235e38 });
    const tiny = await buildSeller(runtime, { rating: 1e-45 });
    const zero = await buildSeller(runtime, { rating: 0 });
    product.leap = await buildProduct(runtime, { name: 'leap day', createdAt: new Date('2020-02-29T00:00:00Z'), sellerId: zero.id, priceCents: 0 });
    product.lastSecond = await buildProduct(runtime, { name: 'last second', createdAt: new Date('2020-02-29T23:59:59Z'), sellerId: tiny.id, priceCents: 2147483647 });
    product.newYear = await buildProduct(runtime, { name: 'emoji 😀', createdAt: new Date('2017-01-01T00:00:00Z'), sellerId: max.id, priceCents: 1 });
    product.year9999 = await buildProduct(runtime, { name: 'tab\there', createdAt: new Date('9999-12-31T23:59:59Z'), sellerId: min.id, priceCents: 2 });
    product.year1 = await buildProduct(runtime, { name: '\u0001\u001f\u007f control', createdAt: new Date('0001-01-01T00:00:00Z'), sellerId: max.id, priceCents: 3 });
    all = Object.values(product).map((row) => row.id);
    noteOrder = (await buildOrder(runtime, { userId: caller.userId, memo: 'note 😀 \u0001', createdAt: new Date('2024-02-29T12:00:00Z'), items: [{ product: product.leap }] })).id;
    plainOrder = (await buildOrder(runtime, { userId: caller.userId, memo: 'plain', items: [{ product: product.leap }] })).id;
  });

  const errorLogs = () => context().logs.records().filter((record) => (record.level as number) >= 50);
  const rest = (list: List, filter: string) =>
    request(context().app).get(`/${list}?page_size=100&fields=id&filter=${encodeURIComponent(filter)}`).set('Authorization', caller.authorization);
  const graphql = (list: List, filter: string) => postGraphQL(context().app, caller.token, LIST_QUERY[list], { filter });
  const sorted = (ids: number[]) => [...ids].sort((a, b) => a - b);
  /** A URL cannot carry a lone surrogate (encodeURIComponent throws); GraphQL's JSON can. */
  const fitsUrl = (text: string) => {
    try {
      encodeURIComponent(text);
      return true;
    } catch {
      return false;
    }
  };

  describe('refused with 400 before any SQL', () => {
    it.each(REFUSED)('%s over REST: %j is 400 INVALID_FILTER at position %i', async (list, filter, position, message) => {
      const before = errorLogs().length;
      let res: request.Response | undefined;
      const sql = await captureSql(context().runtime, async () => {
        res = await rest(list, filter);
      });
      expect(res!.status, JSON.stringify(res!.body)).toBe(400);
      expect(res!.body.error).toMatchObject({
        code: 400,
        status: 'INVALID_ARGUMENT',
        message: expect.stringMatching(message),
        details: expect.arrayContaining([
          expect.objectContaining({ reason: 'INVALID_FILTER', metadata: { position: String(position) } }),
          expect.objectContaining({ fieldViolations: [{ field: 'filter', description: expect.stringMatching(message) }] }),
        ]),
      });
      expect(sql).toEqual([]);
      expect(errorLogs().slice(before)).toEqual([]);
    });

    it.each(REFUSED.concat(REFUSED_GRAPHQL_ONLY))('%s over GraphQL: %j is INVALID_ARGUMENT at position %i', async (list, filter, position, message) => {
      const before = errorLogs().length;
      let res: Awaited<ReturnType<typeof graphql>> | undefined;
      const sql = await captureSql(context().runtime, async () => {
        res = await graphql(list, filter);
      });
      expect(res!.body.errors, JSON.stringify(res!.body)).toHaveLength(1);
      expect(res!.body.errors![0]!.message).toMatch(message);
      expect(res!.body.errors![0]!.extensions).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'filter', reason: 'INVALID_FILTER', position });
      expect(sql).toEqual([]);
      expect(errorLogs().slice(before)).toEqual([]);
    });
  });

  describe('edge values PostgreSQL accepts still filter correctly', () => {
    const productCases = (): [string, number[]][] => [
      ['createdAt = "2020-02-29T00:00:00Z"', [product.leap.id]],
      ['createdAt = "2020-02-29T23:59:59Z"', [product.lastSecond.id]],
      ['createdAt = "2020-02-29T23:59:59.000000-00:00"', [product.lastSecond.id]],
      ['createdAt = "2020-03-01T13:59:59+14:00"', [product.lastSecond.id]],
      ['createdAt = "2020-03-01T15:58:59+15:59"', [product.lastSecond.id]],
      ['createdAt = "2020-02-29T08:00:59-15:59"', [product.lastSecond.id]],
      ['createdAt = "2016-12-31T23:59:60Z"', [product.newYear.id]],
      ['createdAt >= "9999-12-31T23:59:59Z"', [product.year9999.id]],
      ['createdAt <= "0001-01-01T00:00:00Z"', [product.year1.id]],
      ['createdAt > "0001-01-01T00:00:00+15:59" AND createdAt < "9999-12-31T23:59:59.999999-15:59"', all],
      ['price = 2147483647', [product.lastSecond.id]],
      ['price >= -2147483648 AND price <= 2147483647', all],
      ['seller.rating = 3.4028235e38', [product.newYear.id, product.year1.id]],
      ['seller.rating <= -3.4028235e38', [product.year9999.id]],
      ['seller.rating = 1e-45', [product.lastSecond.id]],
      ['seller.rating > 0 AND seller.rating < 1e-44', [product.lastSecond.id]],
      ['seller.rating = -0', [product.leap.id]],
      ['name = "emoji 😀"', [product.newYear.id]],
      ['name:"😀"', [product.newYear.id]],
      ['name = "tab\\there"', [product.year9999.id]],
      ['name = "\u0001\u001f\u007f control"', [product.year1.id]],
    ];
    const orderCases = (): [string, number[]][] => [
      ['memo:"😀 \u0001"', [noteOrder]],
      ['createdAt = "2024-02-29T12:00:00Z"', [noteOrder]],
      ['totalCents <= 2147483647 AND items.quantity >= -2147483648', [noteOrder, plainOrder]],
    ];

    it('over REST', async () => {
      const before = errorLogs().length;
      for (const [list, cases] of [['products', productCases()], ['orders', orderCases()]] as const) {
        for (const [filter, expected] of cases) {
          const res = await rest(list, filter);
          expect(res.status, `${filter}: ${JSON.stringify(res.body)}`).toBe(200);
          expect(sorted((res.body as { id: number }[]).map((row) => row.id)), filter).toEqual(sorted(expected));
        }
      }
      expect(errorLogs().slice(before)).toEqual([]);
    });

    it('over GraphQL', async () => {
      for (const [list, cases] of [['products', productCases()], ['orders', orderCases()]] as const) {
        for (const [filter, expected] of cases) {
          const res = await graphql(list, filter);
          expect(res.body.errors, filter).toBeUndefined();
          expect(sorted((res.body.data![list] as { id: string | number }[]).map((row) => Number(row.id))), filter).toEqual(sorted(expected));
        }
      }
    });
  });

  it('any filter is answered with results or a 400, never a 500 (fast-check)', async () => {
    const pad = (n: number, width: number) => String(n).padStart(width, '0');
    const timestamp = fc
      .record({
        year: fc.integer({ min: 0, max: 9999 }),
        month: fc.integer({ min: 0, max: 13 }),
        day: fc.integer({ min: 0, max: 32 }),
        hour: fc.integer({ min: 0, max: 25 }),
        minute: fc.integer({ min: 0, max: 61 }),
        second: fc.integer({ min: 0, max: 61 }),
        fraction: fc.option(fc.stringMatching(/^\.\d{1,6}$/), { nil: '' }),
        offset: fc.oneof(fc.constant('Z'), fc.tuple(fc.constantFrom('+', '-'), fc.integer({ min: 0, max: 24 }), fc.integer({ min: 0, max: 61 })).map(([sign, h, m]) => `${sign}${pad(h, 2)}:${pad(m, 2)}`)),
      })
      .map((t) => `"${pad(t.year, 4)}-${pad(t.month, 2)}-${pad(t.day, 2)}T${pad(t.hour, 2)}:${pad(t.minute, 2)}:${pad(t.second, 2)}${t.fraction}${t.offset}"`);
    const quoted = (text: string) => `"${text.replace(/[\\"]/g, (char) => `\\${char}`)}"`;
    const char = fc.constantFrom('a', 'Z', ' ', '%', '_', '\\\\', '\\"', '\\t', '\u0000', '\u0001', '\u007f', '\ud800', '\udc00', '😀', 'é');
    const text = fc.oneof(fc.array(char, { maxLength: 8 }).map((chars) => `"${chars.join('')}"`), fc.string({ unit: 'binary', maxLength: 12 }).map(quoted));
    const number = fc.oneof(
      fc.double({ noNaN: true }).map(String),
      fc.integer({ min: -(2 ** 33), max: 2 ** 33 }).map(String),
      fc.constantFrom('1e308', '-1e308', '3.4028235e38', '3.4028236e38', '1e-45', '7e-46', '1e-50', '2147483647', '2147483648', '-2147483649', '-0', '.5', '1e400'),
    );
    const anyLiteral = fc.oneof(timestamp, number, text, fc.constantFrom('PAID', 'paid', 'lost', 'true', '*'), fc.string({ unit: 'binary', maxLength: 6 }));
    // Mostly a literal of the field's own type, so that most comparisons get past the type check to the database.
    const typed: Record<FieldType, fc.Arbitrary<string>> = {
      int: number,
      real: number,
      string: text,
      timestamp,
      enum: fc.oneof(fc.constantFrom('PAID', 'shipped', '"pending"', 'lost'), text),
    };
    const comparison = (list: List) =>
      fc
        .constantFrom(...Object.entries(TABLES[list].spec.filter))
        .chain(([path, field]) =>
          fc.tuple(fc.constant(path), fc.constantFrom('=', '!=', '<', '<=', '>', '>=', ':'), fc.oneof({ arbitrary: typed[field.type], weight: 3 }, { arbitrary: anyLiteral, weight: 1 })),
        )
        .map(([path, op, value]) => `${path} ${op} ${value}`);
    const filterOf = (list: List) =>
      fc.oneof(
        { arbitrary: fc.array(fc.tuple(comparison(list), fc.constantFrom(' AND ', ' OR ', ' ', ' AND NOT ')), { minLength: 1, maxLength: 3 }).map((terms) => terms.map(([term, join]) => term + join).join('').replace(/ (AND NOT |AND |OR )?$/, '')), weight: 4 },
        { arbitrary: fc.string({ unit: 'binary', maxLength: 40 }), weight: 1 },
      );
    const query = fc.constantFrom<List>('products', 'orders').chain((list) => fc.tuple(fc.constant(list), filterOf(list), fc.boolean()));
    const before = errorLogs().length;
    await fc.assert(
      fc.asyncProperty(query, async ([list, filter, overRest]) => {
        if (overRest && fitsUrl(filter)) {
          const res = await rest(list, filter);
          expect([200, 400], `${filter}: ${JSON.stringify(res.body)}`).toContain(res.status);
          if (res.status === 400) expect(res.body.error.status).toBe('INVALID_ARGUMENT');
        } else {
          const res = await graphql(list, filter);
          for (const error of res.body.errors ?? []) expect(error.extensions, `${filter}: ${error.message}`).toMatchObject({ code: 'INVALID_ARGUMENT' });
        }
      }),
      { numRuns: 300 },
    );
    expect(errorLogs().slice(before)).toEqual([]);
  });
});
