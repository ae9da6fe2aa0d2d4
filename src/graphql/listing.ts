/**
 * What a list may be filtered (AIP-160) and sorted (AIP-132) by, and how a filter, an order and
 * a page token become one Drizzle relational query. Everything the client wrote ends up as a
 * `sql.placeholder` value (`f0`, `f1`, … for filter literals, `k0`, … for the page position),
 * never as SQL text; the query's shape depends only on the filter's structure, so repeated
 * shapes reuse the relational-query cache.
 *
 * Keyset pagination: the order is the requested fields plus `id` as tie-breaker, and the page
 * after a token is `(k1, …, id) > (v1, …, vid)` in that order (spelt out per direction), so
 * concurrent inserts and deletes never shift a page: no row is shown twice or skipped.
 */
import { sql, type Placeholder } from 'drizzle-orm';
import { FilterSyntaxError, parseFilter, type FilterNode, type FilterValue } from '../api/filter.js';
import { OrderBySyntaxError, parseOrderBy, type OrderTerm } from '../api/order-by.js';
import { pageTokenBinding, PageTokenError, type KeyValue } from '../api/page-token.js';
import { getSchemaConfig, queryFromInfo } from '@pothos/plugin-drizzle';
import type { GraphQLResolveInfo } from 'graphql';
import { placeholder, rowCount } from '../db/performance/relational-query-cache.js';
import { builder } from './builder.js';
import type { GraphQLContext } from './context.js';
import { GqlInvalidArgument } from './errors.js';
import { connectionSize, type ConnectionShape } from './pagination.js';

/**
 * How a filter literal is read, named after the column's PostgreSQL type so its range is known:
 * `int` an `integer` (or `serial`) column, `real` a `real` column, `timestamp` a `timestamptz`.
 * A literal the column cannot hold is refused here, never sent to fail in SQL.
 */
export type FieldType = 'int' | 'real' | 'string' | 'timestamp' | 'enum';

/** A filterable field: a column of the list's table, or of a related table (`seller.name`). */
export interface FilterField {
  /** The relation to go through (`seller`, `reviews`: any review matches). */
  relation?: string;
  /** The Drizzle (TypeScript) column name. */
  column: string;
  type: FieldType;
  /** Enum values, as stored. */
  values?: readonly string[];
}

export interface SortField {
  column: string;
  type: 'int' | 'string' | 'timestamp';
}

export interface ListSpec {
  /** Names the list in page tokens (a token of one list is refused by another). */
  name: string;
  /** Filterable paths as clients write them. */
  filter: Readonly<Record<string, FilterField>>;
  /** Sortable fields as clients write them; each backed by an index (see schema.ts). */
  sort: Readonly<Record<string, SortField>>;
  /** The order when `orderBy` is absent or empty. */
  defaultOrder: readonly OrderTerm[];
}

// ---------------------------------------------------------------- filter

/** A where object for Drizzle's relational queries (v2 filter syntax). */
export type Where = Record<string, unknown>;

export interface CompiledFilter {
  where: Where | undefined;
  values: Record<string, unknown>;
}

const INT_MIN = -2_147_483_648;
const INT_MAX = 2_147_483_647;
/** The largest `real` (FLT_MAX, printed as PostgreSQL prints it). */
const REAL_MAX = 3.4028235e38;
/** The smallest nonzero `real` magnitude (a subnormal), as PostgreSQL prints it. */
const REAL_MIN = 1e-45;
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,6})?(?:Z|[+-](\d{2}):(\d{2}))$/;
/** PostgreSQL refuses a UTC offset of 16 hours or more ("time zone displacement out of range"). */
const MAX_OFFSET_HOURS = 15;
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const TIMESTAMP_SYNTAX = 'an RFC 3339 timestamp in quotes, such as "2024-01-31T12:00:00Z"';
const OPERATORS = { '=': 'eq', '!=': 'ne', '<': 'lt', '<=': 'lte', '>': 'gt', '>=': 'gte' } as const;

function invalidFilter(detail: string, position: number): FilterSyntaxError {
  return new FilterSyntaxError(detail, position);
}

const isLeapYear = (year: number) => year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);

/**
 * What is wrong with `text` as a timestamp (phrased to follow "takes"), or undefined when it is an
 * RFC 3339 date-time that PostgreSQL reads as written: a real proleptic Gregorian date in years
 * 0001–9999, hours 00–23 (PostgreSQL would also read 24:00:00, RFC 3339 has no hour 24), and an
 * offset PostgreSQL accepts. Second 60 (a leap second) is allowed without a fraction, and means,
 * as in PostgreSQL, the first instant of the next minute.
 */
function timestampProblem(text: string): string | undefined {
  const match = RFC3339.exec(text);
  if (!match) return TIMESTAMP_SYNTAX;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const fraction = match[7] ?? '';
  if (year < 1) return 'a year from 0001 to 9999';
  if (month < 1 || month > 12) return 'a month from 01 to 12';
  const days = month === 2 && isLeapYear(year) ? 29 : DAYS_IN_MONTH[month - 1]!;
  if (day < 1 || day > days) return `a day from 01 to ${days} in ${match[1]}-${match[2]}`;
  if (hour > 23) return 'an hour from 00 to 23';
  if (minute > 59) return 'minutes from 00 to 59';
  if (second > 60 || (second === 60 && /[1-9]/.test(fraction))) return 'seconds from 00 to 59 (60, without a fraction, for a leap second)';
  if (match[8] !== undefined && (Number(match[8]) > MAX_OFFSET_HOURS || Number(match[9]) > 59)) {
    return `a UTC offset from -${MAX_OFFSET_HOURS}:59 to +${MAX_OFFSET_HOURS}:59`;
  }
  return undefined;
}

/** Whether PostgreSQL reads `value` (sent as JavaScript prints it) as a `real` without overflow or underflow to 0. */
function fitsReal(value: number): boolean {
  // Math.fround rounds to nearest as strtof does. A double it keeps finite and nonzero prints as a
  // decimal that strtof keeps finite and nonzero too, so this never lets through what PostgreSQL refuses.
  const rounded = Math.fround(value);
  return Number.isFinite(rounded) && (rounded !== 0 || value === 0);
}

/** The value a literal stands for in a field of `type`, or a FilterSyntaxError. */
function literalFor(field: FilterField, path: string, value: FilterValue, position: number): string | number {
  switch (field.type) {
    case 'int':
      if (value.kind !== 'number' || !Number.isInteger(value.value)) throw invalidFilter(`'${path}' takes a whole number`, position);
      if (value.value < INT_MIN || value.value > INT_MAX) throw invalidFilter(`'${path}' takes a whole number from ${INT_MIN} to ${INT_MAX}`, position);
      return value.value;
    case 'real':
      if (value.kind !== 'number') throw invalidFilter(`'${path}' takes a number`, position);
      if (!fitsReal(value.value)) {
        throw invalidFilter(`'${path}' takes a number in the range of a 4-byte float: 0, or a magnitude from ${REAL_MIN} to ${REAL_MAX}`, position);
      }
      return value.value;
    case 'string':
      if (value.kind !== 'string' && value.kind !== 'text') throw invalidFilter(`'${path}' takes a "string"`, position);
      return value.value;
    case 'timestamp': {
      if (value.kind !== 'string') throw invalidFilter(`'${path}' takes ${TIMESTAMP_SYNTAX}`, position);
      const problem = timestampProblem(value.value);
      if (problem) throw invalidFilter(`'${path}' takes ${problem}`, position);
      return value.value;
    }
    case 'enum': {
      const text = value.kind === 'string' || value.kind === 'text' ? value.value.toLowerCase() : undefined;
      if (text === undefined || !field.values?.includes(text)) {
        throw invalidFilter(`'${path}' takes one of ${(field.values ?? []).join(', ')}`, position);
      }
      return text;
    }
  }
}

/**
 * The instant one millisecond after `text` (a timestamp timestampProblem accepted), written with the same offset so
 * that PostgreSQL reads it in range; `infinity` after 9999-12-31T23:59:59.999 in that offset.
 */
function nextMillisecond(text: string): string {
  const match = RFC3339.exec(text)!;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const millisecond = Number(((match[7] ?? '.').slice(1) + '000').slice(0, 3));
  const local = new Date(0);
  // setUTCFullYear, not Date.UTC, which reads years 0–99 as 1900–1999; second 60 rolls into the next minute.
  local.setUTCFullYear(year, month - 1, day);
  local.setUTCHours(hour, minute, second, millisecond + 1);
  if (local.getUTCFullYear() > 9999) return 'infinity';
  const offset = text.endsWith('Z') ? 'Z' : text.slice(-6);
  return `${local.toISOString().slice(0, 23)}${offset}`;
}

/**
 * A comparison with a timestamp written to the millisecond or coarser, as the API prints them, takes it for that whole
 * millisecond: the database keeps microseconds, so `createdAt = "<a createdAt just read>"` would otherwise match
 * nothing on PostgreSQL, and `<=` would leave the row itself out. A literal with a finer fraction is compared as written.
 */
function millisecondCondition(op: (typeof OPERATORS)[keyof typeof OPERATORS], literal: string, bind: (value: unknown) => Placeholder): Record<string, unknown> | undefined {
  if ((RFC3339.exec(literal)![7] ?? '').length > 4) return undefined;
  switch (op) {
    case 'eq':
      return { gte: bind(literal), lt: bind(nextMillisecond(literal)) };
    case 'ne':
      return { OR: [{ lt: bind(literal) }, { gte: bind(nextMillisecond(literal)) }] };
    case 'lte':
      return { lt: bind(nextMillisecond(literal)) };
    case 'gt':
      return { gte: bind(nextMillisecond(literal)) };
    default:
      return undefined;
  }
}

/** `%`, `_` and `\` taken literally in an ILIKE pattern. */
function likeEscape(text: string): string {
  return text.replace(/[\\%_]/g, (char) => `\\${char}`);
}

/** Compiles a parsed filter over `spec`'s allow-list; FilterSyntaxError names the position of a bad field or value. */
export function compileFilter(spec: ListSpec, node: FilterNode | undefined): CompiledFilter {
  const values: Record<string, unknown> = {};
  let count = 0;
  const bind = (value: unknown): Placeholder => {
    const name = `f${count++}`;
    values[name] = value;
    return placeholder(name);
  };
  const compile = (current: FilterNode): Where => {
    switch (current.kind) {
      case 'and':
        return { AND: current.children.map(compile) };
      case 'or':
        return { OR: current.children.map(compile) };
      case 'not':
        return { NOT: compile(current.child) };
      case 'compare': {
        const path = current.path.join('.');
        const field = Object.hasOwn(spec.filter, path) ? spec.filter[path]! : undefined;
        if (!field) {
          throw invalidFilter(`'${path}' is not a filterable field; filterable fields: ${Object.keys(spec.filter).join(', ')}`, current.position);
        }
        let condition: Record<string, unknown>;
        if (current.op === ':' && current.value.kind === 'any') {
          condition = { isNotNull: true };
        } else if (current.value.kind === 'any') {
          throw invalidFilter("'*' is only allowed after ':'", current.position);
        } else if (current.op === ':' && field.type === 'string') {
          const text = String(literalFor(field, path, current.value, current.position));
          condition = { ilike: bind(`%${likeEscape(text)}%`) };
        } else {
          const op = current.op === ':' ? 'eq' : OPERATORS[current.op];
          if (field.type === 'enum' && op !== 'eq' && op !== 'ne') throw invalidFilter(`'${path}' can only be compared with =, != or :`, current.position);
          const literal = literalFor(field, path, current.value, current.position);
          condition = (field.type === 'timestamp' && millisecondCondition(op, literal as string, bind)) || { [op]: bind(literal) };
        }
        const where: Where = { [field.column]: condition };
        return field.relation ? { [field.relation]: where } : where;
      }
    }
  };
  return { where: node ? compile(node) : undefined, values };
}

// ---------------------------------------------------------------- order and keyset

export interface SortKey {
  field: string;
  column: string;
  type: SortField['type'];
  direction: 'asc' | 'desc';
}

const ID_KEY = (direction: 'asc' | 'desc'): SortKey => ({ field: 'id', column: 'id', type: 'int', direction });

/** The keys a list is ordered by: the requested (or default) terms, then `id` unless already there. */
export function sortKeys(spec: ListSpec, terms: readonly OrderTerm[]): SortKey[] {
  const chosen = terms.length > 0 ? terms : spec.defaultOrder;
  const keys: SortKey[] = [];
  for (const term of chosen) {
    const field = spec.sort[term.field]!;
    keys.push({ field: term.field, column: field.column, type: field.type, direction: term.direction });
    if (field.column === 'id') return keys;
  }
  return [...keys, ID_KEY('asc')];
}

/** The relational `orderBy` for the keys (object keys keep their order). */
export function orderByOf(keys: readonly SortKey[]): Record<string, 'asc' | 'desc'> {
  return Object.fromEntries(keys.map((key) => [key.column, key.direction]));
}

/** Name of the extra that carries a timestamp key at full (microsecond) precision. */
const keyExtra = (index: number) => `pageKey${index}`;

/**
 * Extras reading timestamp keys as exact text: a JavaScript Date keeps milliseconds only, and
 * a position rounded down would show the rows of that millisecond twice.
 */
export function keyExtras(keys: readonly SortKey[]): Record<string, (table: Record<string, unknown>) => unknown> | undefined {
  const extras = Object.fromEntries(
    keys.flatMap((key, index) =>
      key.type === 'timestamp'
        ? [[keyExtra(index), (table: Record<string, unknown>) => sql`to_char(${table[key.column]} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`]]
        : [],
    ),
  );
  return Object.keys(extras).length > 0 ? extras : undefined;
}

/** The columns the keys need, whatever the client selected. */
export function keyColumns(keys: readonly SortKey[]): Record<string, true> {
  return Object.fromEntries(keys.map((key) => [key.column, true]));
}

/** The key values of a loaded row, for its cursor. */
export function keyValues(keys: readonly SortKey[], row: Record<string, unknown>): KeyValue[] {
  return keys.map((key, index) => {
    const value = key.type === 'timestamp' ? row[keyExtra(index)] : row[key.column];
    if (typeof value !== 'string' && typeof value !== 'number') throw new Error(`sort key ${key.column} was not loaded`);
    return value;
  });
}

/** `(k1, …, kn) after (v1, …, vn)` in the keys' directions, with the values as placeholders `k0…`. */
export function keysetWhere(keys: readonly SortKey[], values: readonly KeyValue[]): { where: Where; values: Record<string, unknown> } {
  const bound: Record<string, unknown> = {};
  keys.forEach((key, index) => {
    const value = values[index];
    if (key.type === 'int' && !(typeof value === 'number' && Number.isInteger(value))) throw new PageTokenError('is not a page token of this list');
    if (key.type !== 'int' && typeof value !== 'string') throw new PageTokenError('is not a page token of this list');
    bound[`k${index}`] = value;
  });
  const branches = keys.map((key, index) => ({
    ...Object.fromEntries(keys.slice(0, index).map((earlier, j) => [earlier.column, { eq: placeholder(`k${j}`) }])),
    [key.column]: { [key.direction === 'asc' ? 'gt' : 'lt']: placeholder(`k${index}`) },
  }));
  if (branches.length === 1) return { where: branches[0]!, values: bound };
  // The OR alone is no index condition: PostgreSQL would read the index from its start and filter out every row
  // before the position, so a deep page would cost as much as an offset. The leading key's own bound, implied by
  // the OR, lets the index scan start at the position.
  const leading = keys[0]!;
  return { where: { AND: [{ [leading.column]: { [leading.direction === 'asc' ? 'gte' : 'lte']: placeholder('k0') } }, { OR: branches }] }, values: bound };
}

// ---------------------------------------------------------------- arguments

/** `filter` and `orderBy` on the plain list fields (`products(limit, offset, …)`). */
export const listArgs = builder.args((t) => ({
  orderBy: t.string({ description: 'AIP-132 order, such as `priceCents desc, name`; `id` breaks ties.' }),
  filter: t.string({ description: 'AIP-160 filter, such as `priceCents < 5000 AND seller.name = "Acme"`.' }),
}));

export interface ListArgs {
  filter?: string | null | undefined;
  orderBy?: string | null | undefined;
}

/** The parsed and compiled `filter` and `orderBy`; INVALID_ARGUMENT naming the argument and position. */
export function listQuery(spec: ListSpec, args: ListArgs): { filter: CompiledFilter; keys: SortKey[] } {
  let terms: OrderTerm[];
  try {
    terms = parseOrderBy(args.orderBy ?? '', new Set(Object.keys(spec.sort)));
    refuseSameColumnTwice(spec, terms);
  } catch (error) {
    if (error instanceof OrderBySyntaxError) {
      throw new GqlInvalidArgument(`orderBy ${error.message}`, { extensions: { field: 'orderBy', reason: 'INVALID_ORDER_BY' } });
    }
    throw error;
  }
  let filter: CompiledFilter;
  try {
    filter = compileFilter(spec, parseFilter(args.filter ?? ''));
  } catch (error) {
    if (error instanceof FilterSyntaxError) {
      throw new GqlInvalidArgument(`filter: ${error.message}`, {
        extensions: { field: 'filter', reason: 'INVALID_FILTER', position: error.position },
      });
    }
    throw error;
  }
  return { filter, keys: sortKeys(spec, terms) };
}

/**
 * Two names of one column (`price` and `priceCents`) would each become a sort key, while the
 * relational `orderBy` keeps one direction per column: the order would not be the one asked for,
 * and a cursor's keyset would not follow it, so paging would repeat rows forever.
 */
function refuseSameColumnTwice(spec: ListSpec, terms: readonly OrderTerm[]): void {
  const named = new Map<string, string>();
  for (const term of terms) {
    const column = spec.sort[term.field]!.column;
    const earlier = named.get(column);
    if (earlier !== undefined) throw new OrderBySyntaxError(`names one field twice: '${earlier}' and '${term.field}' are the same field`);
    named.set(column, term.field);
  }
}

/** What a page token of this list, filter, order and caller is bound to. */
export function listBinding(spec: ListSpec, args: ListArgs, keys: readonly SortKey[], context: GraphQLContext): string {
  return pageTokenBinding([spec.name, args.filter ?? '', keys.map((key) => `${key.column} ${key.direction}`).join(','), context.principal.userId ?? '']);
}

/** The key values of the `after` cursor; INVALID_ARGUMENT when it is forged, foreign or for another query. */
export function afterKeys(context: GraphQLContext, token: string, binding: string, keys: readonly SortKey[]): KeyValue[] {
  try {
    return context.pageTokens.verify(token, binding, keys.length);
  } catch (error) {
    if (error instanceof PageTokenError) {
      throw new GqlInvalidArgument(`after: the page token ${error.message}`, { extensions: { field: 'after', reason: 'INVALID_PAGE_TOKEN' } });
    }
    throw error;
  }
}

/** Combines where objects (undefined ones dropped). */
export function allOf(...parts: (Where | undefined)[]): Where | undefined {
  const present = parts.filter((part): part is Where => part !== undefined);
  return present.length === 0 ? undefined : present.length === 1 ? present[0] : { AND: present };
}

// ---------------------------------------------------------------- connections

export interface ConnectionRequest {
  spec: ListSpec;
  table: 'products' | 'orders';
  /** The GraphQL type of the nodes, for plugin-drizzle's selection planning. */
  typeName: string;
  args: ListArgs & { first?: number | null; after?: string | null };
  /** A condition every row must meet besides the filter (the caller's own orders), with its placeholder values. */
  scope?: { where: Where; values: Record<string, unknown> };
}

/**
 * One page of a connection in one SQL statement: the nodes' selection (relations included) is
 * planned from the GraphQL query under `nodes` and `edges.node`, filtered, ordered and cut
 * after the cursor, loading one row more than the page to know whether another follows.
 */
export async function resolveConnection<Row extends Record<string, unknown>>(
  request: ConnectionRequest,
  context: GraphQLContext,
  info: GraphQLResolveInfo,
): Promise<ConnectionShape<Row>> {
  const { spec, args } = request;
  const size = connectionSize(args.first);
  const { filter, keys } = listQuery(spec, args);
  const binding = listBinding(spec, args, keys, context);
  let keyset: { where: Where; values: Record<string, unknown> } | undefined;
  if (args.after !== null && args.after !== undefined) {
    const after = afterKeys(context, args.after, binding, keys);
    try {
      keyset = keysetWhere(keys, after);
    } catch (error) {
      if (error instanceof PageTokenError) {
        throw new GqlInvalidArgument(`after: the page token ${error.message}`, { extensions: { field: 'after', reason: 'INVALID_PAGE_TOKEN' } });
      }
      throw error;
    }
  }
  const where = allOf(request.scope?.where, filter.where, keyset?.where);
  const extras = keyExtras(keys);
  const query = queryFromInfo({
    config: getSchemaConfig(builder),
    context,
    info,
    typeName: request.typeName,
    paths: [['nodes'], ['edges', 'node']],
    columns: keyColumns(keys),
    ...(extras && { extras }),
    ...(where && { where }),
    orderBy: orderByOf(keys),
    limit: rowCount(size + 1),
  } as never) as object;
  const rows = await context.queries.findMany<Row>(context.db, request.table, query, {
    ...request.scope?.values,
    ...filter.values,
    ...keyset?.values,
  });
  const page = rows.slice(0, size);
  const cursorOf = (row: Row) => context.pageTokens.sign(binding, keyValues(keys, row));
  const last = page.at(-1);
  const first = page[0];
  return {
    nodes: page,
    edges: page.map((node) => ({ node, cursor: () => cursorOf(node) })),
    pageInfo: {
      hasNextPage: rows.length > size,
      hasPreviousPage: false,
      startCursor: first ? cursorOf(first) : null,
      endCursor: last ? cursorOf(last) : null,
    },
  };
}
