import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { repeatedMember } from '../../src/http/json-members.js';

describe('repeatedMember: a JSON object naming a member twice', () => {
  it.each([
    ['{"a":1,"a":2}', { name: 'a', path: 'a' }],
    ['{"a":{"b":[1,{"c":1},{"c":1,"d":[],"c":2}]}}', { name: 'c', path: 'a.b[2].c' }],
    ['[{"x":1},[{"y":1,"y":1}]]', { name: 'y', path: '[1][0].y' }],
    ['{"a\\"":1,"a\\u0022":2}', { name: 'a"', path: 'a"' }],
    ['{"\\\\":1,"\\u005c":2}', { name: '\\', path: '\\' }],
  ])('finds it in %s', (text, found) => {
    expect(repeatedMember(text)).toEqual(found);
  });

  it.each(['{}', '[]', '"a"', '{"a":"a","b":"a"}', '{"a":{"a":{"a":1}}}', '[{"a":1},{"a":1}]', '{"a\\\\":1,"a":2}', '{"a":[{"a":1}],"b":{"a":1}}', '\ufeff{"a":1}'])(
    'finds none in %s',
    (text) => {
      expect(repeatedMember(text)).toBeUndefined();
    },
  );

  it('finds none in any JSON.stringify output, and always the one a second copy of a member adds (fast-check)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.string(), (value, name) => {
        expect(repeatedMember(JSON.stringify(value))).toBeUndefined();
        const text = JSON.stringify({ [name]: value });
        expect(repeatedMember(`${text.slice(0, -1)},${text.slice(1)}`)).toEqual({ name, path: name });
      }),
      { numRuns: 500 },
    );
  });
});

describe('repeatedMember on text that is not JSON', () => {
  it.each(['{"a', '{"a\\', '"', '{"a":"b'])('returns instead of looping on the unterminated string in %s', (text) => {
    expect(repeatedMember(text)).toBeUndefined();
  });
});
