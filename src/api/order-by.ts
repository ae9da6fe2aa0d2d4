/** The AIP-132 `order_by` syntax (`price desc, name`), checked against the caller's allow-list of sortable fields. */

export const MAX_ORDER_BY_LENGTH = 256;
export const MAX_ORDER_BY_FIELDS = 4;

export interface OrderTerm {
  field: string;
  direction: 'asc' | 'desc';
}

export class OrderBySyntaxError extends Error {
  override readonly name = 'OrderBySyntaxError';
}

const TERM = /^([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)(?:[ \t]+([A-Za-z]+))?$/;

/** Parses `order_by`; an empty one is no terms (the list's default order). */
export function parseOrderBy(text: string, allowed: ReadonlySet<string>): OrderTerm[] {
  if (text.length > MAX_ORDER_BY_LENGTH) throw new OrderBySyntaxError(`is longer than ${MAX_ORDER_BY_LENGTH} characters`);
  if (text.trim() === '') return [];
  const parts = text.split(',');
  if (parts.length > MAX_ORDER_BY_FIELDS) throw new OrderBySyntaxError(`names more than ${MAX_ORDER_BY_FIELDS} fields`);
  const terms: OrderTerm[] = [];
  for (const part of parts) {
    const match = TERM.exec(part.trim());
    if (!match) throw new OrderBySyntaxError(`'${part.trim().slice(0, 64)}' is not a field name optionally followed by asc or desc`);
    const field = match[1]!;
    const direction = match[2];
    if (direction !== undefined && direction !== 'asc' && direction !== 'desc') {
      throw new OrderBySyntaxError(`'${direction.slice(0, 16)}' is not a direction: use asc or desc`);
    }
    if (!allowed.has(field)) throw new OrderBySyntaxError(`'${field}' is not sortable; sortable fields: ${[...allowed].join(', ')}`);
    if (terms.some((term) => term.field === field)) throw new OrderBySyntaxError(`names '${field}' twice`);
    terms.push({ field, direction: direction ?? 'asc' });
  }
  return terms;
}
