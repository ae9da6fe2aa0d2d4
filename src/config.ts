/**
 * Configuration from the environment. Every key has a default, a description and a parser;
 * `loadConfig` validates all of them at start-up and throws one ConfigError naming the first
 * bad variable and what it allows, so a typo fails fast instead of at the first request.
 */
import path from 'node:path';
import { isIP } from 'node:net';

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

type Env = Record<string, string | undefined>;

/** Most distinct SQL texts run as named prepared statements per process, unless configured. */
export const DEFAULT_PREPARED_STATEMENTS = 256;

// ---------------------------------------------------------------- GraphQL limits

export interface GraphQLLimits {
  /** Lexical tokens in one document. */
  maxTokens: number;
  /** Nesting of selections, counting leaf fields (`{ products { id } }` is 2). */
  maxDepth: number;
  /** Aliased fields in one operation. */
  maxAliases: number;
  /** Directives in one operation. */
  maxDirectives: number;
  /**
   * Cost: each field 1, list selections times the list's `limit` (nested lists too), so it also
   * bounds the rows one request loads.
   */
  maxCost: number;
}

export const DEFAULT_LIMITS: Readonly<GraphQLLimits> = {
  maxTokens: 1000,
  maxDepth: 8,
  maxAliases: 15,
  maxDirectives: 10,
  // Every Product field for 200 products (10 reviews each) costs 13 801; every Order field
  // with its items (100 at most; product ids, not products) for 200 orders, about 61 600.
  maxCost: 100_000,
};

export const LIMIT_VARIABLES: Readonly<Record<keyof GraphQLLimits, string>> = {
  maxTokens: 'GRAPHQL_MAX_TOKENS',
  maxDepth: 'GRAPHQL_MAX_DEPTH',
  maxAliases: 'GRAPHQL_MAX_ALIASES',
  maxDirectives: 'GRAPHQL_MAX_DIRECTIVES',
  maxCost: 'GRAPHQL_MAX_COST',
};

/** The limits from the environment (GRAPHQL_MAX_*), over the defaults; a bad value throws ConfigError. */
export function loadLimits(env: Env = process.env): GraphQLLimits {
  const limits = { ...DEFAULT_LIMITS };
  for (const key of Object.keys(LIMIT_VARIABLES) as (keyof GraphQLLimits)[]) {
    const name = LIMIT_VARIABLES[key];
    const raw = env[name]?.trim();
    if (raw === undefined || raw === '') continue;
    if (!/^\d+$/.test(raw) || Number(raw) < 1 || !Number.isSafeInteger(Number(raw))) {
      throw new ConfigError(name, `must be a whole number of at least 1, got "${raw}"`);
    }
    limits[key] = Number(raw);
  }
  return limits;
}


// ---------------------------------------------------------------- Config

export interface Config {
  port: number;
  host: string;
  /** Public base URL, no trailing slash: the `iss` of every token and the base of every endpoint. */
  issuer: string;
  /** `postgres://…` for a PostgreSQL server; undefined for the embedded PGlite database. */
  databaseUrl: string | undefined;
  databasePoolSize: number;
  /** Most distinct SQL texts run as named prepared statements on PostgreSQL (0: none). */
  databasePreparedStatements: number;
  /** Directory of the embedded database, or `memory://` for a throwaway in-memory one. */
  dataDir: string;
  accessTokenTtl: number;
  refreshTokenTtl: number;
  authCodeTtl: number;
  // Device authorization grant (RFC 8628)
  /** Seconds a device code and its user code stay valid (DEVICE_CODE_TTL). */
  deviceCodeTtl: number;
  /** Seconds in which a just-rotated refresh token may be retried without revoking its family. */
  refreshTokenReuseGrace: number;
  /** Origins allowed to call the token, revocation, introspection, metadata and JWKS endpoints. */
  corsOrigins: string[];
  logLevel: LogLevel;
  /** Serve the demo pages (/demo/callback). On by default for the embedded database only. */
  demo: boolean;
  /**
   * Serve the front door: the page at `/`, GraphiQL on GET /graphql from a browser, and the API
   * reference at /api-reference. On by default in demo mode only (FRONT_DOOR).
   */
  frontDoor: boolean;
  /**
   * Express `trust proxy`: which proxies' X-Forwarded-For to believe when working out a client's
   * IP (login throttling is per IP). false, a hop count, or addresses / CIDRs / loopback, linklocal, uniquelocal.
   */
  trustProxy: boolean | number | string[];
  /** Port of a separate listener (on HOST) that serves GET /metrics; undefined: none (METRICS_PORT). */
  metricsPort: number | undefined;
  /** Bearer token that opens GET /metrics on the main port; undefined: not served there (METRICS_TOKEN). */
  metricsToken: string | undefined;
  /** Abuse limits of the GraphQL API (and so of the REST layer on top of it). */
  graphqlLimits: GraphQLLimits;
  /** Seconds between background sweeps of expired rows (0: no background sweep; `fieldgate janitor` still works). */
  janitorInterval: number;
  /** Seconds expired codes and refresh tokens, and revoked grants, are kept (never less than the access-token TTL). */
  janitorRetention: number;
  /** Most rows one cleanup statement deletes. */
  janitorBatchSize: number;
}

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

const PROXY_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

function trustProxy(env: Env): boolean | number | string[] {
  const raw = env.TRUST_PROXY?.trim();
  if (!raw || raw === 'false') return false;
  if (raw === 'true') return true;
  if (/^\d+$/.test(raw)) return Number(raw);
  const entries = raw.split(',').map((entry) => entry.trim()).filter(Boolean);
  for (const entry of entries) {
    const [address, bits, extra] = entry.split('/');
    const family = isIP(address ?? '');
    const validBits = bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= (family === 6 ? 128 : 32));
    if (!PROXY_NAMES.has(entry) && (family === 0 || !validBits || extra !== undefined)) {
      throw new ConfigError(
        'TRUST_PROXY',
        `must be true, false, a hop count, or a comma-separated list of IP addresses, CIDRs, loopback, linklocal or uniquelocal; "${entry}" is none of these`,
      );
    }
  }
  return entries;
}

function metricsToken(env: Env): string | undefined {
  const raw = env.METRICS_TOKEN?.trim();
  if (!raw) return undefined;
  if (raw.length < 16) throw new ConfigError('METRICS_TOKEN', `must be at least 16 characters, got ${raw.length}`);
  return raw;
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

  const demo = flag(env, 'DEMO', databaseUrl === undefined);
  return {
    port,
    host,
    issuer,
    databaseUrl,
    databasePoolSize: integer(env, 'DATABASE_POOL_SIZE', 10, 1, 1000),
    databasePreparedStatements: integer(env, 'DATABASE_PREPARED_STATEMENTS', DEFAULT_PREPARED_STATEMENTS, 0, 10_000),
    dataDir,
    accessTokenTtl: integer(env, 'ACCESS_TOKEN_TTL', 3600, 1, 86_400),
    refreshTokenTtl: integer(env, 'REFRESH_TOKEN_TTL', 2_592_000, 1, 31_536_000),
    authCodeTtl: integer(env, 'AUTH_CODE_TTL', 600, 1, 600),
    refreshTokenReuseGrace: integer(env, 'REFRESH_TOKEN_REUSE_GRACE', 0, 0, 300),
    deviceCodeTtl: integer(env, 'DEVICE_CODE_TTL', 600, 60, 1800),
    corsOrigins,
    logLevel,
    demo,
    frontDoor: flag(env, 'FRONT_DOOR', demo),
    trustProxy: trustProxy(env),
    metricsPort: env.METRICS_PORT?.trim() ? integer(env, 'METRICS_PORT', 0, 0, 65535) : undefined,
    metricsToken: metricsToken(env),
    graphqlLimits: loadLimits(env),
    janitorInterval: integer(env, 'JANITOR_INTERVAL', 300, 0, 86_400),
    janitorRetention: integer(env, 'JANITOR_RETENTION', 86_400, 0, 31_536_000),
    janitorBatchSize: integer(env, 'JANITOR_BATCH_SIZE', 1000, 1, 100_000),
  };
}
