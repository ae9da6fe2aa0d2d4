/**
 * The embedded database's own thread (see pglite-thread.ts): PGlite, its described statements, and the transactions the
 * main thread opens, answering one message per request. Values are parsed here with PGlite's parsers, except the types
 * the caller brings parsers of its own for, which go back as text for the caller to parse.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite, type Transaction } from '@electric-sql/pglite';
import { GENERIC_PLAN_START_PARAMS, pgliteStatementRunner, toResults, type RawResults } from './pglite-statements.js';
import { PreparedStatementPolicy } from './prepared-statements.js';
import type { ThreadReply, ThreadRequest, ThreadResults, ThreadStart } from './pglite-thread.js';

const port = parentPort!;
const start = workerData as ThreadStart;
const pg = new PGlite({
  ...(start.pgdata ? { dataDir: start.pgdata } : {}),
  startParams: [...PGlite.defaultStartParams, ...start.startParams, ...GENERIC_PLAN_START_PARAMS],
});
const { run } = pgliteStatementRunner(pg, new PreparedStatementPolicy(start.preparedStatements));

/** PGlite's parsers with the caller's own types left as text, per set of such types. */
const textTypeParsers = new Map<string, typeof pg.parsers>();
function parsersLeaving(textTypes: number[]): typeof pg.parsers {
  const key = textTypes.join(',');
  let parsers = textTypeParsers.get(key);
  if (!parsers) {
    parsers = { ...pg.parsers };
    for (const type of textTypes) parsers[type] = (value: string) => value;
    textTypeParsers.set(key, parsers);
  }
  return parsers;
}

function parsed(raw: RawResults, textTypes: number[]): ThreadResults {
  return { ...raw, rows: toResults<unknown[]>(raw, parsersLeaving(textTypes), 'array').rows };
}

/** Statement texts by the number the caller gives each the first time it sends it. */
const texts = new Map<number, string>();

/** Open transactions by id: the PGlite transaction, how the main thread ends it, and how it ended. */
const transactions = new Map<number, { tx: Transaction; end: (commit: boolean) => void; outcome: Promise<{ error?: unknown }> }>();
let transactionIds = 0;
/** Thrown inside PGlite's transaction callback to have it roll back. */
const ROLLBACK = Symbol('rollback');

async function begin(): Promise<number> {
  const id = ++transactionIds;
  let began!: () => void;
  const opened = new Promise<void>((resolve) => (began = resolve));
  let end!: (commit: boolean) => void;
  let tx!: Transaction;
  const outcome = pg
    .transaction(
      (inner) =>
        new Promise<void>((commit, rollback) => {
          tx = inner;
          end = (yes) => (yes ? commit() : rollback(ROLLBACK));
          began();
        }),
    )
    .then(
      (): { error?: unknown } => ({}),
      (error: unknown): { error?: unknown } => (error === ROLLBACK ? {} : { error }),
    );
  // BEGIN itself can fail (the database closing): then the callback never ran.
  const first = await Promise.race([opened.then(() => undefined), outcome]);
  if (first?.error !== undefined) throw first.error;
  transactions.set(id, { tx, end, outcome });
  return id;
}

async function end(id: number, commit: boolean): Promise<void> {
  const open = transactions.get(id);
  if (!open) throw new Error('Transaction is closed');
  transactions.delete(id);
  open.end(commit);
  const { error } = await open.outcome;
  if (error !== undefined) throw error;
}

async function answer(request: ThreadRequest): Promise<unknown> {
  switch (request.op) {
    case 'query': {
      const { params, textTypes } = request;
      const text = request.text ?? texts.get(request.textId!);
      if (text === undefined) throw new Error(`unknown statement ${request.textId}`);
      if (request.text !== undefined && request.textId !== undefined) texts.set(request.textId, request.text);
      if (request.tx === undefined) {
        return parsed(await pg._runExclusiveTransaction(() => pg._runExclusiveQuery(() => run(text, params, false))), textTypes);
      }
      const open = transactions.get(request.tx);
      if (!open || open.tx.closed) throw new Error('Transaction is closed');
      return parsed(await pg._runExclusiveQuery(() => run(text, params, true)), textTypes);
    }
    case 'begin':
      return begin();
    case 'end':
      return end(request.tx, request.commit);
    case 'close':
      if (!pg.closed) await pg.close();
      return undefined;
  }
}

/** An error as plain data: its message and PostgreSQL's fields (code, detail, constraint…), which db/errors.ts reads. */
function errorData(error: unknown): ThreadReply & { ok: false } {
  if (!(error instanceof Error)) return { id: 0, ok: false, error: { message: String(error) } };
  const fields: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(error)) {
    if (key === 'params' || key === 'queryOptions') continue;
    if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) fields[key] = value;
  }
  return { id: 0, ok: false, error: { ...fields, message: error.message, name: error.name } };
}

port.on('message', async (request: ThreadRequest) => {
  let reply: ThreadReply;
  try {
    reply = { id: request.id, ok: true, value: await answer(request) };
  } catch (error) {
    reply = { ...errorData(error), id: request.id };
  }
  try {
    port.postMessage(reply);
  } catch (error) {
    // A value the structured clone cannot copy: the caller still gets an answer.
    port.postMessage({ ...errorData(error), id: request.id });
  }
});

pg.waitReady.then(
  () => port.postMessage({ id: 0, ok: true, value: 'ready' } satisfies ThreadReply),
  (error: unknown) => port.postMessage({ ...errorData(error), id: 0 }),
);
