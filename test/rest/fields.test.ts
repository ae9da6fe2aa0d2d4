import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { FieldsError, parseFields, printFields, WHOLE, type FieldTree } from '../../src/rest/fields.js';

/** A tree as a plain, key-sorted object (WHOLE as true), for order-independent comparison. */
function plain(tree: FieldTree): unknown {
  if (tree === WHOLE) return true;
  return Object.fromEntries([...tree.keys()].sort().map((name) => [name, plain(tree.get(name)!)]));
}

const parse = (raw: string | undefined) => plain(parseFields(raw).tree);

function errorOf(raw: string): FieldsError {
  try {
    parseFields(raw);
  } catch (error) {
    expect(error).toBeInstanceOf(FieldsError);
    return error as FieldsError;
  }
  throw new Error(`expected ${JSON.stringify(raw)} to be refused`);
}

describe('fields parser', () => {
  it('reads a comma-separated list, trimming names and collapsing duplicates', () => {
    expect(parse(' name , id,name,, id ')).toEqual({ id: true, name: true });
  });

  it('does not depend on order', () => {
    expect(parse('seller(rating,name),id')).toEqual(parse('id,seller(name,rating)'));
  });

  it('treats absent, empty, blank and * as every field', () => {
    for (const raw of [undefined, '', '  ', ',', ' , ,', '*', '*,id', ' * ']) expect(parse(raw)).toBe(true);
  });

  it('reads the nested form and the path form, and merges them', () => {
    expect(parse('seller(name,rating)')).toEqual({ seller: { name: true, rating: true } });
    expect(parse('seller.name,seller.rating')).toEqual({ seller: { name: true, rating: true } });
    expect(parse('seller.name, seller(rating), reviews(author,rating)')).toEqual({
      reviews: { author: true, rating: true },
      seller: { name: true, rating: true },
    });
    expect(parse('items.product(seller.name),items.quantity')).toEqual({
      items: { product: { seller: { name: true } }, quantity: true },
    });
  });

  it('lets a bare object name (or a wildcard under it) absorb any selection of its subfields', () => {
    expect(parse('seller.name,seller')).toEqual({ seller: true });
    expect(parse('seller(name),seller(*)')).toEqual({ seller: true });
    expect(parse('seller.*')).toEqual({ seller: true });
  });

  it('still reports every path it read, even one a merge absorbed', () => {
    expect(parseFields('seller,seller.nope').paths).toEqual([['seller'], ['seller', 'nope']]);
  });

  it.each([
    ['a zero-width space', 'id\u200b', "fields: unexpected U+200B after 'id'"],
    ['a no-break space', '\u00a0id', 'fields: unexpected U+00A0 where a field name belongs'],
    ['a control character', 'seller(\u0001)', "fields: unexpected U+0001 in 'seller'"],
    ['an emoji, as one character,', 'id\u{1F600}', `fields: unexpected "\u{1F600}" after 'id'`],
  ])('shows %s it stops at so that a reader can see it', (_what, raw, message) => {
    expect(errorOf(raw).message).toBe(message);
  });

  it.each([
    ['seller(name', "fields: unclosed '(' after 'seller'"],
    ['seller(name))', "fields: unmatched ')' after 'seller'"],
    ['name)', "fields: unmatched ')' after 'name'"],
    ['name!', `fields: unexpected "!" after 'name'`],
    ['id,na me', `fields: unexpected "m" after 'na'`],
    ['reviews[0]', "fields: list indexes are not supported, in 'reviews[…]'"],
    ['reviews.0.rating', "fields: list indexes are not supported, in 'reviews.0'"],
    ['seller()', "fields: 'seller()' names no subfields"],
    ['seller.', "fields: a field name is missing after 'seller.'"],
    ['*.name', "fields: a wildcard may only end a path, in '*.name'"],
    ['seller(*(name))', "fields: a wildcard takes no subfields, in 'seller.*'"],
    ['(name)', `fields: unexpected "(" where a field name belongs`],
    ['seller(na-me)', `fields: unexpected "-" after 'seller.na'`],
  ])('refuses %j naming where: %s', (raw, message) => {
    const error = errorOf(raw);
    expect(error.message).toBe(message);
    expect(error.toBody()).toEqual({
      error: {
        code: 400,
        status: 'INVALID_ARGUMENT',
        message,
        details: [
          { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', domain: 'fieldgate.dev', reason: 'INVALID_FIELD_MASK', metadata: {} },
          { '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: 'fields', description: message }] },
        ],
      },
    });
  });

  it('refuses input too long or too deep with a 400, not a stack overflow', () => {
    expect(errorOf('a,'.repeat(3000)).message).toMatch(/longer than 4096/);
    expect(errorOf('a('.repeat(1000) + 'b' + ')'.repeat(1000)).message).toMatch(/nesting deeper than 16 levels/);
    expect(errorOf(Array.from({ length: 40 }, () => 'a').join('.')).message).toMatch(/nesting deeper than 16 levels/);
  });

  it('prints a canonical form: sorted, nested lists in parentheses, whole objects bare', () => {
    expect(printFields(parseFields('seller.rating,name,seller(name),reviews,id').tree)).toBe('id,name,reviews,seller(name,rating)');
    expect(printFields(parseFields('').tree)).toBe('*');
  });
});

// ---------------------------------------------------------------- properties

const NAMES = ['id', 'name', 'seller', 'rating', 'reviews', 'a', 'b_2', '_c'];

/** Random field trees (as maps), up to four levels deep. */
const treeArbitrary: fc.Arbitrary<FieldTree> = fc.letrec<{ tree: FieldTree }>((tie) => ({
  tree: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(WHOLE),
    fc
      .uniqueArray(fc.tuple(fc.constantFrom(...NAMES), tie('tree')), { minLength: 1, maxLength: 4, selector: ([name]) => name })
      .map((entries) => new Map(entries) as FieldTree),
  ),
})).tree;

const space = fc.constantFrom('', '', ' ', '  ', '\t');

/** Writes a tree in one of many equivalent spellings: path or nested form, shuffled, repeated, spaced. */
function spelling(tree: FieldTree): fc.Arbitrary<string> {
  if (tree === WHOLE) return fc.constantFrom('*', '', ' , ');
  return fc
    .tuple(fc.tuple(...[...tree.entries()].map(([name, subtree]) => itemSpellings(name, subtree))), fc.boolean(), space, space)
    .chain(([written, repeat, s1, s2]) => {
      const items = written.flat();
      const all = repeat ? [...items, ...items] : items;
      return fc.shuffledSubarray(all, { minLength: all.length }).map((list) => list.map((item) => `${s1}${item}${s2}`).join(','));
    });
}

/** The items (one or several, to be joined by commas) that select `name` with `subtree`. */
function itemSpellings(name: string, subtree: FieldTree): fc.Arbitrary<string[]> {
  if (subtree === WHOLE) return fc.constantFrom([name], [`${name}(*)`], [`${name}.*`], [`${name}( * )`]);
  const nested = spelling(subtree)
    .filter((text) => !/^[\s,*]*$/.test(text))
    .map((inner) => [`${name}(${inner})`]);
  // Path form: every item of every child, prefixed with `name.`.
  const paths = fc
    .tuple(...[...subtree.entries()].map(([child, grand]) => itemSpellings(child, grand)))
    .map((children) => children.flat().map((child) => `${name}.${child}`));
  return fc.oneof(nested, paths);
}

describe('fields parser properties', () => {
  it('never throws anything but a FieldsError, on any input', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary', maxLength: 80 }), fc.stringMatching(/^[a-z_.,()*[\] \t0-9!]{0,60}$/)), (raw) => {
        try {
          parseFields(raw);
        } catch (error) {
          if (!(error instanceof FieldsError)) throw error;
          expect(error.toBody().error.code).toBe(400);
        }
      }),
      { numRuns: 3000 },
    );
  });

  it('parse → print → parse is stable', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z.,()* ]{0,40}$/), (raw) => {
        let first: FieldTree;
        try {
          first = parseFields(raw).tree;
        } catch {
          return;
        }
        const printed = printFields(first);
        const again = parseFields(printed).tree;
        expect(plain(again)).toEqual(plain(first));
        expect(printFields(again)).toBe(printed);
      }),
      { numRuns: 3000 },
    );
  });

  it('every spelling of a tree parses to that tree, and prints canonically', () => {
    fc.assert(
      fc.property(
        treeArbitrary.chain((tree) => fc.tuple(fc.constant(tree), spelling(tree))),
        ([tree, text]) => {
          const parsed = parseFields(text).tree;
          expect(plain(parsed)).toEqual(plain(tree));
          expect(plain(parseFields(printFields(parsed)).tree)).toEqual(plain(tree));
        },
      ),
      { numRuns: 1000 },
    );
  });
});
