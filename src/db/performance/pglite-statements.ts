/**
 * The client Drizzle's PGlite session is given: `query` and `transaction` as on PGlite, but each
 * statement is described once and then run as a named prepared statement with one call into the
 * WebAssembly backend. PGlite's own `query` enters the backend six times per statement (Parse,
 * Describe, Bind, Describe, Execute, Sync), and copies its whole parser table whenever a query
 * brings parsers of its own, as Drizzle's does every time. Which texts are kept prepared is the
 * same `PreparedStatementPolicy` as on PostgreSQL; the rest run as the unnamed statement.
 * Values are serialized and results parsed by PGlite's own tables, so answers are unchanged.
 * Measured gain and removal condition: docs/PERFORMANCE.md.
 */
import { protocol, types, type messages, type PGlite, type QueryOptions, type Results, type Transaction } from '@electric-sql/pglite';
import type { PreparedStatementPolicy } from './prepared-statements.js';

type BackendMessage = messages.BackendMessage;
type ParameterDescriptionMessage = messages.ParameterDescriptionMessage;
type RowDescriptionMessage = messages.RowDescriptionMessage;
type DataRowMessage = messages.DataRowMessage;
type CommandCompleteMessage = messages.CommandCompleteMessage;
type Parsers = NonNullable<QueryOptions['parsers']>;

/** What a statement needs to be run again: its name, parameter types and result columns. */
interface Described {
  name: string;
  paramTypes: number[];
  fields: { name: string; dataTypeID: number }[];
}

/** The part of PGlite that Drizzle's session calls. */
export interface PgliteQueryClient {
  query<T>(text: string, params?: unknown[], options?: QueryOptions): Promise<Results<T>>;
  transaction<T>(callback: (tx: PgliteQueryClient) => Promise<T>): Promise<T>;
}

/**
 * Server settings for the embedded start: prepared statements always run on their generic plan.
 * Left to choose, PostgreSQL re-plans on every execution a statement whose generic plan can look
 * dearer than a custom one: a later page of a larger table (`offset $1` is estimated at a tenth of
 * it), a filter on bound values. In PGlite the planner runs on the server's own thread. Embedded data is
 * small enough that a generic plan's default selectivities choose the same indexes.
 */
export const GENERIC_PLAN_START_PARAMS: readonly string[] = ['-c', 'plan_cache_mode=force_generic_plan'];

const { serialize } = protocol;
const UNNAMED = '';
/** SQLSTATE of "cached plan must not change result type": the table changed under the statement. */
const FEATURE_NOT_SUPPORTED = '0A000';
/** Statement names are unique in the process, so two clients of one PGlite never collide. */
let names = 0;

/** A statement's answer before its values are parsed: each value is PostgreSQL's text, or null. */
export interface RawResults {
  fields: Described['fields'];
  rows: (string | null)[][];
  affectedRows: number;
  command?: string;
}

/** Runs statements on `pg` as described prepared statements; the caller holds PGlite's query lock. */
export interface PgliteStatementRunner {
  run(text: string, params: unknown[], inTransaction: boolean): Promise<RawResults>;
}

export function pgliteStatementRunner(pg: PGlite, policy: PreparedStatementPolicy): PgliteStatementRunner {
  const prepared = new Map<string, Described>();

  async function describe(text: string, name: string): Promise<Described> {
    const messages = await pg.execProtocolStream(concat(serialize.parse({ name, text }), serialize.describe({ type: 'S', name }), serialize.sync()), {
      syncToFs: false,
    });
    const described: Described = { name, paramTypes: [], fields: [] };
    for (const message of messages) {
      if (message.name === 'parameterDescription') described.paramTypes = (message as ParameterDescriptionMessage).dataTypeIDs;
      else if (message.name === 'rowDescription') {
        described.fields = (message as RowDescriptionMessage).fields.map(({ name: field, dataTypeID }) => ({ name: field, dataTypeID }));
      }
    }
    return described;
  }

  async function run(text: string, params: unknown[], inTransaction: boolean): Promise<RawResults> {
    const keep = policy.shouldPrepare(text);
    let statement = keep ? prepared.get(text) : undefined;
    try {
      if (!statement) {
        statement = await describe(text, keep ? `fieldgate_${++names}` : UNNAMED);
        if (keep) prepared.set(text, statement);
      }
      const values = params.map((value, i) => {
        if (value === null || value === undefined) return null;
        const serializer = pg.serializers[statement!.paramTypes[i]!];
        return serializer ? serializer(value) : String(value);
      });
      const messages = await pg.execProtocolStream(
        concat(serialize.bind({ statement: statement.name, values }), serialize.execute({}), serialize.sync()),
        { syncToFs: !inTransaction },
      );
      return rawResults(messages, statement.fields);
    } catch (error) {
      if (keep && (error as { code?: string }).code === FEATURE_NOT_SUPPORTED) forget(text);
      throw Object.assign(error as object, { query: text, params });
    }
  }

  function forget(text: string): void {
    const statement = prepared.get(text);
    if (!statement) return;
    prepared.delete(text);
    pg.execProtocolRawSync(concat(serialize.close({ type: 'S', name: statement.name }), serialize.sync()));
  }

  return { run };
}

export function withPgliteStatements(pg: PGlite, policy: PreparedStatementPolicy): PgliteQueryClient {
  const { run } = pgliteStatementRunner(pg, policy);
  /** Drizzle passes one parsers object for every query; it is merged with PGlite's once. */
  const mergedParsers = new WeakMap<Parsers, Parsers>();

  function parsersFor(extra: Parsers | undefined): Parsers {
    if (!extra) return pg.parsers;
    let merged = mergedParsers.get(extra);
    if (!merged) mergedParsers.set(extra, (merged = { ...pg.parsers, ...extra }));
    return merged;
  }

  async function query<T>(text: string, params: unknown[], options: QueryOptions | undefined, inTransaction: boolean): Promise<Results<T>> {
    try {
      return toResults<T>(await run(text, params, inTransaction), parsersFor(options?.parsers), options?.rowMode);
    } catch (error) {
      throw Object.assign(error as object, { queryOptions: options });
    }
  }

  const transactionClient = (tx: Transaction): PgliteQueryClient => ({
    query<T>(text: string, params: unknown[] = [], options?: QueryOptions) {
      if (tx.closed) return Promise.reject(new Error('Transaction is closed'));
      return pg._runExclusiveQuery(() => query<T>(text, params, options, true));
    },
    transaction() {
      return Promise.reject(new Error('Nested transactions are savepoints; Drizzle opens them with SQL'));
    },
  });

  return {
    async query<T>(text: string, params: unknown[] = [], options?: QueryOptions) {
      // PGlite itself would fail deep in its backend with a TypeError; this error says what happened (db/errors.ts).
      if (pg.closed) throw Object.assign(new Error('the embedded database is closed'), { code: 'CONNECTION_ENDED' });
      await pg.waitReady;
      return pg._runExclusiveTransaction(() => pg._runExclusiveQuery(() => query<T>(text, params, options, false)));
    },
    transaction<T>(callback: (tx: PgliteQueryClient) => Promise<T>) {
      return pg.transaction((tx) => callback(transactionClient(tx)));
    },
  };
}

function rawResults(messages: BackendMessage[], fields: Described['fields']): RawResults {
  const rows: (string | null)[][] = [];
  let affectedRows = 0;
  let command: string | undefined;
  for (const message of messages) {
    if (message.name === 'dataRow') rows.push((message as DataRowMessage).fields);
    else if (message.name === 'commandComplete') {
      const parts = (message as CommandCompleteMessage).text.split(' ');
      command = parts[0];
      if (['INSERT', 'UPDATE', 'DELETE', 'COPY', 'MERGE'].includes(command!)) affectedRows = Number(parts[parts.length - 1]);
    }
  }
  return { fields, rows, affectedRows, ...(command ? { command } : {}) };
}

/** Parses each value with `parsers` (PGlite's, or a caller's on top of them), as PGlite's `query` would. */
export function toResults<T>(raw: RawResults, parsers: Parsers, rowMode: QueryOptions['rowMode']): Results<T> {
  const { fields } = raw;
  return shapedResults<T>(raw, raw.rows.map((row) => row.map((value, i) => types.parseType(value, fields[i]!.dataTypeID, parsers) as unknown)), rowMode);
}

/** Rows of values as PGlite's `query` answers them: objects by column name unless `rowMode` is 'array'. */
export function shapedResults<T>(raw: Omit<RawResults, 'rows'>, rows: unknown[][], rowMode: QueryOptions['rowMode']): Results<T> {
  const { fields } = raw;
  const shaped = rowMode === 'array' ? rows : rows.map((values) => Object.fromEntries(fields.map((field, i) => [field.name, values[i]])));
  return { rows: shaped as T[], fields, affectedRows: raw.affectedRows, ...(raw.command ? { command: raw.command } : {}) } as Results<T>;
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((length, part) => length + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}
