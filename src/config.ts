/** Configuration from the environment, validated at start-up so a bad value fails fast with one ConfigError. */
import path from 'node:path';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import { POLICY, type Setting } from './policy.js';
import { isLoopbackHost } from './oauth/loopback.js';

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

export const DEFAULT_PREPARED_STATEMENTS = POLICY.databasePreparedStatements.default;

/** Abuse limits of one GraphQL operation; each is described in src/policy.ts (graphqlMax*). */
export interface GraphQLLimits {
  maxTokens: number;
  maxDepth: number;
  maxAliases: number;
  maxDirectives: number;
  maxCost: number;
}

const LIMIT_POLICY: Readonly<Record<keyof GraphQLLimits, Setting>> = {
  maxTokens: POLICY.graphqlMaxTokens,
  maxDepth: POLICY.graphqlMaxDepth,
  maxAliases: POLICY.graphqlMaxAliases,
  maxDirectives: POLICY.graphqlMaxDirectives,
  maxCost: POLICY.graphqlMaxCost,
};

export const DEFAULT_LIMITS: Readonly<GraphQLLimits> = {
  maxTokens: LIMIT_POLICY.maxTokens.default,
  maxDepth: LIMIT_POLICY.maxDepth.default,
  maxAliases: LIMIT_POLICY.maxAliases.default,
  maxDirectives: LIMIT_POLICY.maxDirectives.default,
  maxCost: LIMIT_POLICY.maxCost.default,
};

export const LIMIT_VARIABLES: Readonly<Record<keyof GraphQLLimits, string>> = {
  maxTokens: LIMIT_POLICY.maxTokens.env,
  maxDepth: LIMIT_POLICY.maxDepth.env,
  maxAliases: LIMIT_POLICY.maxAliases.env,
  maxDirectives: LIMIT_POLICY.maxDirectives.env,
  maxCost: LIMIT_POLICY.maxCost.env,
};

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

export interface Config {
  port: number;
  host: string;
  /** Public base URL, no trailing slash: the `iss` of every token and the base of every endpoint. */
  issuer: string;
  /** `postgres://…` for a PostgreSQL server; undefined for the embedded PGlite database. */
  databaseUrl: string | undefined;
  databasePoolSize: number;
  databasePreparedStatements: number;
  databaseStatementTimeoutMs: number;
  databasePoolWaitMs: number;
  /** `fieldgate serve` runs the embedded database on a thread of its own (db/performance/pglite-thread.ts; DATABASE_EMBEDDED_THREAD). */
  databaseEmbeddedThread: boolean;
  /** Directory of the embedded database, or `memory://` for a throwaway in-memory one. */
  dataDir: string;
  accessTokenTtl: number;
  refreshTokenTtl: number;
  authCodeTtl: number;
  deviceCodeTtl: number;
  /** Seconds in which a just-rotated refresh token may be retried without revoking its family. */
  refreshTokenReuseGrace: number;
  corsOrigins: string[];
  logLevel: LogLevel;
  demo: boolean;
  /** Serve `/`, GraphiQL on a browser's GET /graphql and /api-reference; on by default in demo mode (FRONT_DOOR). */
  frontDoor: boolean;
  /** Express `trust proxy`: whose X-Forwarded-For to believe for a client's IP, which login throttling keys on. */
  trustProxy: boolean | number | string[];
  /** Port of a separate listener (on HOST) that serves GET /metrics; undefined: none (METRICS_PORT). */
  metricsPort: number | undefined;
  /** Bearer token that opens GET /metrics on the main port; undefined: not served there (METRICS_TOKEN). */
  metricsToken: string | undefined;
  graphqlLimits: GraphQLLimits;
  /** Trusted documents by lowercase sha256 hex; when set, /graphql runs only these (GRAPHQL_TRUSTED_DOCUMENTS). */
  graphqlTrustedDocuments: ReadonlyMap<string, string> | undefined;
  /** Run repeated queries as compiled code (see graphql/performance/compiled-queries.ts; GRAPHQL_COMPILED_QUERIES). */
  graphqlCompiledQueries: boolean;
  /** Seconds between background sweeps of expired rows (0: no background sweep; `fieldgate janitor` still works). */
  janitorInterval: number;
  /** Seconds expired codes and refresh tokens, revoked grants, and signed-out sessions past their cookie expiry, are kept (never less than the access-token TTL). */
  janitorRetention: number;
  janitorBatchSize: number;
  /** Seconds of quiet before the server collects garbage once (0: never; see idle-collection.ts). */
  idleCollectionAfter: number;
  dpopProofMaxAge: number;
  /** Where DPoP proofs must carry a server nonce: `token` endpoint only, `all` (resources too), or `off` (DPOP_NONCE). */
  dpopNonce: DpopNoncePolicy;
  /** Allow http and private-address client `jwks_uri`s: development only, otherwise an SSRF path (CLIENT_JWKS_ALLOW_PRIVATE). */
  clientJwksAllowPrivate: boolean;
  brandName: string;
  brandLogoUrl: string | undefined;
  brandColor: string;
  /** Let back-channel logout reach private addresses; off by default so a client's URI cannot reach inside our network (SSRF). */
  backchannelLogoutAllowPrivate: boolean;
  /** RFC 8707 identifiers of external resource servers that accept our tokens (RESOURCE_INDICATORS). */
  resourceIndicators: string[];
  registration: RegistrationMode;
  /** Device authorization requests per client IP per 15 minutes (DEVICE_AUTHORIZATION_RATE_LIMIT). */
  deviceAuthorizationRateLimit: number;
  /** Registrations per client IP per 15 minutes (REGISTRATION_RATE_LIMIT). */
  registrationRateLimit: number;
  /** Seconds after which a self-registered client that was never used is deleted; 0: never (DYNAMIC_CLIENT_TTL). */
  dynamicClientTtl: number;
  /** Accept client ids that are https URLs of client ID metadata documents (CLIENT_ID_METADATA_DOCUMENTS). */
  clientIdMetadataDocuments: boolean;
  /** Development only: fetch metadata documents from private and loopback addresses, and over http (CIMD_ALLOW_PRIVATE). */
  cimdAllowPrivate: boolean;
  /** Metadata-document fetches one client IP may cause per 15 minutes (CIMD_FETCH_RATE_LIMIT). */
  cimdFetchRateLimit: number;
}

export const DPOP_NONCE_POLICIES = ['token', 'all', 'off'] as const;
export type DpopNoncePolicy = (typeof DPOP_NONCE_POLICIES)[number];

function dpopNonce(env: Env): DpopNoncePolicy {
  const raw = env.DPOP_NONCE?.trim().toLowerCase() || 'token';
  if (!(DPOP_NONCE_POLICIES as readonly string[]).includes(raw)) {
    throw new ConfigError('DPOP_NONCE', `must be one of ${DPOP_NONCE_POLICIES.join(', ')}, got "${env.DPOP_NONCE}"`);
  }
  return raw as DpopNoncePolicy;
}

export const REGISTRATION_MODES = ['open', 'token', 'off'] as const;
export type RegistrationMode = (typeof REGISTRATION_MODES)[number];

function registrationMode(env: Env, fallback: RegistrationMode): RegistrationMode {
  const raw = env.REGISTRATION?.trim().toLowerCase();
  if (!raw) return fallback;
  if (!(REGISTRATION_MODES as readonly string[]).includes(raw)) {
    throw new ConfigError('REGISTRATION', `must be one of ${REGISTRATION_MODES.join(', ')}, got "${env.REGISTRATION}"`);
  }
  return raw as RegistrationMode;
}

function resourceIndicators(env: Env): string[] {
  const entries = (env.RESOURCE_INDICATORS ?? '').split(',').map((entry) => entry.trim()).filter(Boolean);
  for (const entry of entries) {
    const parsed = url('RESOURCE_INDICATORS', entry, ['http:', 'https:']);
    if (/\s/.test(entry)) throw new ConfigError('RESOURCE_INDICATORS', `"${entry}" must not contain whitespace`);
    // RFC 8707 §2: an absolute URI without a fragment (and, as advised, without a query).
    if (parsed.hash || entry.includes('#') || parsed.search) throw new ConfigError('RESOURCE_INDICATORS', `"${entry}" must not carry a query or fragment`);
  }
  return entries;
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(name, `must be a whole number from ${min} to ${max}, got "${raw}"`);
  const value = Number(raw.trim());
  if (value < min || value > max) throw new ConfigError(name, `must be a whole number from ${min} to ${max}, got ${raw.trim()}`);
  return value;
}

/**
 * Connections when DATABASE_POOL_SIZE is unset: about twice the cores, as PostgreSQL's own guidance has it, and never
 * more than the policy's default. On a small host that PostgreSQL shares, ten connections for two cores made every
 * statement dearer (context switches, lock waits) and flows slower; postgres.js pipelines a few statements per
 * connection, so four connections keep a server busy. Measured: docs/PERFORMANCE.md.
 */
export function defaultPoolSize(cores = availableParallelism()): number {
  return Math.min(POLICY.databasePoolSize.default, Math.max(4, 2 * cores));
}

function setting(env: Env, entry: Setting): number {
  return integer(env, entry.env, entry.default, entry.min, entry.max);
}

/** Variables whose value may hold a password: never repeated in a message. */
const SECRET_BEARING = new Set(['DATABASE_URL']);

function url(name: string, raw: string, protocols: string[]): URL {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    const shown = SECRET_BEARING.has(name) ? '(the value is not shown: it may hold a password)' : `got "${raw}"`;
    throw new ConfigError(name, `must be a URL (${protocols.join(' or ')}), ${shown}`);
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

/**
 * A JSON object {"<sha256 hex>": "<document>"} (GraphQL Codegen's persistedDocuments) or an Apollo persisted query
 * manifest; each key must be the hash of its document so a stale or hand-edited manifest fails at start-up.
 */
function trustedDocuments(env: Env): ReadonlyMap<string, string> | undefined {
  const name = 'GRAPHQL_TRUSTED_DOCUMENTS';
  const file = env[name]?.trim();
  if (!file) return undefined;
  let manifest: unknown;
  try {
    manifest = JSON.parse(readFileSync(path.resolve(file), 'utf8'));
  } catch (error) {
    const reason = error instanceof SyntaxError ? `is not valid JSON (${error.message})` : `cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`;
    throw new ConfigError(name, `the manifest ${file} ${reason}`);
  }
  if (manifest === null || typeof manifest !== 'object' || Array.isArray(manifest)) {
    throw new ConfigError(name, `the manifest ${file} must be a JSON object of sha256 hex hashes to documents`);
  }
  const entries = isApolloManifest(manifest) ? apolloManifestEntries(name, file, manifest) : Object.entries(manifest);
  const documents = new Map<string, string>();
  for (const [key, document] of entries) {
    const hash = key.toLowerCase();
    if (!/^[0-9a-f]{64}$/.test(hash)) throw new ConfigError(name, `the manifest ${file} has the key "${key.slice(0, 80)}", which is not a sha256 hex hash`);
    if (typeof document !== 'string' || document.trim() === '') throw new ConfigError(name, `the manifest ${file} maps ${key} to something other than a document`);
    if (createHash('sha256').update(document).digest('hex') !== hash) {
      throw new ConfigError(name, `the manifest ${file} maps ${key} to a document whose sha256 is not ${key}`);
    }
    documents.set(hash, document);
  }
  if (documents.size === 0) throw new ConfigError(name, `the manifest ${file} lists no document`);
  return documents;
}

/** Apollo's `generate-persisted-query-manifest` output: `{ format, version: 1, operations: [{ id, body }] }`. */
function isApolloManifest(manifest: object): manifest is { format: string; version?: unknown; operations?: unknown } {
  return (manifest as { format?: unknown }).format === 'apollo-persisted-query-manifest';
}

function apolloManifestEntries(name: string, file: string, manifest: { version?: unknown; operations?: unknown }): [string, unknown][] {
  if (manifest.version !== 1 || !Array.isArray(manifest.operations)) {
    throw new ConfigError(name, `the Apollo manifest ${file} must have version 1 and an operations array`);
  }
  return manifest.operations.map((operation: unknown) => {
    const { id, body } = (operation ?? {}) as { id?: unknown; body?: unknown };
    return [typeof id === 'string' ? id : String(id), body];
  });
}

function metricsToken(env: Env): string | undefined {
  const raw = env.METRICS_TOKEN?.trim();
  if (!raw) return undefined;
  if (raw.length < 16) throw new ConfigError('METRICS_TOKEN', `must be at least 16 characters, got ${raw.length}`);
  return raw;
}

export function loadConfig(env: Env = process.env): Config {
  const port = integer(env, 'PORT', 3000, 0, 65535);
  // `[::1]` as in a URL is taken for the address inside the brackets.
  const hostRaw = env.HOST?.trim() || '127.0.0.1';
  const host = /^\[.*\]$/.test(hostRaw) && isIP(hostRaw.slice(1, -1)) === 6 ? hostRaw.slice(1, -1) : hostRaw;

  const issuerRaw = env.ISSUER?.trim() || `http://localhost:${port}`;
  const issuerUrl = url('ISSUER', issuerRaw, ['http:', 'https:']);
  if (issuerUrl.search || issuerUrl.hash || issuerRaw.includes('?') || issuerRaw.includes('#')) throw new ConfigError('ISSUER', 'must not carry a query or fragment');
  // It is the `iss` of every token and is published in the metadata: a user name or password in it would be too.
  if (issuerUrl.username || issuerUrl.password) throw new ConfigError('ISSUER', 'must not carry a user name or password');
  const issuer = issuerUrl.href.replace(/\/+$/, '');

  const databaseUrl = env.DATABASE_URL?.trim() || undefined;
  if (databaseUrl) url('DATABASE_URL', databaseUrl, ['postgres:', 'postgresql:']);

  const dataDirRaw = env.DATA_DIR?.trim() || './data';
  const dataDir = dataDirRaw === 'memory://' ? dataDirRaw : path.resolve(dataDirRaw);
  if (dataDirRaw.includes('://') && dataDirRaw !== 'memory://') {
    throw new ConfigError('DATA_DIR', `must be a directory path or memory://, got "${dataDirRaw}"`);
  }

  const logLevel = (env.LOG_LEVEL?.trim().toLowerCase() || 'info') as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}, got "${env.LOG_LEVEL}"`);
  }

  const corsOrigins = (env.CORS_ORIGINS ?? '*')
    .split(',')
    .map((origin) => origin.trim())
    .filter(Boolean);
  // A browser's Origin is scheme, host and port, compared as a string: `https://app.example/` would never match it.
  for (const [index, origin] of corsOrigins.entries()) {
    if (origin === '*') continue;
    const parsed = url('CORS_ORIGINS', origin, ['http:', 'https:']);
    if (parsed.pathname !== '/' || parsed.search || parsed.hash || parsed.username || parsed.password || /[?#]/.test(origin)) {
      throw new ConfigError('CORS_ORIGINS', `"${origin}" must be an origin: scheme, host and port only, such as ${parsed.origin}`);
    }
    corsOrigins[index] = parsed.origin;
  }

  const demo = flag(env, 'DEMO', databaseUrl === undefined);
  // The demo client's redirect URI is ISSUER/demo/callback, held to the rule of every redirect URI; caught here, it is
  // a message naming the variable to change instead of a refused redirect URI from the seed.
  if (demo && issuerUrl.protocol === 'http:' && !isLoopbackHost(issuerUrl.hostname)) {
    throw new ConfigError(
      'ISSUER',
      `must use https, or http on localhost, 127.0.0.0/8 or [::1], in demo mode (the demo client's redirect URI is ${issuer}/demo/callback); got "${issuerRaw}": set an https ISSUER or DEMO=false`,
    );
  }
  const metricsPort = env.METRICS_PORT?.trim() ? integer(env, 'METRICS_PORT', 0, 0, 65535) : undefined;
  if (metricsPort !== undefined && metricsPort !== 0 && metricsPort === port) {
    throw new ConfigError('METRICS_PORT', `must differ from PORT (${port}): metrics are served on a listener of their own`);
  }
  return {
    port,
    host,
    issuer,
    databaseUrl,
    databasePoolSize: setting(env, { ...POLICY.databasePoolSize, default: defaultPoolSize() }),
    databasePreparedStatements: setting(env, POLICY.databasePreparedStatements),
    databaseStatementTimeoutMs: setting(env, POLICY.databaseStatementTimeoutMs),
    databasePoolWaitMs: setting(env, POLICY.databasePoolWaitMs),
    databaseEmbeddedThread: flag(env, 'DATABASE_EMBEDDED_THREAD', true),
    dataDir,
    accessTokenTtl: setting(env, POLICY.accessTokenTtl),
    refreshTokenTtl: setting(env, POLICY.refreshTokenTtl),
    authCodeTtl: setting(env, POLICY.authCodeTtl),
    refreshTokenReuseGrace: setting(env, POLICY.refreshTokenReuseGrace),
    deviceCodeTtl: integer(env, 'DEVICE_CODE_TTL', 600, 60, 1800),
    deviceAuthorizationRateLimit: integer(env, 'DEVICE_AUTHORIZATION_RATE_LIMIT', 100, 1, 100_000),
    corsOrigins,
    logLevel,
    demo,
    frontDoor: flag(env, 'FRONT_DOOR', demo),
    trustProxy: trustProxy(env),
    metricsPort,
    metricsToken: metricsToken(env),
    graphqlLimits: loadLimits(env),
    graphqlTrustedDocuments: trustedDocuments(env),
    graphqlCompiledQueries: flag(env, 'GRAPHQL_COMPILED_QUERIES', true),
    janitorInterval: setting(env, POLICY.janitorInterval),
    janitorRetention: setting(env, POLICY.janitorRetention),
    janitorBatchSize: setting(env, POLICY.janitorBatchSize),
    idleCollectionAfter: setting(env, POLICY.idleCollectionAfter),
    dpopProofMaxAge: integer(env, 'DPOP_PROOF_MAX_AGE', 60, 1, 300),
    dpopNonce: dpopNonce(env),
    clientJwksAllowPrivate: flag(env, 'CLIENT_JWKS_ALLOW_PRIVATE', false),
    ...brand(env),
    backchannelLogoutAllowPrivate: flag(env, 'BACKCHANNEL_LOGOUT_ALLOW_PRIVATE', false),
    resourceIndicators: resourceIndicators(env),
    registration: registrationMode(env, demo ? 'open' : 'off'),
    registrationRateLimit: integer(env, 'REGISTRATION_RATE_LIMIT', 20, 1, 100_000),
    dynamicClientTtl: integer(env, 'DYNAMIC_CLIENT_TTL', 86_400, 0, 31_536_000),
    clientIdMetadataDocuments: flag(env, 'CLIENT_ID_METADATA_DOCUMENTS', true),
    cimdAllowPrivate: flag(env, 'CIMD_ALLOW_PRIVATE', false),
    cimdFetchRateLimit: integer(env, 'CIMD_FETCH_RATE_LIMIT', 30, 1, 100_000),
  };
}

function brand(env: Env): Pick<Config, 'brandName' | 'brandLogoUrl' | 'brandColor'> {
  const brandName = env.BRAND_NAME?.trim() || 'Fieldgate';
  if (brandName.length > 60 || /[\u0000-\u001f\u007f]/.test(brandName)) {
    throw new ConfigError('BRAND_NAME', 'must be at most 60 printable characters');
  }
  const brandLogoUrl = env.BRAND_LOGO_URL?.trim() || undefined;
  if (brandLogoUrl) url('BRAND_LOGO_URL', brandLogoUrl, ['https:']);
  const brandColor = env.BRAND_COLOR?.trim() || '#1d4ed8';
  if (!/^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/.test(brandColor)) {
    throw new ConfigError('BRAND_COLOR', `must be a hex colour like #1d4ed8, got "${env.BRAND_COLOR}"`);
  }
  return { brandName, brandLogoUrl, brandColor };
}
