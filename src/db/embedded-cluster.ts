/** Where an embedded data directory keeps its PostgreSQL cluster, for every command that opens one. */
import { existsSync } from 'node:fs';
import path from 'node:path';

/** The cluster's directory inside DATA_DIR (the rest of DATA_DIR holds the lock file). */
export function clusterDirectory(dataDir: string): string {
  return path.join(dataDir, 'pgdata');
}

/** Whether `pgdata` holds a cluster: initdb writes PG_VERSION. */
export function hasCluster(pgdata: string): boolean {
  return existsSync(path.join(pgdata, 'PG_VERSION'));
}
