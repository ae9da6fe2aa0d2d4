/**
 * Opens the one database the service runs on: embedded PGlite (persisted in DATA_DIR, or in
 * memory) or a PostgreSQL server through postgres.js. Both are driven through the same Drizzle
 * schema and relations, so nothing outside this file knows which one it talks to.
 */
import { fileURLToPath } from 'node:url';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import type { Sql } from 'postgres';
import { sql } from 'drizzle-orm';
import type { PgAsyncDatabase } from 'drizzle-orm/pg-core/async/db';
import { relations, type Relations } from './relations.js';
import { DEFAULT_PREPARED_STATEMENTS } from '../config.js';
import { PreparedStatementPolicy, withPreparedStatements } from './performance/prepared-statements.js';
import { GENERIC_PLAN_START_PARAMS, withPgliteStatements, type PgliteQueryClient } from './performance/pglite-statements.js';
import type { PgliteThread } from './performance/pglite-thread.js';
import { EMBEDDED_SETTINGS } from './performance/pglite-memory.js';
import { openEmbedded, openEmbeddedThread, openingFailure, type OpenedEmbedded } from './embedded-open.js';
import { DatabaseUnavailableError, sqlState } from './errors.js';
import { PIPELINE_DEPTH, PoolAdmission, withPoolAdmission, type PoolLoad } from './pool-admission.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Db = PgAsyncDatabase<any, Relations>;

export const MIGRATIONS_FOLDER = fileURLToPath(new URL('../../drizzle', import.meta.url));

/** The migrations this version brings, by name, as Drizzle's migrator records them. */
function localMigrations(): string[] {
  return readdirSync(MIGRATIONS_FOLDER, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(join(MIGRATIONS_FOLDER, entry.name, 'migration.sql')))
    .map((entry) => entry.name);
}

/** The rows of a raw statement's result: postgres.js answers an array of rows, PGlite an object holding them. */
export function rowsOf<T>(result: unknown): T[] {
  return ((result as { rows?: unknown }).rows ?? result) as T[];
}

/** Whether every migration of this version is recorded as applied; false on any doubt, so the locked path decides. */
async function isMigrated(db: Db): Promise<boolean> {
  try {
    const [table] = rowsOf<{ present: boolean }>(await db.execute(sql`select to_regclass('drizzle.__drizzle_migrations') is not null as present`));
    if (!table?.present) return false;
    const applied = new Set(rowsOf<{ name: string | null }>(await db.execute(sql`select name from drizzle.__drizzle_migrations`)).map((row) => row.name));
    return localMigrations().every((name) => applied.has(name));
  } catch {
    return false;
  }
}

/**
 * postgres.js learns how to read arrays from a catalog query each new connection runs first, and the pool shares what
 * the first that succeeds learns. Should none succeed (a statement_timeout shorter than that query cancels it), a
 * `text[]` column — a client's scopes, redirect URIs, a grant's resources — would come back as one `{a,b}` string, and
 * `includes` would search it as text. So the service does not start until the pool reads an array as an array.
 */
async function requireArrayTypes(db: Db, location: string): Promise<void> {
  const [row] = rowsOf<{ probe: unknown }>(await db.execute(sql`select array['fieldgate']::text[] as probe`));
  if (!Array.isArray(row?.probe)) {
    throw new DatabaseUnavailableError(location, {
      cause: row?.probe,
      reason: "PostgreSQL cancelled the driver's query for its array types: is statement_timeout (the role's, or DATABASE_STATEMENT_TIMEOUT_MS) a few milliseconds?",
    });
  }
}

/** Fixed key of the PostgreSQL advisory lock that serializes migrations across instances. */
const MIGRATION_LOCK_KEY = 0x6669656c; // "fiel"

export interface QueryListener {
  (query: string, params: unknown[]): void;
}

export interface DatabaseOptions {
  databaseUrl?: string | undefined;
  dataDir?: string;
  poolSize?: number;
  /** Most statement texts run as named prepared statements (0: none); see docs/PERFORMANCE.md. */
  preparedStatements?: number;
  /** PostgreSQL's statement_timeout on the pool's connections (0 or absent: none); migrations run on a connection of their own, without it. */
  statementTimeoutMs?: number;
  /** Milliseconds a statement may wait for one of the pool's connections before it is refused (0 or absent: no limit). */
  poolWaitMs?: number;
  /**
   * Runs the embedded database on a thread of its own (pglite-thread.ts) rather than the caller's; or the thread as
   * `openEmbeddedThread` is already opening it, for this `dataDir` and `preparedStatements` (what `fieldgate serve` does
   * before it loads the app).
   */
  embeddedThread?: boolean | Promise<OpenedEmbedded<PgliteThread>>;
}

export interface Database {
  readonly db: Db;
  readonly kind: 'pglite' | 'postgres';
  /** Human-readable location for start-up messages (never includes a password). */
  readonly location: string;
  /**
   * Applies pending migrations, then runs `bootstrap` (one-time data such as the first signing
   * key). On PostgreSQL both run under an advisory lock, so instances starting together do this once; a start that
   * finds every migration applied and `bootstrapped` true takes no lock and changes nothing.
   */
  migrate(bootstrap?: (db: Db) => Promise<void>, bootstrapped?: (db: Db) => Promise<boolean>): Promise<void>;
  /**
   * Runs `fn` while holding the lock the migrations run under, so one-time work that checks before it writes (the demo
   * seed) runs in one instance at a time; `fn` uses `db` as usual. The embedded database has one process anyway.
   */
  exclusively<T>(fn: () => Promise<T>): Promise<T>;
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;
  /** How busy the PostgreSQL pool is (for /metrics); absent on the embedded database, which has no pool. */
  readonly poolLoad?: () => PoolLoad;
  /** Subscribes to every SQL statement sent (used by tests to prove column-level loading). */
  onQuery(listener: QueryListener): () => void;
  close(): Promise<void>;
}

/**
 * postgres.js splits the URL's host at its first colon, so `postgres://…@[::1]:5432/db` would look up a host named `[`.
 * An IPv6 literal is therefore handed over as options: lists of one host and one port, which the driver takes as they
 * are (a plain string would be split at its colons again), though its types name only the string form.
 */
function ipv6Host(databaseUrl: string): { host?: string; port?: number } {
  let url: URL;
  try {
    url = new URL(databaseUrl);
  } catch {
    return {};
  }
  if (!url.hostname.startsWith('[')) return {};
  return { host: [url.hostname.slice(1, -1)], port: [Number(url.port || 5432)] } as unknown as { host: string; port: number };
}

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  const listeners = new Set<QueryListener>();
  const logger = {
    logQuery(query: string, params: unknown[]) {
      for (const listener of listeners) listener(query, params);
    },
  };
  const onQuery = (listener: QueryListener) => {
    listeners.add(listener);
    return () => listeners.delete(listener);
  };

  const databaseUrl = options.databaseUrl;
  if (databaseUrl) {
    // Each driver is loaded only when used: a one-shot CLI command should not pay for both.
    const [{ default: postgres }, { drizzle: drizzlePostgres }, { migrate: migratePostgres }] = await Promise.all([
      import('postgres'),
      import('drizzle-orm/postgres-js'),
      import('drizzle-orm/postgres-js/migrator'),
    ]);
    const ipv6 = ipv6Host(databaseUrl);
    const preparedStatements = options.preparedStatements ?? DEFAULT_PREPARED_STATEMENTS;
    const poolSize = options.poolSize ?? 10;
    const client = postgres(databaseUrl, {
      ...ipv6,
      max: poolSize,
      // 0 means none at all (a pooler in transaction mode): the driver's own statements (COMMIT) and Drizzle's named
      // queries would otherwise still be prepared, and a COMMIT retried on another server connection reads as ROLLBACK.
      ...(preparedStatements === 0 ? { prepare: false } : {}),
      onnotice: () => {},
      connection: { application_name: 'fieldgate', ...(options.statementTimeoutMs ? { statement_timeout: options.statementTimeoutMs } : {}) },
    });
    let healthClient: Sql | undefined;
    const preparing = withPreparedStatements(client, new PreparedStatementPolicy(preparedStatements));
    const admission = new PoolAdmission(poolSize, PIPELINE_DEPTH, options.poolWaitMs ?? 0);
    const admitted = withPoolAdmission(preparing, admission);
    const db = drizzlePostgres({ client: admitted, relations, logger });
    const appDb = db as unknown as Db;
    const url = new URL(databaseUrl);
    url.password = '';
    // The location is printed (banner, errors): no password, in the userinfo or in a query parameter.
    for (const [name] of url.searchParams) if (/pass|secret|key/i.test(name)) url.searchParams.set(name, '***');
    /** Runs `fn` on a connection of its own that holds the advisory lock serializing migrations across instances. */
    const underMigrationLock = async <T>(applicationName: string, fn: (lockClient: Sql) => Promise<T>): Promise<T> => {
      // Unprepared, as the health check's: a few statements, and nothing left behind for a pooler to misroute.
      const lockClient = postgres(databaseUrl, { ...ipv6, max: 1, prepare: false, onnotice: () => {}, connection: { application_name: applicationName } });
      try {
        // The first statement of every process: where an unreachable server or a wrong URL shows. It cannot fail on
        // its own, so any answer the server gives to it (an unknown parameter in the URL's query) is the URL's fault.
        await lockClient`select pg_advisory_lock(${MIGRATION_LOCK_KEY})`.catch((error: unknown) => {
          throw sqlState(error) === undefined ? openingFailure(url.href, error) : new DatabaseUnavailableError(url.href, { cause: error });
        });
        return await fn(lockClient);
      } finally {
        await lockClient`select pg_advisory_unlock(${MIGRATION_LOCK_KEY})`.catch(() => {});
        await lockClient.end({ timeout: 5 });
      }
    };
    return {
      db: appDb,
      kind: 'postgres',
      location: url.href,
      poolLoad: () => admission.load,
      onQuery,
      async migrate(bootstrap, bootstrapped) {
        // Most starts find nothing to do. They then take no lock and run no DDL, so a role with no CREATE right can run
        // the server, and a pooler in transaction mode, where a session's advisory lock cannot be held, is not involved
        // (upgrades there migrate with `fieldgate migrate` on a direct connection: docs/DEPLOYMENT.md).
        if (!((await isMigrated(appDb)) && (bootstrap === undefined || (await bootstrapped?.(appDb)) === true))) {
          // The connection that holds the session-level lock also runs the migrations and the bootstrap, so they neither
          // wait for a pooled connection (a pool of one would deadlock) nor leave prepared statements of a schema that
          // is about to change on the pool.
          await underMigrationLock('fieldgate-migrate', async (migrationClient) => {
            const migrationDb = drizzlePostgres({ client: migrationClient, relations, logger });
            await migratePostgres(migrationDb, { migrationsFolder: MIGRATIONS_FOLDER });
            await bootstrap?.(migrationDb as unknown as Db);
          });
        }
        await requireArrayTypes(appDb, url.href);
      },
      exclusively: (fn) => underMigrationLock('fieldgate-lock', () => fn()),
      // Readiness asks whether PostgreSQL answers, not whether the pool has a connection free: asked on the pool, a burst
      // of slow requests would take every instance out of its load balancer at once. So it has a connection of its own.
      async ping() {
        healthClient ??= postgres(databaseUrl, { ...ipv6, max: 1, prepare: false, onnotice: () => {}, connection: { application_name: 'fieldgate-health' } });
        await healthClient`select 1`;
      },
      async close() {
        await Promise.all([client.end({ timeout: 5 }), healthClient?.end({ timeout: 5 })]);
      },
    };
  }

  const dataDir = options.dataDir ?? 'memory://';
  const preparedStatements = options.preparedStatements ?? DEFAULT_PREPARED_STATEMENTS;
  // The thread starts before Drizzle's PGlite modules load on this one: its start takes longer.
  const openingThread =
    options.embeddedThread === true ? openEmbeddedThread(dataDir, preparedStatements) : options.embeddedThread || undefined;
  openingThread?.catch(() => {}); // awaited below, once the modules are loaded
  const [{ drizzle: drizzlePglite }, { migrate: migratePglite }] = await Promise.all([
    import('drizzle-orm/pglite'),
    import('drizzle-orm/pglite/migrator'),
  ]);
  const { client, lock }: OpenedEmbedded<PgliteQueryClient & { readonly closed: boolean; close(): Promise<void> }> = await (openingThread ??
    openEmbedded(dataDir, async (pgdata) => {
      const { PGlite } = await import('@electric-sql/pglite');
      const pglite = new PGlite({
        ...(pgdata ? { dataDir: pgdata } : {}),
        startParams: [...PGlite.defaultStartParams, ...EMBEDDED_SETTINGS, ...GENERIC_PLAN_START_PARAMS],
      });
      await pglite.waitReady;
      const statements = withPgliteStatements(pglite, new PreparedStatementPolicy(preparedStatements));
      return {
        query: statements.query,
        transaction: statements.transaction,
        get closed() {
          return pglite.closed;
        },
        close: () => pglite.close(),
      };
    }));
  const db = drizzlePglite({ client: client as unknown as PGlite, relations, logger });
  return {
    db: db as unknown as Db,
    kind: 'pglite',
    location: dataDir === 'memory://' ? 'in memory' : dataDir,
    onQuery,
    async migrate(bootstrap) {
      await migratePglite(db, { migrationsFolder: MIGRATIONS_FOLDER });
      await bootstrap?.(db as unknown as Db);
    },
    exclusively: (fn) => fn(),
    async ping() {
      await db.execute(sql`select 1`);
    },
    async close() {
      try {
        if (!client.closed) await client.close();
      } finally {
        lock?.release();
      }
    },
  };
}
