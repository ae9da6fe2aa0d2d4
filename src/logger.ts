import { pino, type Logger } from 'pino';
import type { LogLevel } from './config.js';

export type { Logger };

/**
 * Nothing secret is passed to the logger in the first place; this is the second line of defence. Exact paths only:
 * wildcard paths are evaluated on every line.
 */
const REDACTED_KEYS = [
  'password',
  'client_secret',
  'clientSecret',
  'client_assertion',
  'code',
  'code_verifier',
  'device_code',
  'user_code',
  'refresh_token',
  'access_token',
  'id_token',
  'id_token_hint',
  'logout_token',
  'registration_access_token',
  'token',
  'csrf_token',
  'page_token',
  'authorization',
  'cookie',
  'dpop',
];
const REDACTED_PATHS = [
  ...REDACTED_KEYS,
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers.dpop',
  'res.headers["set-cookie"]',
];

/**
 * A write per line costs a system call per request under load: lines are written 4 KiB at a time, and whatever is
 * buffered at least every 100 ms, so a quiet server still shows each line; pino writes what is left when the process exits.
 */
const BATCH_BYTES = 4096;
const FLUSH_INTERVAL_MS = 100;

/** Writes to stdout asynchronously in batches; `flushLogger` drains them at shutdown. */
export function createLogger(level: LogLevel, destination?: NodeJS.WritableStream): Logger {
  const options = { level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } };
  return pino(
    options,
    (destination as pino.DestinationStream | undefined) ?? pino.destination({ dest: 1, sync: false, minLength: BATCH_BYTES, periodicFlush: FLUSH_INTERVAL_MS }),
  );
}

/** The access line holds no `req.headers`, but the redactor would still walk `req` and `res`: keep only top-level keys. */
export function accessLogger(logger: Logger): Logger {
  return logger.child({}, { redact: { paths: REDACTED_KEYS, censor: '[redacted]' } });
}

export function flushLogger(logger: Logger): Promise<void> {
  return new Promise((resolve) => logger.flush(() => resolve()));
}
