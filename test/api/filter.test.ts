import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { FilterSyntaxError, MAX_FILTER_DEPTH, MAX_FILTER_LENGTH, MAX_FILTER_TERMS, parseFilter, type FilterNode } from '../../src/api/filter.js';
import { OrderBySyntaxError, parseOrderBy } from '../../src/api/order-by.js';
import { PageTokenError, PageTokens } from '../../src/api/page-token.js';

const compare = (path: string, op: string, value: unknown) => expect.objectContaining({ kind: 'compare', path: path.split('.'), op, value });

describe('AIP-160 filter syntax', () => {
  it('parses comparisons, member paths and every literal kind', () => {
    expect(parseFilter('price < 5000')).toEqual(compare('price', '<', { kind: 'number', value: 5000 }));
    expect(parseFilter('seller.name = "Acme"')).toEqual(compare('seller.name', '=', { kind: 'string', value: 'Acme' }));
    expect(parseFilter("name != 'it\\'s'")).toEqual(compare('name', '!=', { kind: 'string', value: "it's" }));
    expect(parseFilter('rating >= -1.5e1')).toEqual(compare('rating', '>=', { kind: 'number', value: -15 }));
    expect(parseFilter('active = true')).toEqual(compare('active', '=', { kind: 'boolean', value: true }));
    expect(parseFilter('status = PAID')).toEqual(compare('status', '=', { kind: 'text', value: 'PAID' }));
    expect(parseFilter('description:*')).toEqual(compare('description', ':', { kind: 'any' }));
    expect(parseFilter('   ')).toBeUndefined();
  });

  it('binds OR tighter than AND, ANDs whitespace-separated terms, and negates with NOT and - (AIP-160 precedence)', () => {
    const node = parseFilter('a = 1 AND b = 2 OR c = 3 d = 4');
    expect(node).toMatchObject({
      kind: 'and',
      children: [{ kind: 'compare', path: ['a'] }, { kind: 'and', children: [{ kind: 'or', children: [{ path: ['b'] }, { path: ['c'] }] }, { path: ['d'] }] }],
    });
    expect(parseFilter('NOT a = 1')).toMatchObject({ kind: 'not', child: { path: ['a'] } });
    expect(parseFilter('-(a = 1 OR b = 2)')).toMatchObject({ kind: 'not', child: { kind: 'or' } });
  });

  it.each([
    ['price <', 8, 'expected a value'],
    ['price 5', 7, 'expected a comparator'],
    ['(price = 1', 11, "expected ')'"],
    ['price = "open', 9, 'unterminated string'],
    ['price = 1 AND', 14, 'expected a field name'],
    ['price = 1)', 10, 'expected AND, OR or the end'],
    ['price # 1', 7, 'unexpected character'],
    ['price = *', 9, "'*' is only allowed after ':'"],
    ['"x" = 1', 1, 'expected a field name'],
    ['name = "a\u0000b"', 10, 'NUL character in string'],
    ["name = 'a\\\\b\u0000'", 13, 'NUL character in string'],
    ['name = "\ud800"', 9, 'unpaired UTF-16 surrogate in string'],
    ['name = "x\udc00\ud83d"', 10, 'unpaired UTF-16 surrogate in string'],
    ['name = "\ud83d"', 9, 'unpaired UTF-16 surrogate in string'],
    ['name = a\u0000', 9, 'unexpected character "\\u0000"'],
  ])('refuses %j at position %i', (text, position, message) => {
    let error: unknown;
    try {
      parseFilter(text);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(FilterSyntaxError);
    expect((error as FilterSyntaxError).position).toBe(position);
    expect((error as FilterSyntaxError).message).toContain(message);
  });

  it('keeps control characters, escapes and surrogate pairs in strings', () => {
    expect(parseFilter('name = "\u0001\u001f\u007f😀\\t"')).toEqual(compare('name', '=', { kind: 'string', value: '\u0001\u001f\u007f😀\t' }));
    expect(parseFilter('name = "\\t\\n"')).toEqual(compare('name', '=', { kind: 'string', value: '\t\n' }));
  });

  it('never yields a string PostgreSQL cannot store as sent: no NUL, no lone surrogate (fast-check)', () => {
    const wellFormed = (text: string) => !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);
    const strings = (node: FilterNode | undefined): string[] => {
      if (!node) return [];
      if (node.kind === 'compare') return node.value.kind === 'string' || node.value.kind === 'text' ? [node.value.value] : [];
      if (node.kind === 'not') return strings(node.child);
      return node.children.flatMap(strings);
    };
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 20 }), fc.string({ unit: 'binary', maxLength: 20 }), (text, other) => {
        let node: FilterNode | undefined;
        try {
          node = parseFilter(`name = "${text}" OR name:'${other}'`);
        } catch (error) {
          if (!(error instanceof FilterSyntaxError)) throw error;
          return;
        }
        for (const value of strings(node)) {
          expect(value).not.toContain('\u0000');
          expect(wellFormed(value)).toBe(true);
        }
      }),
      { numRuns: 3000 },
    );
  });

  it('bounds length, nesting and the number of comparisons', () => {
    expect(() => parseFilter(`a = "${'x'.repeat(MAX_FILTER_LENGTH)}"`)).toThrow(/longer than/);
    expect(() => parseFilter(`${'('.repeat(MAX_FILTER_DEPTH + 1)}a = 1${')'.repeat(MAX_FILTER_DEPTH + 1)}`)).toThrow(/nested deeper/);
    expect(() => parseFilter(`${'NOT '.repeat(MAX_FILTER_DEPTH + 1)}a = 1`)).toThrow(/nested deeper/);
    expect(() => parseFilter(`${'-'.repeat(2000)}a = 1`)).toThrow(/nested deeper/);
    expect(() => parseFilter(Array.from({ length: MAX_FILTER_TERMS + 1 }, (_, i) => `a = ${i}`).join(' OR '))).toThrow(/more than/);
    expect(parseFilter(`${'('.repeat(MAX_FILTER_DEPTH)}a = 1${')'.repeat(MAX_FILTER_DEPTH)}`)).toMatchObject({ kind: 'compare' });
  });

  it('never throws anything but FilterSyntaxError, whatever the input (fast-check)', () => {
    const alphabet = fc.constantFrom(...'ab.=!<>:()"\'\\-* 0123456789ANDORNOTtrue\t'.split(''), 'AND', 'OR', 'NOT', ' AND ', ' OR ', '"x"', '5.5e3');
    const texts = fc.oneof(fc.string({ maxLength: 200 }), fc.array(alphabet, { maxLength: 80 }).map((parts) => parts.join('')));
    fc.assert(
      fc.property(texts, (text) => {
        try {
          parseFilter(text);
        } catch (error) {
          if (!(error instanceof FilterSyntaxError)) throw error;
          expect(error.position).toBeGreaterThanOrEqual(1);
          expect(error.position).toBeLessThanOrEqual(Math.max(text.length, MAX_FILTER_LENGTH) + 1);
        }
      }),
      { numRuns: 3000 },
    );
  });
});

describe('AIP-132 order_by syntax', () => {
  const sortable = new Set(['id', 'name', 'price']);

  it('reads fields with optional directions, ascending by default', () => {
    expect(parseOrderBy('price desc, name', sortable)).toEqual([
      { field: 'price', direction: 'desc' },
      { field: 'name', direction: 'asc' },
    ]);
    expect(parseOrderBy('  ', sortable)).toEqual([]);
  });

  it.each(['colour', 'price up', 'price desc desc', 'price,price', 'price;drop', ',', 'name,id,price,name,id'])('refuses %j', (text) => {
    expect(() => parseOrderBy(text, sortable)).toThrow(OrderBySyntaxError);
  });
});

describe('page tokens', () => {
  const tokens = new PageTokens('k'.repeat(43));

  it('round-trip the key values for the same binding only', () => {
    const token = tokens.sign('bind', [4999, 'Mug', 17]);
    expect(tokens.verify(token, 'bind', 3)).toEqual([4999, 'Mug', 17]);
    expect(() => tokens.verify(token, 'other', 3)).toThrow(/another list, filter, order_by or caller/);
    expect(() => new PageTokens('another key').verify(token, 'bind', 3)).toThrow(PageTokenError);
  });

  it('refuse any change to a token (fast-check)', () => {
    const token = tokens.sign('bind', [1, 'a', 2]);
    fc.assert(
      fc.property(fc.nat(token.length - 1), fc.constantFrom(...'ABCabc019-_.'.split('')), (index, char) => {
        const tampered = token.slice(0, index) + char + token.slice(index + 1);
        fc.pre(tampered !== token);
        expect(() => tokens.verify(tampered, 'bind', 3)).toThrow(PageTokenError);
      }),
    );
    expect(() => tokens.verify('x'.repeat(5000), 'bind', 3)).toThrow(PageTokenError);
    expect(() => tokens.verify('', 'bind', 3)).toThrow(PageTokenError);
  });
});
