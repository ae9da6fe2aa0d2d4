/** Where a benchmarked Fieldgate keeps its data: a throwaway PostgreSQL database or a fresh PGlite directory. */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createBenchDatabase } from './postgres.js';

export interface BenchStorage {
  /** DATABASE_URL or DATA_DIR for the server, the other one unset. */
  env: Record<string, string | undefined>;
  /** PostgreSQL's version, for the report. */
  serverVersion?: string;
  drop(): Promise<void>;
}

/** Fresh storage of that kind, or the reason there is none (no PostgreSQL server usable). */
export async function createBenchStorage(database: 'postgres' | 'pglite'): Promise<BenchStorage | { skipped: string }> {
  if (database === 'postgres') {
    const created = await createBenchDatabase();
    if ('skipped' in created) return created;
    return { env: { DATABASE_URL: created.url, DATA_DIR: undefined }, serverVersion: created.serverVersion, drop: created.drop };
  }
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'fieldgate-bench-'));
  return { env: { DATABASE_URL: undefined, DATA_DIR: dataDir }, drop: async () => rmSync(dataDir, { recursive: true, force: true }) };
}
