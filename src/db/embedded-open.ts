/**
 * Opening an embedded data directory, up to a running PGlite: the directory's lock, its cluster (created by a child
 * process when new, pglite-memory.ts) and the start of PGlite, on the caller's thread or its own. Neither Drizzle nor
 * PGlite's modules are loaded here, so `fieldgate serve` can start the database's thread first and load the app while
 * PostgreSQL starts (docs/PERFORMANCE.md, round 20); database.ts wraps what this opens for Drizzle.
 */
import { mkdirSync } from 'node:fs';
import type { Config } from '../config.js';
import { acquireDataDirLock, type DataDirLock } from './data-dir-lock.js';
import { clusterDirectory, hasCluster } from './embedded-cluster.js';
import { DatabaseUnavailableError } from './errors.js';
import { EMBEDDED_SETTINGS, initializeDataDir, limitWasmCompilation } from './performance/pglite-memory.js';
import { startPgliteThread, type PgliteThread } from './performance/pglite-thread.js';

/** A started embedded database and the lock on its data directory (none in memory), released by whoever closes it. */
export interface OpenedEmbedded<Client> {
  client: Client;
  lock: DataDirLock | undefined;
}

/** Whether `dataDir` holds no embedded database yet (memory:// never does). */
export function isNewEmbeddedDataDir(dataDir: string): boolean {
  return dataDir === 'memory://' || !hasCluster(clusterDirectory(dataDir));
}

/**
 * Locks `dataDir`, creates its cluster if it has none, and starts PGlite on it with `start` (given the cluster's
 * directory, or undefined for memory://). Failures name what the operator can fix, as DatabaseUnavailableError.
 */
export async function openEmbedded<Client>(dataDir: string, start: (pgdata: string | undefined) => Promise<Client>): Promise<OpenedEmbedded<Client>> {
  limitWasmCompilation();
  let lock: DataDirLock | undefined;
  if (dataDir !== 'memory://') {
    try {
      mkdirSync(dataDir, { recursive: true });
      lock = acquireDataDirLock(dataDir);
    } catch (error) {
      throw openingFailure(dataDir, error);
    }
  }
  try {
    const pgdata = dataDir === 'memory://' ? undefined : clusterDirectory(dataDir);
    if (pgdata) await initializeDataDir(pgdata);
    return { client: await start(pgdata), lock };
  } catch (error) {
    if (!lock) throw error;
    lock.release();
    throw embeddedStartFailure(dataDir, error);
  }
}

/** `openEmbedded` with PGlite on a thread of its own (pglite-thread.ts), started with the embedded settings. */
export function openEmbeddedThread(dataDir: string, preparedStatements: number): Promise<OpenedEmbedded<PgliteThread>> {
  return openEmbedded(dataDir, (pgdata) => startPgliteThread({ pgdata, startParams: EMBEDDED_SETTINGS, preparedStatements }));
}

/** An error from opening the database, as the one-line DatabaseUnavailableError when it names the setting's fault. */
export function openingFailure(location: string, error: unknown): unknown {
  return DatabaseUnavailableError.isConnectionFailure(error) ? new DatabaseUnavailableError(location, { cause: error }) : error;
}

/**
 * The embedded engine could not create or start its cluster. PGlite says only that it "failed to initialize": the
 * causes an operator can fix are the directory's, so the one line names them rather than a stack trace.
 */
function embeddedStartFailure(dataDir: string, error: unknown): DatabaseUnavailableError {
  if (DatabaseUnavailableError.isConnectionFailure(error)) return new DatabaseUnavailableError(dataDir, { cause: error });
  const detail = String((error as Error)?.message ?? error).split('\n')[0];
  return new DatabaseUnavailableError(dataDir, {
    cause: error,
    reason:
      `the embedded database did not start (${detail}); DATA_DIR must be a directory this user can write (mode 0700 or 0750), ` +
      'on a disk with free space, holding a database made by this version of Fieldgate',
  });
}

/**
 * The embedded thread the configuration asks for (no DATABASE_URL, DATABASE_EMBEDDED_THREAD on), opening, for
 * `openConfiguredDatabase` to take over; undefined when it asks for none.
 */
export function openConfiguredEmbeddedThread(
  config: Pick<Config, 'databaseUrl' | 'databaseEmbeddedThread' | 'dataDir' | 'databasePreparedStatements'>,
): Promise<OpenedEmbedded<PgliteThread>> | undefined {
  if (config.databaseUrl || !config.databaseEmbeddedThread) return undefined;
  return openEmbeddedThread(config.dataDir, config.databasePreparedStatements);
}

/** Closes what `openEmbedded` opened (an opening that failed holds nothing). */
export async function closeEmbedded(opening: Promise<OpenedEmbedded<{ close(): Promise<void> }>>): Promise<void> {
  const opened = await opening.catch(() => undefined);
  try {
    await opened?.client.close();
  } finally {
    opened?.lock?.release();
  }
}
