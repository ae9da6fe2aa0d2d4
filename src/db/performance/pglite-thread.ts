/**
 * The embedded database on a thread of its own. PGlite runs PostgreSQL in WebAssembly on the thread that calls it, so
 * in the server's thread every statement's execution stops HTTP, token signing and GraphQL for its duration, and an
 * expensive filter stops them all. Here PGlite runs in a worker thread (pglite-thread-worker.ts) and this client, which
 * Drizzle's PGlite session is given, sends it each statement as a message: the server's thread parses requests while
 * the database executes. Statements are still run one at a time, in the order sent, and transactions hold PGlite's
 * transaction lock as before.
 * Measured gain and removal condition: docs/PERFORMANCE.md.
 */
import { Worker } from 'node:worker_threads';
import type { QueryOptions, Results } from '@electric-sql/pglite';
import type { PgliteQueryClient, RawResults } from './pglite-statements.js';

type Parsers = NonNullable<QueryOptions['parsers']>;

/** Statement texts given a number to go by (see `statement`); others are sent whole each time. */
const MAX_TEXT_IDS = 1_024;

/** What the worker is started with. */
export interface ThreadStart {
  /** The cluster directory, or undefined for an in-memory database. */
  pgdata: string | undefined;
  /**
   * Server settings after PGlite's own; the thread puts those first, and the generic-plan setting its statements need
   * (pglite-statements.ts) last.
   */
  startParams: readonly string[];
  preparedStatements: number;
}

export type ThreadRequest =
  /** `text` the first time a statement is sent (with the `textId` it goes by from then on), `textId` alone after that. */
  | { id: number; op: 'query'; text?: string; textId?: number; params: unknown[]; textTypes: number[]; tx?: number }
  | { id: number; op: 'begin' }
  | { id: number; op: 'end'; tx: number; commit: boolean }
  | { id: number; op: 'close' };

/** A statement's answer from the thread: values parsed, except those of the caller's own types, still text. */
export type ThreadResults = Omit<RawResults, 'rows'> & { rows: unknown[][] };

export type ThreadReply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: Record<string, unknown> & { message: string } };

type Request = ThreadRequest extends infer R ? (R extends { id: number } ? Omit<R, 'id'> : never) : never;

export interface PgliteThread extends PgliteQueryClient {
  readonly closed: boolean;
  close(): Promise<void>;
}

/** The worker's module beside this one; from the TypeScript sources, through a bootstrap that registers tsx in it. */
function startWorker(start: ThreadStart): Worker {
  const entry = import.meta.url.endsWith('.ts') ? './pglite-thread-worker.dev.mjs' : './pglite-thread-worker.js';
  return new Worker(new URL(entry, import.meta.url), { workerData: start });
}

/** Starts PGlite on its own thread and resolves once it is ready; rejects with PGlite's error if it cannot start. */
export async function startPgliteThread(start: ThreadStart): Promise<PgliteThread> {
  const worker = startWorker(start);
  // PGlite's modules load on this thread while the worker starts, not before: nothing here needs them until it answers.
  const parsing = Promise.all([import('@electric-sql/pglite'), import('./pglite-statements.js')]);
  const pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  let ids = 0;
  let closed = false;
  let exited: Error | undefined;

  const ready = new Promise<void>((resolve, reject) => pending.set(0, { resolve: () => resolve(), reject }));
  worker.on('message', (reply: ThreadReply) => {
    const waiting = pending.get(reply.id);
    if (!waiting) return;
    pending.delete(reply.id);
    if (pending.size === 0) worker.unref();
    if (reply.ok) waiting.resolve(reply.value);
    else waiting.reject(Object.assign(new Error(reply.error.message), reply.error));
  });
  // A thread that failed (PostgreSQL aborting in WebAssembly) or exited takes the database with it: CONNECTION_ENDED is
  // what db/errors.ts reads as an unavailable database, answered 503, not 500.
  const fail = (cause: Error) => {
    exited ??= Object.assign(new Error(`the embedded database's thread ended: ${cause.message}`), { code: 'CONNECTION_ENDED', cause });
    const error = exited;
    closed = true;
    for (const waiting of pending.values()) waiting.reject(error);
    pending.clear();
  };
  worker.on('error', fail);
  worker.on('exit', (code) => fail(new Error(`exit code ${code}`)));

  function send(request: Request): Promise<unknown> {
    if (closed) return Promise.reject(exited ?? Object.assign(new Error('the embedded database is closed'), { code: 'CONNECTION_ENDED' }));
    const id = ++ids;
    // The thread keeps the process alive only while it owes an answer, like a socket with a query on it.
    if (pending.size === 0) worker.ref();
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      try {
        worker.postMessage({ ...request, id });
      } catch (error) {
        // A parameter the structured clone cannot copy; a text first sent in it must be sent again next time.
        if (request.op === 'query' && request.text !== undefined) textIds.delete(request.text);
        pending.delete(id);
        if (pending.size === 0) worker.unref();
        reject(error as Error);
      }
    });
  }

  /** The type ids a caller's parsers cover: the worker leaves those values as text. */
  const textTypesOf = new WeakMap<Parsers, number[]>();
  function textTypes(parsers: Parsers | undefined): number[] {
    if (!parsers) return [];
    let list = textTypesOf.get(parsers);
    if (!list) textTypesOf.set(parsers, (list = Object.keys(parsers).map(Number)));
    return list;
  }

  /**
   * Statement texts by the number they go by: a code flow's statements are over a kilobyte each, and copying them into
   * every message cost more than the rest of it. Bounded, since a text sent once too often only costs that copy.
   */
  const textIds = new Map<string, number>();
  let lastTextId = 0;
  function statement(text: string): { text?: string; textId?: number } {
    const known = textIds.get(text);
    if (known !== undefined) return { textId: known };
    if (textIds.size >= MAX_TEXT_IDS) return { text };
    const textId = ++lastTextId;
    textIds.set(text, textId);
    return { text, textId };
  }

  async function query<T>(text: string, params: unknown[], options: QueryOptions | undefined, tx: number | undefined): Promise<Results<T>> {
    const raw = (await send({ op: 'query', ...statement(text), params, textTypes: textTypes(options?.parsers), ...(tx === undefined ? {} : { tx }) })) as ThreadResults;
    return resultsOf<T>(raw, options?.parsers, options?.rowMode);
  }

  let types: typeof import('@electric-sql/pglite').types;
  let shapedResults: typeof import('./pglite-statements.js').shapedResults;
  try {
    [[{ types }, { shapedResults }]] = await Promise.all([parsing, ready]);
  } catch (error) {
    await worker.terminate();
    throw error;
  }
  worker.unref();

  /** The caller's parsers on the values the worker left as text; rows as objects unless `rowMode` is 'array'. */
  function resultsOf<T>(raw: ThreadResults, parsers: Parsers | undefined, rowMode: QueryOptions['rowMode']): Results<T> {
    let rows = raw.rows;
    if (parsers) {
      const own = raw.fields.map((field) => (parsers[field.dataTypeID] ? field.dataTypeID : undefined));
      if (own.some((type) => type !== undefined)) {
        rows = rows.map((row) => row.map((value, i) => (own[i] === undefined ? value : types.parseType(value as string | null, own[i]!, parsers))));
      }
    }
    return shapedResults<T>(raw, rows, rowMode);
  }

  return {
    get closed() {
      return closed;
    },
    query<T>(text: string, params: unknown[] = [], options?: QueryOptions) {
      return query<T>(text, params, options, undefined);
    },
    async transaction<T>(callback: (tx: PgliteQueryClient) => Promise<T>): Promise<T> {
      const tx = (await send({ op: 'begin' })) as number;
      let open = true;
      const client: PgliteQueryClient = {
        query<R>(text: string, params: unknown[] = [], options?: QueryOptions) {
          if (!open) return Promise.reject(new Error('Transaction is closed'));
          return query<R>(text, params, options, tx);
        },
        transaction() {
          return Promise.reject(new Error('Nested transactions are savepoints; Drizzle opens them with SQL'));
        },
      };
      let result: T;
      try {
        result = await callback(client);
      } catch (error) {
        open = false;
        await send({ op: 'end', tx, commit: false }).catch(() => {});
        throw error;
      }
      open = false;
      await send({ op: 'end', tx, commit: true });
      return result;
    },
    async close() {
      if (closed) return;
      try {
        await send({ op: 'close' });
      } finally {
        closed = true;
        await worker.terminate();
      }
    },
  };
}
