/** PGlite's own data-directory dump, taken under the data-directory lock so no server writes meanwhile. */
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import path from 'node:path';
import type { Config } from '../config.js';
import { clusterDirectory, hasCluster } from '../db/embedded-cluster.js';
import { CommandFailed, defineCommand, print, UsageError, withRuntime } from './command.js';

function embeddedDataDir(config: Config, command: string): string {
  if (config.databaseUrl) throw new CommandFailed(`${command} works on the embedded database only; for PostgreSQL use pg_dump / pg_restore`);
  if (config.dataDir === 'memory://') throw new CommandFailed(`${command} needs a DATA_DIR on disk, not memory://`);
  return config.dataDir;
}

async function withLockedDataDir<T>(dataDir: string, fn: (pgdata: string) => Promise<T>): Promise<T> {
  const [{ acquireDataDirLock, DataDirLockedError }, { DatabaseUnavailableError }] = await Promise.all([import('../db/data-dir-lock.js'), import('../db/errors.js')]);
  let lock;
  try {
    mkdirSync(dataDir, { recursive: true });
    lock = acquireDataDirLock(dataDir);
  } catch (error) {
    // As every other command reports a DATA_DIR it cannot use: one line naming it, not a stack trace.
    if (error instanceof DataDirLockedError || !DatabaseUnavailableError.isConnectionFailure(error)) throw error;
    throw new DatabaseUnavailableError(dataDir, { cause: error });
  }
  try {
    return await fn(clusterDirectory(dataDir));
  } finally {
    lock.release();
  }
}

/**
 * The tar archive in a backup file, checked before PGlite sees it: PGlite decompresses without waiting on the stream it
 * writes to, so a file that is not gzip data ends the process with an unhandled rejection instead of an error.
 */
function backupArchive(input: string, bytes: Buffer): Buffer {
  let tar = bytes;
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
    try {
      tar = gunzipSync(bytes);
    } catch (error) {
      throw new CommandFailed(`${input} is not a usable backup: its gzip data is damaged (${(error as Error).message})`);
    }
  }
  // A tar archive's first header names its format at byte 257 (POSIX "ustar").
  if (tar.length < 512 || tar.toString('latin1', 257, 262) !== 'ustar') {
    throw new CommandFailed(`${input} is not a usable backup: it is not a file written by fieldgate backup (a .tar.gz of the data directory)`);
  }
  return tar;
}

const backup = defineCommand({
  summary: 'write the embedded database to a file (stop the server first)',
  synopsis: 'backup --output FILE [--force]',
  details: ['--output FILE   where to write the backup (a .tar.gz of the data directory)', '--force         overwrite FILE if it exists'],
  options: { output: { type: 'string', short: 'o' }, force: { type: 'boolean' } },
  async run({ io, values, config }) {
    if (!values.output) throw new UsageError('backup needs --output FILE');
    const dataDir = embeddedDataDir(config(), 'backup');
    const output = path.resolve(values.output);
    if (existsSync(output) && !values.force) throw new CommandFailed(`${output} exists; pass --force to overwrite it`);
    if (!hasCluster(clusterDirectory(dataDir))) throw new CommandFailed(`there is no database in ${dataDir}`);
    // Checked before the dump, which holds the data directory for a while: a typo in the path should not cost that.
    if (!statSync(path.dirname(output), { throwIfNoEntry: false })?.isDirectory()) {
      throw new CommandFailed(`cannot write ${output}: the directory ${path.dirname(output)} does not exist`);
    }
    const bytes = await withLockedDataDir(dataDir, async (pgdata) => {
      const { PGlite } = await import('@electric-sql/pglite');
      const db = new PGlite(pgdata);
      try {
        await db.waitReady;
        const dump = await db.dumpDataDir('gzip');
        return Buffer.from(await dump.arrayBuffer());
      } finally {
        await db.close();
      }
    });
    const partial = `${output}.partial`;
    try {
      writeFileSync(partial, bytes, { mode: 0o600 });
      renameSync(partial, output);
    } catch (error) {
      rmSync(partial, { force: true });
      throw new CommandFailed(`cannot write ${output}: ${(error as Error).message}`, { cause: error });
    }
    print(io, values.json, { backup: output, bytes: bytes.length }, `Wrote ${output} (${bytes.length} bytes) from ${dataDir}.`);
  },
});

const restore = defineCommand({
  summary: 'replace the embedded database with a backup (stop the server first)',
  synopsis: 'restore --input FILE [--force]',
  details: [
    '--input FILE   a file written by `fieldgate backup`',
    '--force        replace an existing database; it is kept beside as pgdata.before-restore-<time>',
  ],
  options: { input: { type: 'string', short: 'i' }, force: { type: 'boolean' } },
  async run({ io, values, config }) {
    if (!values.input) throw new UsageError('restore needs --input FILE');
    const input = path.resolve(values.input);
    if (!existsSync(input)) throw new CommandFailed(`no backup at ${input}`);
    const loaded = config();
    const dataDir = embeddedDataDir(loaded, 'restore');
    const kept = await withLockedDataDir(dataDir, async (pgdata) => {
      let aside: string | undefined;
      if (existsSync(pgdata) && readdirSync(pgdata).length > 0) {
        if (!values.force) throw new CommandFailed(`${dataDir} already holds a database; pass --force to replace it`);
        aside = `${pgdata}.before-restore-${new Date().toISOString().replace(/[:.]/g, '-')}`;
        renameSync(pgdata, aside);
      }
      const { PGlite } = await import('@electric-sql/pglite');
      try {
        const db = new PGlite(pgdata, { loadDataDir: new Blob([new Uint8Array(backupArchive(input, await readFile(input)))]) });
        await db.waitReady;
        await db.query('select 1');
        await db.close();
      } catch (error) {
        // What the failed load left is no database: the previous one goes back, or the directory is empty again.
        rmSync(pgdata, { recursive: true, force: true });
        if (aside) renameSync(aside, pgdata);
        throw error instanceof CommandFailed ? error : new CommandFailed(`${input} is not a usable backup: ${(error as Error).message}`);
      }
      return aside;
    });
    // Applies any migrations newer than the backup now rather than at the next start.
    await withRuntime(loaded, async () => {});
    print(
      io,
      values.json,
      { restored: input, dataDir, previous: kept ?? null },
      `Restored ${input} into ${dataDir}.${kept ? ` The previous database is kept at ${kept}.` : ''}`,
    );
  },
});

export { backup, restore };
