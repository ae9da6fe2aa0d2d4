/** The shape of one benchmark run's results: what bench/run.ts measures and the report renders. */
import type { Measurement } from './drivers.js';
import type { MachineInfo } from './machine.js';
import type { ReadScenarioId } from './scenarios.js';

export interface ScenarioResult {
  label: string;
  measurement?: Measurement;
  /** Why the scenario was not measured (the endpoint answered wrongly, the server is missing, …). */
  unavailable?: string;
  /**
   * CPU time (user + system) of the server process per operation over warm-up and window. Far
   * less sensitive to other load on the machine than throughput; on PostgreSQL it leaves out
   * the database server's own processes.
   */
  serverCpuUs?: number;
  /** The CPU profile of the server over this scenario (with --profile). */
  profile?: string;
  /** SQL statements sent through Drizzle for one operation in steady state (Fieldgate only). */
  sql?: { count: number; statements: { text: string; count: number }[] };
}

export type OAuthScenarioId = 'flows' | 'refresh' | 'introspectRefresh' | 'introspectAccess';

export interface MemoryMiB {
  idle?: number;
  afterRead?: number;
  afterOAuth?: number;
}

export interface ServerResult {
  /** e.g. "Fieldgate · PGlite" */
  label: string;
  kind: 'fieldgate' | 'peer';
  database?: 'pglite' | 'postgres';
  skipped?: string;
  memory: MemoryMiB;
  read: Partial<Record<ReadScenarioId, ScenarioResult>>;
  /** (b) measured again after (e): the ratios use the mean of both, and a gap shows drift. */
  bAgain?: ScenarioResult;
  oauth: Partial<Record<OAuthScenarioId, ScenarioResult>>;
  /** How the browser session and the read benchmark's token were obtained. */
  setup: string[];
  profiles: string[];
}

export interface Timing {
  warmupSec: number;
  readSec: number;
  oauthSec: number;
  readConnections: number;
  flowConcurrency: number;
}

export interface RunResults {
  startedAt: string;
  finishedAt: string;
  elapsedSec: number;
  quick: boolean;
  /** What-if changes applied in bench/server.ts (empty for the shipped code). */
  experiments?: string[];
  command: string;
  machine: MachineInfo;
  postgresVersion?: string;
  timing: Timing;
  logLevel: string;
  servers: ServerResult[];
  notes: string[];
}
