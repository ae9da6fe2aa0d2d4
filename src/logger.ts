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

/** Lines are written 4 KiB at a time, or 100 ms after the first of a batch; pino flushes what is left when the process exits. */
const BATCH_BYTES = 4096;
const BATCH_DELAY_MS = 100;

/** Writes to stdout asynchronously in batches (see `batchedStdout`); `flushLogger` drains them at shutdown. */
export function createLogger(level: LogLevel, destination?: NodeJS.WritableStream): Logger {
  const options = { level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } };
  return pino(options, (destination as pino.DestinationStream | undefined) ?? batchedStdout());
}

/**
 * A write per line costs a system call per request under load; batched, a busy server makes one per ~15 lines, and a
 * quiet one still shows each line within `BATCH_DELAY_MS`.
 */
function batchedStdout(): pino.DestinationStream {
  const stdout = pino.destination({ dest: 1, sync: false, minLength: BATCH_BYTES });
  const write = stdout.write.bind(stdout);
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    timer = undefined;
    // Ended by pino's exit handler once the process exits: nothing left to flush.
    if (!(stdout as { destroyed?: boolean }).destroyed) stdout.flush();
  };
  stdout.write = (line: string) => {
    const accepted = write(line);
    timer ??= setTimeout(flush, BATCH_DELAY_MS).unref();
    return accepted;
  };
  return stdout;
}

/** The access line holds no `req.headers`, but the redactor would still walk `req` and `res`: keep only top-level keys. */
export function accessLogger(logger: Logger): Logger {
  return logger.child({}, { redact: { paths: REDACTED_KEYS, censor: '[redacted]' } });
}

export function flushLogger(logger: Logger): Promise<void> {
  return new Promise((resolve) => logger.flush(() => resolve()));
}
