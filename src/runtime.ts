/** The long-lived services of one process, shared by the OAuth server, GraphQL, REST and the CLI. */
import type { Config } from './config.js';
import { openDatabase, type Database, type DatabaseOptions, type Db } from './db/database.js';
import { instanceSecret } from './db/instance-secrets.js';
import type { Logger } from './logger.js';
import { AccessTokens } from './tokens/access-token.js';
import { ClientStore } from './oauth/stores/clients.js';
import { ensureSigningKey, hasSigningKeys, KeyStore } from './tokens/signing-keys.js';
import { Revocations } from './tokens/revocation.js';
import { GrantOwners } from './tokens/grant-owners.js';
import { UserStore } from './oauth/stores/users.js';
import { DpopVerifier } from './tokens/dpop.js';
import { JtiReplayStore } from './tokens/jti-replay.js';
import { Resources } from './tokens/resources.js';

export interface Runtime {
  config: Config;
  database: Database;
  db: Db;
  logger: Logger;
  keys: KeyStore;
  revocations: Revocations;
  accessTokens: AccessTokens;
  resources: Resources;
  clients: ClientStore;
  users: UserStore;
  usedJtis: JtiReplayStore;
  dpop: DpopVerifier;
  sessionSecret: string;
  /** Key that derives a refresh token's successor from it (see stores/refresh-tokens.ts). */
  refreshTokenSecret: string;
  /** Key that signs list page tokens and GraphQL cursors (see api/page-token.ts). */
  pageTokenSecret: string;
  pairwiseSecret: string;
  /** Key that seals authorization codes (see stores/codes.ts). */
  authorizationCodeSecret: string;
  close(): Promise<void>;
}

/**
 * The database the configuration names. `embeddedThread`: whether an embedded database runs on a thread of its own (the
 * server, when DATABASE_EMBEDDED_THREAD allows), or that thread as `openConfiguredEmbeddedThread` is already opening it;
 * a command that runs a few statements and exits keeps it on its own.
 */
export function openConfiguredDatabase(config: Config, { embeddedThread = false }: Pick<DatabaseOptions, 'embeddedThread'> = {}): Promise<Database> {
  return openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    poolSize: config.databasePoolSize,
    preparedStatements: config.databasePreparedStatements,
    statementTimeoutMs: config.databaseStatementTimeoutMs,
    poolWaitMs: config.databasePoolWaitMs,
    embeddedThread: config.databaseEmbeddedThread ? embeddedThread : false,
  });
}

/** Migrates `database` (by default the one the configuration names) and wires the services over it. */
export async function openRuntime(config: Config, logger: Logger, database?: Database): Promise<Runtime> {
  database ??= await openConfiguredDatabase(config);
  try {
    await database.migrate(ensureSigningKey, hasSigningKeys);
    return await wireRuntime(config, logger, database);
  } catch (error) {
    await database.close().catch(() => {});
    throw error;
  }
}

async function wireRuntime(config: Config, logger: Logger, database: Database): Promise<Runtime> {
  const db = database.db;
  const keys = new KeyStore(db, config.accessTokenTtl);
  const revocations = new Revocations(db);
  const resources = new Resources(config.issuer, config.resourceIndicators, { frontDoor: config.frontDoor });
  const accessTokens = new AccessTokens(keys, revocations, {
    issuer: config.issuer,
    audience: resources.defaults,
    ttlSeconds: config.accessTokenTtl,
  }, new GrantOwners(db));
  const [clientSecretKey, sessionSecret, refreshTokenSecret, pageTokenSecret, dpopNonceKey, pairwiseSecret, authorizationCodeSecret] = await Promise.all([
    instanceSecret(db, 'client-secret-hmac'),
    instanceSecret(db, 'session-cookie'),
    instanceSecret(db, 'refresh-token-successor'),
    instanceSecret(db, 'page-token'),
    instanceSecret(db, 'dpop-nonce'),
    instanceSecret(db, 'pairwise-subject'),
    instanceSecret(db, 'authorization-code'),
  ]);
  const usedJtis = new JtiReplayStore(db);
  return {
    config,
    database,
    db,
    logger,
    keys,
    revocations,
    accessTokens,
    resources,
    clients: new ClientStore(db, clientSecretKey),
    users: new UserStore(db),
    usedJtis,
    dpop: new DpopVerifier(usedJtis, { proofMaxAge: config.dpopProofMaxAge, nonceKey: dpopNonceKey }),
    sessionSecret,
    refreshTokenSecret,
    pageTokenSecret,
    pairwiseSecret,
    authorizationCodeSecret,
    close: () => database.close(),
  };
}
