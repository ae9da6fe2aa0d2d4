/**
 * Configuration from the environment. Every key has a default, a description and a parser;
 * `loadConfig` validates all of them at start-up and throws one ConfigError naming the first
 * bad variable and what it allows, so a typo fails fast instead of at the first request.
 */
import path from 'node:path';

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`);
  }
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface Config {
  port: number;
  host: string;
  /** Public base URL, no trailing slash: the `iss` of every token and the base of every endpoint. */
  issuer: string;
  /** `postgres://…` for a PostgreSQL server; undefined for the embedded PGlite database. */
  databaseUrl: string | undefined;
  databasePoolSize: number;
  /** Directory of the embedded database, or `memory://` for a throwaway in-memory one. */
  dataDir: string;
  accessTokenTtl: number;
  refreshTokenTtl: number;
  authCodeTtl: number;
  /** Seconds in which a just-rotated refresh token may be retried without revoking its family. */
  refreshTokenReuseGrace: number;
  /** Origins allowed to call the token, revocation, introspection, metadata and JWKS endpoints. */
  corsOrigins: string[];
  logLevel: LogLevel;
  /** Serve the demo pages (/demo/callback). On by default for the embedded database only. */
  demo: boolean;
}

type Env = Record<string, string | undefined>;

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(name, `must be a whole number from ${min} to ${max}, got "${raw}"`);
  const value = Number(raw.trim());
  if (value < min || value > max) throw new ConfigError(name, `must be a whole number from ${min} to ${max}, got ${value}`);
  return value;
}

function url(name: string, raw: string, protocols: string[]): URL {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, `must be a URL (${protocols.join(' or ')}), got "${raw}"`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `must use ${protocols.join(' or ')}, got "${parsed.protocol}"`);
  }
  return parsed;
}

function flag(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
  if (['0', 'false', 'no', 'off'].includes(raw)) return false;
  throw new ConfigError(name, `must be true or false, got "${env[name]}"`);
}

export function loadConfig(env: Env = process.env): Config {
  const port = integer(env, 'PORT', 3000, 0, 65535);
  const host = env.HOST?.trim() || '127.0.0.1';

  const issuerRaw = env.ISSUER?.trim() || `http://localhost:${port}`;
  const issuerUrl = url('ISSUER', issuerRaw, ['http:', 'https:']);
  if (issuerUrl.search || issuerUrl.hash) throw new ConfigError('ISSUER', 'must not carry a query or fragment');
  const issuer = issuerUrl.href.replace(/\/+$/, '');

  const databaseUrl = env.DATABASE_URL?.trim() || undefined;
  if (databaseUrl) url('DATABASE_URL', databaseUrl, ['postgres:', 'postgresql:']);

  const dataDirRaw = env.DATA_DIR?.trim() || './data';
  const dataDir = dataDirRaw === 'memory://' ? dataDirRaw : path.resolve(dataDirRaw);
  if (dataDirRaw.includes('://') && dataDirRaw !== 'memory://') {
    throw new ConfigError('DATA_DIR', `must be a directory path or memory://, got "${dataDirRaw}"`);
  }

  const logLevel = (env.LOG_LEVEL?.trim() || 'info') as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}, got "${env.LOG_LEVEL}"`);
  }

  const corsOrigins = (env.CORS_ORIGINS ?? '*')
    .split(',')
    .map((origin) => origin.trim())
    .filter(Boolean);
  for (const origin of corsOrigins) {
    if (origin !== '*') url('CORS_ORIGINS', origin, ['http:', 'https:']);
  }

  return {
    port,
    host,
    issuer,
    databaseUrl,
    databasePoolSize: integer(env, 'DATABASE_POOL_SIZE', 10, 1, 1000),
    dataDir,
    accessTokenTtl: integer(env, 'ACCESS_TOKEN_TTL', 3600, 1, 86_400),
    refreshTokenTtl: integer(env, 'REFRESH_TOKEN_TTL', 2_592_000, 1, 31_536_000),
    authCodeTtl: integer(env, 'AUTH_CODE_TTL', 600, 1, 600),
    refreshTokenReuseGrace: integer(env, 'REFRESH_TOKEN_REUSE_GRACE', 0, 0, 300),
    corsOrigins,
    logLevel,
    demo: flag(env, 'DEMO', databaseUrl === undefined),
  };
}
