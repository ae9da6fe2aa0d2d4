/**
 * Data for the servers under test, written through a Runtime opened on the same database in
 * the test process: the stores hash secrets and passwords exactly as the server does, and the
 * signing keys live in the database, so a token minted here is accepted by the server.
 *
 * An embedded data directory is held by one process at a time, so for PGlite the runtime is
 * opened and closed before the server starts; PostgreSQL may be shared while servers run.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../../src/config.js';
import { createLogger } from '../../../src/logger.js';
import { openRuntime, type Runtime } from '../../../src/runtime.js';
import { ALL_SCOPES } from '../../../src/oauth/scopes.js';
import { buildProduct } from '../factories.js';
import { createPostgresDatabase } from '../databases.js';
import type { FlowClient, FlowUser } from './oauth.js';

export type Kind = 'pglite' | 'postgres';

/** Where the server under test keeps its data, as environment variables for it and for us. */
export interface Storage {
  kind: Kind;
  env: Record<string, string>;
  /** Removes the data directory or drops the database. */
  destroy(): Promise<void>;
}

/** A fresh PGlite data directory or a fresh PostgreSQL database on TEST_DATABASE_URL. */
export async function createStorage(kind: Kind): Promise<Storage> {
  if (kind === 'postgres') {
    const database = await createPostgresDatabase();
    return { kind, env: { DATABASE_URL: database.url }, destroy: () => database.drop() };
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'fieldgate-reliability-'));
  return { kind, env: { DATA_DIR: dir }, destroy: async () => rmSync(dir, { recursive: true, force: true }) };
}

/** Opens a runtime on `env`'s database (migrating it), for setup and checks. Close it when done. */
export async function openSetupRuntime(env: Record<string, string>): Promise<Runtime> {
  const config = loadConfig({ LOG_LEVEL: 'warn', DEMO: 'false', DATABASE_POOL_SIZE: '3', ...env });
  return openRuntime(config, createLogger('warn', process.stderr));
}

export async function withSetupRuntime<T>(env: Record<string, string>, fn: (runtime: Runtime) => Promise<T>): Promise<T> {
  const runtime = await openSetupRuntime(env);
  try {
    return await fn(runtime);
  } finally {
    await runtime.close();
  }
}

export const CALLBACK = 'http://127.0.0.1:9/callback';

export async function registerClient(runtime: Runtime, options: { isPublic?: boolean; name?: string } = {}): Promise<FlowClient> {
  const registered = await runtime.clients.create({
    name: options.name ?? `Reliability ${randomBytes(3).toString('hex')}`,
    redirectUris: [CALLBACK],
    isPublic: options.isPublic ?? false,
    scope: ALL_SCOPES.join(' '),
  });
  return { id: registered.client_id, secret: registered.client_secret, redirectUri: CALLBACK };
}

export async function registerUser(runtime: Runtime, prefix = 'user'): Promise<FlowUser & { id: number }> {
  const username = `${prefix}-${randomBytes(4).toString('hex')}`;
  const password = `pw ${randomBytes(9).toString('base64url')} ü`;
  const { id } = await runtime.users.create(username, password);
  return { id, username, password };
}

/** Adds `count` products (each with its seller and two reviews); returns their ids. */
export async function seedProducts(runtime: Runtime, count: number): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < count; i++) ids.push((await buildProduct(runtime, { reviews: 2, withShippingPolicy: i % 2 === 0 })).id);
  return ids;
}
