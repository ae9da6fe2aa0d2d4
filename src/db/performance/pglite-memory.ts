/**
 * How the embedded database is kept small in the server process. PGlite's WebAssembly memory only
 * grows and is returned to the OS only when its whole thread ends, so (1) the buffer pool is sized
 * for Fieldgate's data rather than initdb's 128 MB default, which PostgreSQL touches entirely at
 * start, and (2) a new data directory is created (initdb runs a second PGlite and its own
 * WebAssembly program) by a short-lived child process: a worker thread would leave its malloc
 * arena and compiled code behind in this process, and (3) V8 optimizes PostgreSQL's hot functions
 * one at a time: each optimizing compile of a large function takes tens of MiB of scratch memory,
 * and several at once raise the peak and leave the malloc arenas they used large.
 * Measured effect and removal condition: docs/PERFORMANCE.md.
 */
import { createRequire } from 'node:module';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import v8 from 'node:v8';
import { PGlite } from '@electric-sql/pglite';
import { hasCluster } from '../embedded-cluster.js';

/** Server settings given to every embedded start, after PGlite's own. */
export const EMBEDDED_START_PARAMS: readonly string[] = [...PGlite.defaultStartParams, '-c', 'shared_buffers=16MB'];

/** V8 reads it whenever it starts compiling a WebAssembly module's functions, so it must be set before PGlite starts. */
export const EMBEDDED_WASM_FLAGS = '--wasm-num-compilation-tasks=1';

/** Applies EMBEDDED_WASM_FLAGS to the whole process; PGlite's is the only large WebAssembly program in it. */
export function limitWasmCompilation(): void {
  v8.setFlagsFromString(EMBEDDED_WASM_FLAGS);
}

/** Run as `node -e INITDB PGLITE_ENTRY PGDATA START_PARAMS_JSON`. */
const INITDB = `
const [pglite, pgdata, startParams] = process.argv.slice(1);
const { PGlite } = require(pglite);
const pg = new PGlite(pgdata, { startParams: JSON.parse(startParams) });
pg.waitReady.then(() => pg.close()).catch((error) => { console.error(error); process.exitCode = 1; });
`;

/** Creates the PostgreSQL cluster in `pgdata` if there is none yet, in a process of its own. */
export async function initializeDataDir(pgdata: string): Promise<void> {
  if (hasCluster(pgdata)) return;
  const pglite = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  try {
    await promisify(execFile)(process.execPath, ['-e', INITDB, pglite, pgdata, JSON.stringify(EMBEDDED_START_PARAMS)]);
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim();
    throw new Error(`could not create the embedded database in ${pgdata}${stderr ? `: ${stderr}` : ''}`, { cause: error });
  }
  if (!hasCluster(pgdata)) throw new Error(`creating the embedded database in ${pgdata} left no PG_VERSION`);
}
