/**
 * patches/@pothos+selection-mapper+0.1.0.patch (applied by `npm ci` through patch-package):
 * plugin-drizzle asks the selection mapper for the response path of every relation field of
 * every row, and the mapper memoized each path link's key, and each field execution's scope, in
 * WeakMaps. The patch keeps both on the link itself and reuses the key strings the rows of a list
 * share. These tests drive the installed builds, ESM (what the service loads) and CommonJS;
 * docs/PERFORMANCE.md says when the patch can go.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import * as esm from '@pothos/selection-mapper';

type Path = { prev: Path | undefined; key: string | number; typename: string | undefined };
type CacheKey = (type: string, path: Path) => string;
type Info = { path: Path; parentType: { name: string } };
type Mapping = { nested: Record<string, Mapping>; position?: unknown };
interface Mapper {
  cacheKey: CacheKey;
  setFieldMapping(ctx: object, info: Info, mapping: Mapping, row: unknown): void;
  getLoaderMapping(ctx: object, path: Path, type: string, row: unknown): Mapping | null;
}

const require = createRequire(import.meta.url);
const cjs = require('@pothos/selection-mapper') as Mapper;

/** `products[3].reviews[0].author`, linked as graphql-js links a response path. */
function authorPath(): { root: Path; row: Path; reviews: Path; review: Path; author: Path } {
  const root: Path = { prev: undefined, key: 'products', typename: 'Query' };
  const row: Path = { prev: root, key: 3, typename: undefined };
  const reviews: Path = { prev: row, key: 'reviews', typename: 'Product' };
  const review: Path = { prev: reviews, key: 0, typename: undefined };
  const author: Path = { prev: review, key: 'author', typename: 'Review' };
  return { root, row, reviews, review, author };
}

describe.each([
  ['ESM', esm as unknown as Mapper],
  ['CommonJS', cjs],
])('the patched selection mapper (%s)', (_build, mapper) => {
  const { cacheKey } = mapper;

  it('keys a field by its type and its response path without list indices', () => {
    const { root, reviews, author } = authorPath();
    expect(cacheKey('Review', author)).toBe('Review@products.reviews.author');
    expect(cacheKey('Product', reviews)).toBe('Product@products.reviews');
    expect(cacheKey('Query', root)).toBe('Query@products');
  });

  it('keeps each link’s key on the link, invisible to enumeration and JSON', () => {
    const { root, row, reviews, review, author } = authorPath();
    cacheKey('Review', author);
    for (const link of [root, row, reviews, review, author]) {
      expect(Object.getOwnPropertySymbols(link).map(String)).toEqual(['Symbol(responsePath)']);
      expect(Object.keys(link)).toEqual(['prev', 'key', 'typename']);
    }
    expect(JSON.stringify({ key: author.key, typename: author.typename })).toBe('{"key":"author","typename":"Review"}');
  });

  it('reuses a link’s key: a later change to the link above does not change it', () => {
    const { root, author } = authorPath();
    expect(cacheKey('Review', author)).toBe('Review@products.reviews.author');
    root.key = 'renamed';
    expect(cacheKey('Review', author)).toBe('Review@products.reviews.author');
  });

  it('keeps a field execution’s scope on its link, for its own context only', () => {
    const { reviews, author } = authorPath();
    const authorMapping: Mapping = { nested: {} };
    const reviewsMapping: Mapping = { nested: { 'Review@author': authorMapping } };
    const context = {};
    const productRow = { id: 3 };
    mapper.setFieldMapping(context, { path: reviews, parentType: { name: 'Product' } }, reviewsMapping, productRow);
    expect(Object.getOwnPropertySymbols(reviews).map(String).sort()).toEqual(['Symbol(loaderScope)', 'Symbol(loaderScopeOwner)', 'Symbol(responsePath)']);
    expect(Object.keys(reviews)).toEqual(['prev', 'key', 'typename']);
    // Beneath `reviews`, a review's field finds its mapping through the scope, relative to it.
    expect(mapper.getLoaderMapping(context, author, 'Review', {})).toBe(authorMapping);
    expect(mapper.getLoaderMapping(context, reviews, 'Product', productRow)).toBe(reviewsMapping);
    // Another request never reads it, even through the same link objects.
    expect(mapper.getLoaderMapping({}, author, 'Review', {})).toBeNull();
    expect(mapper.getLoaderMapping({}, reviews, 'Product', productRow)).toBeNull();
  });

  it('builds the same keys after its string tables are emptied', () => {
    const { author } = authorPath();
    for (let i = 0; i < 25_000; i++) expect(cacheKey(`Type${i}`, author)).toBe(`Type${i}@products.reviews.author`);
    const aliased: Path = { prev: author.prev, key: 'writer', typename: 'Review' };
    expect(cacheKey('Review', aliased)).toBe('Review@products.reviews.writer');
  });
});
