/**
 * How the embedded database is kept small in the server process. PGlite's WebAssembly memory only
 * grows and is returned to the OS only when its whole thread ends, so (1) the buffer pool is sized
 * for Fieldgate's data rather than initdb's 128 MB default, which PostgreSQL touches entirely at
 * start, and (2) a new data directory is created (initdb runs a second PGlite and its own
 * WebAssembly program) by a short-lived child process: a worker thread would leave its malloc
 * arena and compiled code behind in this process, and (3) PostgreSQL runs on V8's baseline
 * WebAssembly compiler only: each optimizing compile of a large function takes tens of MiB of
 * scratch memory (V8 13, Node 24, takes ~600 MiB for the SQL parser, `raw_parser`, which every
 * start makes hot), which raised a start's peak and left V8's malloc arenas large; optimized code
 * saved 0–10 % of CPU per request.
 * Measured effect and removal condition: docs/PERFORMANCE.md.
 */
import { createRequire } from 'node:module';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import v8 from 'node:v8';
import { hasCluster } from '../embedded-cluster.js';

/**
 * Server settings given to every embedded start, after PGlite's own (`PGlite.defaultStartParams`, which each place that
 * starts PGlite puts first: this module does not load PGlite, see embedded-open.ts).
 */
export const EMBEDDED_SETTINGS: readonly string[] = ['-c', 'shared_buffers=16MB'];

/**
 * V8 flags for every process that runs PGlite: one compile task, and no tier-up from the baseline
 * compiler (Liftoff) to the optimizing one. V8 reads them whenever it compiles a WebAssembly
 * module, so they must be set before PGlite starts.
 */
export const EMBEDDED_WASM_FLAGS: readonly string[] = ['--wasm-num-compilation-tasks=1', '--no-wasm-tier-up', '--no-wasm-dynamic-tiering'];

/** Applies EMBEDDED_WASM_FLAGS to the whole process; PGlite's is the only large WebAssembly program in it. */
export function limitWasmCompilation(): void {
  v8.setFlagsFromString(EMBEDDED_WASM_FLAGS.join(' '));
}

/** Run as `node EMBEDDED_WASM_FLAGS -e INITDB PGLITE_ENTRY PGDATA SETTINGS_JSON`. */
const INITDB = `
const [pglite, pgdata, settings] = process.argv.slice(1);
const { PGlite } = require(pglite);
const pg = new PGlite(pgdata, { startParams: [...PGlite.defaultStartParams, ...JSON.parse(settings)] });
pg.waitReady.then(() => pg.close()).catch((error) => { console.error(error); process.exitCode = 1; });
`;

/** The command line (after `node`) of the process that creates a cluster in `pgdata`. */
export function initdbArguments(pgliteEntry: string, pgdata: string): string[] {
  return [...EMBEDDED_WASM_FLAGS, '-e', INITDB, pgliteEntry, pgdata, JSON.stringify(EMBEDDED_SETTINGS)];
}

/** Creates the PostgreSQL cluster in `pgdata` if there is none yet, in a process of its own. */
export async function initializeDataDir(pgdata: string): Promise<void> {
  if (hasCluster(pgdata)) return;
  const pglite = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  try {
    await promisify(execFile)(process.execPath, initdbArguments(pglite, pgdata));
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim();
    throw new Error(`could not create the embedded database in ${pgdata}${stderr ? `: ${stderr}` : ''}`, { cause: error });
  }
  if (!hasCluster(pgdata)) throw new Error(`creating the embedded database in ${pgdata} left no PG_VERSION`);
}
