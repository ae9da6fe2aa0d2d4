import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { FieldsError } from '../../src/rest/fields.js';
import { RestError } from '../../src/rest/errors.js';
import { parseUpdateMask, planUpdate } from '../../src/rest/update-mask.js';
import { fixtureSchema } from '../support/rest-fixture-schema.js';

const plan = (mask: string, body: Record<string, unknown>) => planUpdate(fixtureSchema, 'updateOrder', parseUpdateMask(mask), body);

function refusal(run: () => unknown): RestError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(RestError);
    return error as RestError;
  }
  throw new Error('expected a refusal');
}

describe('update_mask parser', () => {
  it('trims names, collapses duplicates, skips empty names, keeps paths', () => {
    expect(parseUpdateMask(' memo , status,memo,, items.quantity ')).toEqual([['memo'], ['status'], ['items', 'quantity']]);
  });

  it.each([undefined, '', '  ', ',', ' , '])('is required (%j)', (raw) => {
    expect(refusal(() => parseUpdateMask(raw)).message).toMatch(/^update_mask is required/);
  });

  it.each([
    ['*', "update_mask: '*' (replace the whole resource) is not supported; name the fields to change"],
    ['memo,st atus', "update_mask: 'st atus' is not a field path"],
    ['memo(x)', "update_mask: 'memo(x)' is not a field path"],
    ['items[0]', "update_mask: 'items[0]' is not a field path"],
    ['.memo', "update_mask: '.memo' is not a field path"],
  ])('refuses %j', (raw, message) => {
    expect(refusal(() => parseUpdateMask(raw)).message).toBe(message);
  });

  it('never throws anything but a 400 FieldsError (fast-check)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 60 }), (raw) => {
        try {
          parseUpdateMask(raw);
        } catch (error) {
          expect(error).toBeInstanceOf(FieldsError);
          expect((error as FieldsError).httpStatus).toBe(400);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('parse → join → parse is stable (fast-check)', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom('memo', 'status', ' memo', 'items.product.name', '', 'a_b', 'x.y '), { maxLength: 8 }), (names) => {
        const raw = names.join(',');
        let first: string[][];
        try {
          first = parseUpdateMask(raw);
        } catch {
          return;
        }
        expect(parseUpdateMask(first.map((path) => path.join('.')).join(','))).toEqual(first);
      }),
    );
  });
});

describe('planUpdate: mask ∩ body → updateOrder input, from the schema', () => {
  it('takes only fields both masked and present', () => {
    expect(plan('memo', { memo: 'x', status: 'paid' })).toEqual({ input: { memo: 'x' }, fields: ['memo'] });
    expect(plan('memo,status', { status: 'paid' })).toEqual({ input: { status: 'PAID' }, fields: ['status'] });
    expect(plan('memo,status', {})).toEqual({ input: {}, fields: [] });
  });

  it('maps lower-case REST enum values to GraphQL ones, and refuses any other spelling', () => {
    expect(plan('status', { status: 'cancelled' }).input).toEqual({ status: 'CANCELLED' });
    for (const status of ['PAID', 'Paid', 'refunded', '', 5, true, ['paid'], { value: 'paid' }]) {
      expect(refusal(() => plan('status', { status })).message).toMatch(/^'status' must be one of pending, paid, shipped, delivered, cancelled; got /);
    }
  });

  it('null clears a nullable field and is refused for a non-nullable one', () => {
    expect(plan('memo', { memo: null }).input).toEqual({ memo: null });
    expect(refusal(() => plan('status', { status: null })).message).toBe("'status' cannot be null");
  });

  it('ignores output-only fields (and their real subpaths), refuses unknown ones', () => {
    expect(plan('id,items,items.quantity,totalCents,createdAt,updatedAt,etag', { id: 1, items: [], etag: 'x' })).toEqual({ input: {}, fields: [] });
    expect(refusal(() => plan('colour', {})).message).toBe("update_mask: unknown field 'colour' (Order has no field 'colour')");
    expect(refusal(() => plan('items.colour', {})).message).toBe("update_mask: 'items.colour' is not a field (OrderItem has no field 'colour')");
    expect(refusal(() => plan('memo.text', {})).message).toBe("update_mask: 'memo' has no subfields, so 'memo.text' is not a field");
    expect(refusal(() => plan('toString', {})).message).toMatch(/unknown field 'toString'/);
    expect(refusal(() => plan('__proto__', {})).message).toMatch(/unknown field '__proto__'/);
  });

  it('checks value types against the input type', () => {
    // In a JSON body's terms: a REST client never sent GraphQL, so no GraphQL type is named.
    expect(refusal(() => plan('memo', { memo: 5 })).message).toBe("'memo' must be a JSON string; got 5");
    expect(refusal(() => plan('memo', { memo: [] })).message).toBe("'memo' must be a JSON string; got a JSON array");
    expect(refusal(() => plan('memo', { memo: { text: 'x' } })).message).toBe("'memo' must be a JSON string; got a JSON object");
  });
});
