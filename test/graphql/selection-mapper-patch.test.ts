/**
 * patches/@pothos+selection-mapper+0.1.0.patch (applied by `npm ci` through patch-package):
 * plugin-drizzle asks the selection mapper for the response path of every relation field of
 * every row, and the mapper memoized each path link's key in a module-wide WeakMap. The patch
 * keeps the key on the link itself. These tests drive the installed builds, ESM (what the
 * service loads) and CommonJS; docs/PERFORMANCE.md says when the patch can go.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import * as esm from '@pothos/selection-mapper';

type Path = { prev: Path | undefined; key: string | number; typename: string | undefined };
type CacheKey = (type: string, path: Path) => string;

const require = createRequire(import.meta.url);
const cjs = require('@pothos/selection-mapper') as { cacheKey: CacheKey };

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
  ['ESM', esm.cacheKey as unknown as CacheKey],
  ['CommonJS', cjs.cacheKey],
])('the patched selection mapper (%s)', (_build, cacheKey) => {
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
      expect(Object.getOwnPropertySymbols(link)).toHaveLength(1);
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
});
