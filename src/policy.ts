/**
 * The server's policy in one place. `Setting`s may be changed through their environment variable (validated by
 * config.ts at start-up), `Fixed` entries only here. This module imports nothing, so anything may read it.
 */

/** A value an operator may set: a whole number from `min` to `max` in the variable `env`. */
export interface Setting {
  description: string;
  default: number;
  env: string;
  min: number;
  max: number;
}

/** A value fixed in code: changing it is a reviewed change, not a deployment choice. */
export interface Fixed<T> {
  description: string;
  value: T;
}

export interface ThrottleRule {
  maxFailures: number;
  windowSeconds: number;
  lockSeconds: number;
}

export interface NestedList {
  /** The field as clients write it (`reviews`), for error messages. */
  field: string;
  defaultSize: number;
  maxSize: number;
}

const MINUTE = 60;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

export const POLICY = {
  grantTypes: {
    description: 'Grant types the token endpoint accepts and the metadata document lists (each has a module in oauth/grants/).',
    value: ['authorization_code', 'refresh_token', 'client_credentials', 'urn:ietf:params:oauth:grant-type:device_code'],
  } satisfies Fixed<readonly string[]>,
  accessTokenTtl: {
    description: 'Access token lifetime in seconds.',
    default: HOUR,
    env: 'ACCESS_TOKEN_TTL',
    min: 1,
    max: DAY,
  },
  refreshTokenTtl: {
    description: 'Refresh token lifetime in seconds.',
    default: 30 * DAY,
    env: 'REFRESH_TOKEN_TTL',
    min: 1,
    max: 365 * DAY,
  },
  authCodeTtl: {
    description: 'Authorization code lifetime in seconds; RFC 6749 §4.1.2 recommends at most 10 minutes.',
    default: 10 * MINUTE,
    env: 'AUTH_CODE_TTL',
    min: 1,
    max: 10 * MINUTE,
  },
  refreshTokenReuseGrace: {
    description: 'Seconds in which a just-rotated refresh token may be retried (a lost response) without revoking its family; 0 is strict rotation.',
    default: 0,
    env: 'REFRESH_TOKEN_REUSE_GRACE',
    min: 0,
    max: 5 * MINUTE,
  },
  sessionTtlSeconds: {
    description: 'Lifetime of a browser sign-in session: a working day, after which the user signs in again.',
    value: 8 * HOUR,
  } satisfies Fixed<number>,

  revocationCacheMs: {
    description: 'How long a revocation answer is reused per token; a revocation made on another instance shows within this window.',
    value: 1_000,
  } satisfies Fixed<number>,
  revocationCacheEntries: {
    description: 'Tokens whose revocation answer is cached (the cache is cleared when full).',
    value: 50_000,
  } satisfies Fixed<number>,
  clientCacheMs: {
    description: 'How long a client record is reused; a change made through the CLI reaches a running server within this window.',
    value: 5_000,
  } satisfies Fixed<number>,
  clientCacheEntries: {
    description: 'Client records kept in the cache (least recently used ones leave first).',
    value: 1_000,
  } satisfies Fixed<number>,
  verifiedTokenCacheEntries: {
    description: 'Access tokens remembered as verified (signature and claims) until their exp; revocation is still checked per request.',
    value: 10_000,
  } satisfies Fixed<number>,
  signingKeyReloadMs: {
    description: 'How often each instance reloads the signing keys, so a rotation done elsewhere is used for signing within this time.',
    value: 30_000,
  } satisfies Fixed<number>,
  unknownKidReloadMinMs: {
    description: 'Least time between reloads caused by a token with an unknown kid (a flood of made-up kids costs one query a second).',
    value: 1_000,
  } satisfies Fixed<number>,
  jwksMaxAgeSeconds: {
    description: 'Cache-Control max-age of the JWKS: short, so a rotation shows quickly; a client meeting an unknown kid refetches anyway.',
    value: 60,
  } satisfies Fixed<number>,
  metadataMaxAgeSeconds: {
    description: 'Cache-Control max-age of the authorization server metadata document.',
    value: 5 * MINUTE,
  } satisfies Fixed<number>,

  loginThrottle: {
    description:
      'Failed sign-ins: per account name (against guessing one password) and per client IP (against spraying many accounts), each locking for a while after too many failures in a window.',
    value: {
      account: { maxFailures: 5, windowSeconds: 15 * MINUTE, lockSeconds: 15 * MINUTE },
      ip: { maxFailures: 20, windowSeconds: 15 * MINUTE, lockSeconds: 15 * MINUTE },
    },
  } satisfies Fixed<{ account: ThrottleRule; ip: ThrottleRule }>,

  pageSize: {
    description: 'limit of a root list (GraphQL list fields, REST collections): the default and the largest accepted.',
    value: { default: 50, max: 200 },
  } satisfies Fixed<{ default: number; max: number }>,
  reviewsList: {
    description: "A product's reviews: nested lists are bounded too, so one request cannot load unbounded rows.",
    value: { field: 'reviews', defaultSize: 10, maxSize: 50 },
  } satisfies Fixed<NestedList>,
  maxOrderItems: {
    description: "Most items in one order (createOrder refuses more), and so the default and largest size of an order's items list.",
    value: 100,
  } satisfies Fixed<number>,

  graphqlMaxTokens: {
    description: 'Lexical tokens in one GraphQL document.',
    default: 1000,
    env: 'GRAPHQL_MAX_TOKENS',
    min: 1,
    max: Number.MAX_SAFE_INTEGER,
  },
  graphqlMaxDepth: {
    description: 'Nesting of selections, counting leaf fields (`{ products { id } }` is 2).',
    default: 8,
    env: 'GRAPHQL_MAX_DEPTH',
    min: 1,
    max: Number.MAX_SAFE_INTEGER,
  },
  graphqlMaxAliases: {
    description: 'Aliased fields in one operation.',
    default: 15,
    env: 'GRAPHQL_MAX_ALIASES',
    min: 1,
    max: Number.MAX_SAFE_INTEGER,
  },
  graphqlMaxDirectives: {
    description: 'Directives in one operation.',
    default: 10,
    env: 'GRAPHQL_MAX_DIRECTIVES',
    min: 1,
    max: Number.MAX_SAFE_INTEGER,
  },
  graphqlMaxCost: {
    description:
      'Cost of one operation: each field 1, a list times its limit (nested lists too), so it also bounds the rows one request loads; every Order field with its items for 200 orders costs about 61 600.',
    default: 100_000,
    env: 'GRAPHQL_MAX_COST',
    min: 1,
    max: Number.MAX_SAFE_INTEGER,
  },

  apqMaxDocuments: {
    description:
      'Documents one instance keeps for automatic persisted queries (an in-memory LRU, bounded also to 16 MiB of text); a miss only costs the client one retry with the full query.',
    value: 2_000,
  } satisfies Fixed<number>,
  apqMaxQueryLength: {
    description:
      'Characters of a document that may be registered by hash (APQ); longer ones are refused, since a body of 256 KiB would otherwise let one client hold the store.',
    value: 32_768,
  } satisfies Fixed<number>,

  janitorInterval: {
    description: "Seconds between the server's background sweeps of expired rows (0: none; `fieldgate janitor` still works).",
    default: 5 * MINUTE,
    env: 'JANITOR_INTERVAL',
    min: 0,
    max: DAY,
  },
  janitorRetention: {
    description: 'Seconds expired codes and refresh tokens, revoked grants, and signed-out sessions past their cookie expiry, are kept (never less than the access-token TTL).',
    default: DAY,
    env: 'JANITOR_RETENTION',
    min: 0,
    max: 365 * DAY,
  },
  janitorBatchSize: {
    description: 'Most rows one cleanup statement deletes; a sweep loops until nothing is due.',
    default: 1000,
    env: 'JANITOR_BATCH_SIZE',
    min: 1,
    max: 100_000,
  },

  idleCollectionAfter: {
    description:
      "Seconds the server's event loop must be quiet before it runs one full garbage collection, handing garbage left by a burst of requests back to the OS (0: leave it to V8).",
    default: 10,
    env: 'IDLE_COLLECTION_AFTER',
    min: 0,
    max: HOUR,
  },

  databasePoolSize: {
    description:
      'Connections in the PostgreSQL pool. Unset: twice the CPU cores, from 4 up to this default, as PostgreSQL on the same small host serves more with fewer connections.',
    default: 10,
    env: 'DATABASE_POOL_SIZE',
    min: 1,
    max: 1000,
  },
  databaseStatementTimeoutMs: {
    description: 'Milliseconds a PostgreSQL statement may run before the server cancels it (0: no limit): one expensive list filter cannot hold a pooled connection for long. PGlite has no such limit.',
    default: 10_000,
    env: 'DATABASE_STATEMENT_TIMEOUT_MS',
    min: 0,
    max: 3_600_000,
  },
  databasePoolWaitMs: {
    description:
      'Milliseconds a PostgreSQL statement may wait for a pooled connection before the request is refused with 503 and Retry-After (0: no limit): a burst of slow requests cannot hold cheap ones for long.',
    default: 5_000,
    env: 'DATABASE_POOL_WAIT_MS',
    min: 0,
    max: 3_600_000,
  },
  databasePreparedStatements: {
    description: 'Most distinct SQL texts run as named prepared statements per PostgreSQL connection or embedded PGlite (0: none, e.g. behind a transaction-mode pooler).',
    default: 256,
    env: 'DATABASE_PREPARED_STATEMENTS',
    min: 0,
    max: 10_000,
  },
} as const satisfies Record<string, Setting | Fixed<unknown>>;

/** The entries an operator may set through the environment. */
export function settings(): Setting[] {
  return Object.values(POLICY).filter((entry): entry is Extract<(typeof POLICY)[keyof typeof POLICY], Setting> => 'env' in entry);
}

export const GRANT_TYPES_SUPPORTED: readonly string[] = POLICY.grantTypes.value;
