/** The one way tests look at the SQL a request sends (plugin-drizzle's tests do the same through the Drizzle logger). */
import postgres from 'postgres';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/database.js';
import { createLogger } from '../../src/logger.js';
import { openRuntime, type Runtime } from '../../src/runtime.js';
import { createPostgresDatabase } from './databases.js';
import { LogCapture } from './runtime.js';

/**
 * Statements a cache sends when its answer has grown old: the bearer token's revocation check (cached for
 * REVOCATION_CACHE_MS) and the signing-key set's reload (every SIGNING_KEY_RELOAD_MS, in the background). Whether a
 * request sends them depends on the clock: on a loaded machine a warm-up request a moment before may already be too old,
 * and a long suite outlives the key set. test/tokens/revocation.test.ts and signing-keys.test.ts check the caches themselves.
 */
export const isRevocationCheck = (statement: string) => /\) as revoked$/.test(statement.trim()) && statement.includes('"revoked_access_tokens"."jti"');
export const isSigningKeyReload = (statement: string) => /^select .* from "signing_keys" where /s.test(statement.trim()) && !/\b(insert|update|delete)\b/.test(statement);
const isCacheRefresh = (statement: string) => isRevocationCheck(statement) || isSigningKeyReload(statement);

/** The SQL statements `run` sends, in order, leaving out the caches' refreshes. */
export async function captureSql(runtime: Runtime, run: () => Promise<unknown>): Promise<string[]> {
  const statements: string[] = [];
  const stop = runtime.database.onQuery((query) => {
    if (!isCacheRefresh(query)) statements.push(query);
  });
  try {
    await run();
  } finally {
    stop();
  }
  return statements;
}

/**
 * A runtime on a fresh PostgreSQL database whose server logs every statement (log_statement = all), for checking "one
 * SQL statement per request" on the server's own log rather than on the client. The log is read through the backend's
 * stderr (/proc/self/fd/2) with pg_read_file, which needs a superuser.
 */
export interface ServerLoggedRuntime {
  runtime: Runtime;
  /** The statements of this database the server logged while `run` ran (the reads of the log and the caches' refreshes left out). */
  serverStatements<T>(run: () => Promise<T>): Promise<{ result: T; statements: string[] }>;
  close(): Promise<void>;
}

export async function openServerLoggedRuntime(): Promise<ServerLoggedRuntime> {
  const created = await createPostgresDatabase();
  const name = new URL(created.url).pathname.slice(1);
  const admin = postgres(created.url, { max: 1, onnotice: () => {} });
  await admin.unsafe(`alter database "${name}" set log_statement = 'all'`);
  const config = loadConfig({ ISSUER: 'http://localhost:3000', DATA_DIR: 'memory://', LOG_LEVEL: 'info', DEMO: 'false' });
  const runtime = await openRuntime(config, createLogger(config.logLevel, new LogCapture()), await openDatabase({ databaseUrl: created.url, poolSize: 2 }));
  const logSize = async () => Number((await admin`select size from pg_stat_file('/proc/self/fd/2')`)[0]!.size);
  return {
    runtime,
    async serverStatements(run) {
      const before = await logSize();
      const result = await run();
      const after = await logSize();
      const [{ text }] = (await admin`select pg_read_file('/proc/self/fd/2', ${before}, ${after - before}) as text`) as unknown as [{ text: string }];
      // An entry starts with its line prefix (a timestamp); a statement's own line breaks continue it.
      const entries = text.split(/\n(?=\d{4}-\d\d-\d\d )/);
      const statements = entries.filter(
        (entry) =>
          entry.includes(`@${name} `) &&
          /LOG:\s+(statement|execute)/.test(entry) &&
          !entry.includes('pg_stat_file') &&
          !entry.includes('pg_read_file') &&
          !isCacheRefresh(entry.replace(/^[^\n]*?LOG:\s+(statement|execute [^:]*):/, '')),
      );
      return { result, statements };
    },
    async close() {
      await runtime.close();
      await admin.end();
      await created.drop();
    },
  };
}

/** A node of PostgreSQL's `EXPLAIN (ANALYZE, FORMAT JSON)` plan, as far as the tests read it. */
export interface PlanNode {
  'Relation Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

/** The plan PostgreSQL runs for a statement the app sent, with its parameters, executed (EXPLAIN ANALYZE). */
export async function explainAnalyze(client: postgres.Sql, statement: { query: string; params: unknown[] }): Promise<PlanNode> {
  const [{ 'QUERY PLAN': [explained] }] = (await client.unsafe(`explain (analyze, format json) ${statement.query}`, statement.params as never[])) as unknown as [
    { 'QUERY PLAN': [{ Plan: PlanNode }] },
  ];
  return explained.Plan;
}

/** Rows every scan of `table` produced or read and threw away (filter, index recheck), over all its loops. */
export function rowsReadFrom(table: string, node: PlanNode): number {
  const own =
    node['Relation Name'] === table
      ? (node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Index Recheck'] ?? 0)) * node['Actual Loops']
      : 0;
  return own + (node.Plans ?? []).reduce((sum, child) => sum + rowsReadFrom(table, child), 0);
}
