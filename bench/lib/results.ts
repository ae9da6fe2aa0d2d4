/** The shape of one benchmark run's results: what bench/run.ts measures and the report renders. */
import type { Measurement } from './drivers.js';
import type { MachineInfo } from './machine.js';
import type { ReadScenarioId } from './scenarios.js';
import type { CliMeasurement, StartMeasurement } from './startup.js';

/**
 * The client stacks and rounds of one run: `node` is node:http (flows) and autocannon (reads)
 * after a warm-up; `undici` the same scenarios through undici after a warm-up; `cold` undici
 * on freshly started processes with no warm-up, measured from the first request.
 */
export type RoundId = 'node' | 'undici' | 'cold';
export const ROUND_IDS: readonly RoundId[] = ['node', 'undici', 'cold'];

export interface RoundResult {
  read: Partial<Record<ReadScenarioId, ScenarioResult>>;
  oauth: Partial<Record<OAuthScenarioId, ScenarioResult>>;
}

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

/** One scenario's result in each round it was measured in. */
export type PerRound = Partial<Record<RoundId, ScenarioResult>>;

export type OAuthScenarioId = 'flows' | 'refresh' | 'introspectRefresh' | 'introspectAccess';

export interface MemoryMiB {
  idle?: number;
  afterRead?: number;
  afterOAuth?: number;
  /** After the undici and cold rounds, in the process started fresh for them. */
  afterRounds?: number;
}

export interface ServerResult {
  /** e.g. "Fieldgate · PGlite" */
  label: string;
  /** peer: oidc-provider; bare-process: target 3's Express route; postgraphile: target 5's peer. */
  kind: 'fieldgate' | 'peer' | 'bare-process' | 'postgraphile';
  database?: 'pglite' | 'postgres';
  skipped?: string;
  memory: MemoryMiB;
  read: Partial<Record<ReadScenarioId, ScenarioResult>>;
  /** (b) measured again after (e): the ratios use the mean of both, and a gap shows drift. */
  bAgain?: ScenarioResult;
  oauth: Partial<Record<OAuthScenarioId, ScenarioResult>>;
  /**
   * Baselines started beside this Fieldgate server and measured in windows in turn with the scenario
   * they are compared with, per round (runs since 2026-12-03): target 3's bare Express process with
   * (c) and (d), oidc-provider's code flows with Fieldgate's (targets 1 and 2), PostGraphile's nested
   * list with (f) (target 5); on PGlite, Fieldgate on PostgreSQL's (c) with (c) (target 2).
   */
  beside?: { bare?: PerRound; peerFlows?: PerRound; postgraphile?: PerRound; postgresRead?: PerRound };
  /** The undici and cold rounds (`read` and `oauth` above are the node round). */
  rounds?: Partial<Record<Exclude<RoundId, 'node'>, RoundResult>>;
  /** How the browser session and the read benchmark's token were obtained. */
  setup: string[];
  profiles: string[];
}

export interface Timing {
  warmupSec: number;
  readSec: number;
  /** Windows each side of a target is measured in, in turn (absent in runs before 2026-12-03: one after the other). */
  interleavedWindows?: number;
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
  /** Connections in Fieldgate's PostgreSQL pool, and in PostGraphile's (absent in runs before it was recorded: 10). */
  poolSize?: number;
  servers: ServerResult[];
  /** Rounds this run measured (`--drivers`). */
  rounds?: RoundId[];
  /** Targets 6 and 7, measured on the real commands. */
  startup?: StartupResults;
  notes: string[];
}

export interface StartupResults {
  /** `npm start` on a fresh PGlite directory (builds first; not a target, shown for reference). */
  npmStartFresh?: StartMeasurement;
  /** `npm start` on an existing PGlite directory (target 7), each run. */
  npmStartExisting: StartMeasurement[];
  /** `fieldgate serve` on a fresh PGlite directory: first start (target 6). */
  pgliteFirst?: StartMeasurement;
  /** `fieldgate serve` again on that directory. */
  pgliteRestart?: StartMeasurement;
  /** `fieldgate serve` on the migrated and seeded PostgreSQL database. */
  postgres?: StartMeasurement;
  /** CLI commands on PostgreSQL (target 7). */
  cli: CliMeasurement[];
  skipped?: string;
}
