import { pino, type Logger } from 'pino';
import type { LogLevel } from './config.js';

export type { Logger };

/**
 * Paths pino censors wherever they appear. Request logging never records query strings or
 * bodies in the first place; this list is the second line of defence for anything passed
 * explicitly (for example a security event that carries a request).
 */
const REDACTED_PATHS = [
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
  '*.password',
  '*.client_secret',
  '*.clientSecret',
  '*.code',
  '*.code_verifier',
  '*.refresh_token',
  '*.access_token',
  '*.token',
  '*.authorization',
  '*.cookie',
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
];

export function createLogger(level: LogLevel, destination?: NodeJS.WritableStream): Logger {
  const options = { level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } };
  return destination ? pino(options, destination as pino.DestinationStream) : pino(options);
}
