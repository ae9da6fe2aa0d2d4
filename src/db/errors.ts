/**
 * Recognising PostgreSQL errors the same way for both drivers: postgres.js and PGlite both set
 * the SQLSTATE on `code`, and Drizzle may wrap either in an error whose `cause` holds it.
 */
import { POOL_WAIT_TIMEOUT } from './pool-admission.js';

const FOREIGN_KEY_VIOLATION = '23503';

const SQLSTATE = /^[0-9A-Z]{5}$/;

/** The error and the errors in its `cause` chain (Drizzle's DrizzleQueryError wraps the driver's), a few deep. */
function* causeChain(error: unknown): Generator<{ code?: unknown; message?: unknown }> {
  for (let e = error, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    yield e as { code?: unknown; message?: unknown };
  }
}

/** The first error in the cause chain that carries a SQLSTATE: what the database itself answered. */
function databaseError(error: unknown): { code: string; message?: unknown } | undefined {
  for (const link of causeChain(error)) if (typeof link.code === 'string' && SQLSTATE.test(link.code)) return link as { code: string; message?: unknown };
  return undefined;
}

export function sqlState(error: unknown): string | undefined {
  return databaseError(error)?.code;
}

/**
 * PostgreSQL's own words for an error it answered (`permission denied for database app (SQLSTATE 42501)`), found in the
 * cause chain; undefined for anything else. What an operator needs at start-up, where the wrapper shows only the query.
 */
export function databaseRefusal(error: unknown): string | undefined {
  const answered = databaseError(error);
  return typeof answered?.message === 'string' ? `${answered.message} (SQLSTATE ${answered.code})` : undefined;
}

/** A row referred to a row that does not exist (any more): e.g. its user was deleted meanwhile. */
export function isForeignKeyViolation(error: unknown): boolean {
  return sqlState(error) === FOREIGN_KEY_VIOLATION;
}

const QUERY_CANCELED = '57014';

export const DEADLINE_EXCEEDED_MESSAGE = 'The database took too long to answer this query; narrow its filter or ask for fewer rows.';

/** PostgreSQL cancelled the statement: it ran past `statement_timeout` (DATABASE_STATEMENT_TIMEOUT_MS). */
export function isStatementTimeout(error: unknown): boolean {
  return sqlState(error) === QUERY_CANCELED;
}

const DEADLOCK_DETECTED = '40P01';

/** PostgreSQL aborted the statement to break a lock cycle with another transaction; nothing it did remains. */
export function isDeadlock(error: unknown): boolean {
  return sqlState(error) === DEADLOCK_DETECTED;
}

/** Driver and socket error codes that mean the database server could not be reached or refused the session. */
const CONNECTION_FAILURES: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  ETIMEDOUT: 'timed out',
  CONNECT_TIMEOUT: 'timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  CONNECTION_CLOSED: 'connection closed',
  CONNECTION_DESTROYED: 'connection closed',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  ENOTDIR: 'not a directory',
  EEXIST: 'it exists and is not a directory',
  EROFS: 'read-only file system',
  ENOSPC: 'no space left on device',
};

/** SQLSTATE classes a server answers a connection attempt with: 08 connection, 28 authorization, 3D no such database, 53 resources, 57P03 starting up. */
const REFUSED_SESSION = /^(08|28|3D|53|57P03)/;

/**
 * The database could not be opened at all: the server is unreachable or refused the session, or the embedded data
 * directory cannot be created. The operator has to fix the setting it names, so it is reported in one line, never a stack.
 */
export class DatabaseUnavailableError extends Error {
  override readonly name = 'DatabaseUnavailableError';
  constructor(
    readonly location: string,
    options: { cause: unknown; reason?: string },
  ) {
    super(`cannot open the database ${location}: ${options.reason ?? reasonOf(options.cause)}`, { cause: options.cause });
  }

  /** Whether `error`, thrown while opening a database, is one of these rather than a defect. */
  static isConnectionFailure(error: unknown): boolean {
    const state = sqlState(error);
    if (state !== undefined) return REFUSED_SESSION.test(state);
    const code = (error as { code?: unknown } | undefined)?.code;
    return typeof code === 'string' && Object.hasOwn(CONNECTION_FAILURES, code);
  }
}

function reasonOf(error: unknown): string {
  if (sqlState(error) !== undefined) return (error as Error).message;
  const code = (error as { code?: unknown } | undefined)?.code;
  return (typeof code === 'string' && Object.hasOwn(CONNECTION_FAILURES, code) ? CONNECTION_FAILURES[code] : undefined) ?? String((error as Error)?.message ?? error);
}

/** What a 503 for an unreachable database tells the client to wait (`Retry-After`) before trying again. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;
/** What a 503 for an unreachable database says (OAuth's error_description, REST's message). */
export const DATABASE_UNAVAILABLE = 'the service is unavailable for a moment; try again shortly';

/** Driver codes of a statement that failed because the connection to the server failed, not because of the statement. */
const LOST_CONNECTION = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'CONNECT_TIMEOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'CONNECTION_CLOSED', 'CONNECTION_DESTROYED', 'CONNECTION_ENDED']);

/**
 * SQLSTATEs of a server that is away or refusing sessions: 08 connection, 28 authorization, 3D no such database, 53300
 * too many connections, 57P01–57P03 shutting down or starting; and 25006, a server taking no writes (a standby after a
 * failover, default_transaction_read_only), which the primary's return puts right.
 */
const SERVER_AWAY = /^(08|28|3D|53300|57P0[123]|25006)/;

/**
 * Whether a statement failed because the database is out of reach (down, restarting, unreachable, the embedded one
 * closed, every pooled connection busy past DATABASE_POOL_WAIT_MS) rather than because of what it asked: the request may succeed later, so it deserves a 503 in its protocol's
 * format (OAuth `temporarily_unavailable`, REST `UNAVAILABLE`, GraphQL `UNAVAILABLE`) with `Retry-After`, not a 500.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (const { code, message } of causeChain(error)) {
    if (typeof code === 'string' && (LOST_CONNECTION.has(code) || (SQLSTATE.test(code) && SERVER_AWAY.test(code)))) return true;
    if (message === 'PGlite is closed' || code === POOL_WAIT_TIMEOUT) return true;
  }
  return false;
}
