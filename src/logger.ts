import { pino, type Logger } from 'pino';
import type { LogLevel } from './config.js';

export type { Logger };

/**
 * Paths pino censors. Request lines are built from method, path, status and id only, and
 * security events carry identifiers only, so nothing secret is ever passed in the first
 * place; this is the second line of defence for a field passed by mistake. Exact paths only:
 * wildcard paths (`*.password`) are evaluated on every line and cost more than the rest of it.
 */
const REDACTED_KEYS = [
  'password',
  'client_secret',
  'clientSecret',
  'code',
  'code_verifier',
  'refresh_token',
  'access_token',
  'token',
  'authorization',
  'cookie',
];
const REDACTED_PATHS = [
  ...REDACTED_KEYS,
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
];

/**
 * A JSON logger. Without a destination it writes to stdout asynchronously: a synchronous write
 * per line (pino's default) cost a request about as much as its whole SQL round trip. Lines
 * written while a write is in flight are batched; `flushLogger` drains them at shutdown.
 */
export function createLogger(level: LogLevel, destination?: NodeJS.WritableStream): Logger {
  const options = { level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } };
  return pino(options, (destination as pino.DestinationStream | undefined) ?? pino.destination({ dest: 1, sync: false }));
}

/**
 * The logger of the per-request access line. That line is built from id, method, path, status and
 * time only, so the `req.headers.*` paths have nothing to find in it; their redactor still walks
 * the `req` and `res` objects of every line, so this child keeps only the top-level keys.
 */
export function accessLogger(logger: Logger): Logger {
  return logger.child({}, { redact: { paths: REDACTED_KEYS, censor: '[redacted]' } });
}

/** Writes out whatever the logger still buffers (call before the process exits). */
export function flushLogger(logger: Logger): Promise<void> {
  return new Promise((resolve) => logger.flush(() => resolve()));
}
