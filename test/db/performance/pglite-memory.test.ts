import { describe, expect, it, vi } from 'vitest';
import v8 from 'node:v8';
import { existsSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { openDatabase, type Database } from '../../../src/db/database.js';
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import { EMBEDDED_WASM_FLAGS, initdbArguments, initializeDataDir } from '../../../src/db/performance/pglite-memory.js';
import { temporaryDirectories } from '../../support/temp-dirs.js';

async function setting(database: Database, name: 'shared_buffers'): Promise<string> {
  const result = await database.db.execute(sql.raw(`show ${name}`));
  return (result as unknown as { rows: Record<string, string>[] }).rows[0]![name]!;
}

describe('the embedded database’s memory', () => {
  const newDir = temporaryDirectories('fieldgate-memory-');

  it('runs with a small buffer pool, in memory and on disk, first start and restart alike', async () => {
    const dataDir = newDir();
    for (const options of [{}, { dataDir }, { dataDir }]) {
      const database = await openDatabase(options);
      try {
        expect(await setting(database, 'shared_buffers')).toBe('16MB');
      } finally {
        await database.close();
      }
    }
  });

  it('sets V8 to the baseline WebAssembly compiler before PGlite compiles its program', async () => {
    const setFlags = vi.spyOn(v8, 'setFlagsFromString');
    try {
      const database = await openDatabase({});
      await database.close();
      expect(setFlags).toHaveBeenCalledWith(EMBEDDED_WASM_FLAGS.join(' '));
      expect(EMBEDDED_WASM_FLAGS).toEqual(['--wasm-num-compilation-tasks=1', '--no-wasm-tier-up', '--no-wasm-dynamic-tiering']);
    } finally {
      setFlags.mockRestore();
    }
  });

  it('never optimizes PostgreSQL once the flags are set, however hot its functions get', async () => {
    // A child set up as the server sets itself up, with V8 reporting each function it compiles.
    const script = `
      const v8 = require('node:v8');
      v8.setFlagsFromString(process.env.EMBEDDED_WASM_FLAGS);
      const { PGlite } = require(process.argv[1]);
      (async () => {
        const pg = new PGlite();
        for (let i = 0; i < 400; i++) await pg.query('select $1::int + 1 as n, now()', [i]);
        await pg.close();
      })();`;
    const pglite = createRequire(import.meta.url).resolve('@electric-sql/pglite');
    const compiles = async (flags: string) => {
      const { stdout } = await promisify(execFile)(process.execPath, ['--trace-wasm-compilation-times', '-e', script, pglite], {
        env: { ...process.env, EMBEDDED_WASM_FLAGS: flags },
        maxBuffer: 64 * 1024 * 1024,
      });
      return { baseline: stdout.includes('using Liftoff'), optimized: stdout.split('\n').filter((line) => line.includes('using TurboFan')).length };
    };
    expect(await compiles(EMBEDDED_WASM_FLAGS.join(' '))).toEqual({ baseline: true, optimized: 0 });
    // Without them, the same statements make V8 optimize: the check above can fail.
    expect((await compiles('--wasm-num-compilation-tasks=1')).optimized).toBeGreaterThan(0);
  });

  it('creates a cluster with the baseline compiler only, in a process of its own', async () => {
    const pgdata = path.join(newDir(), 'pgdata');
    const pglite = createRequire(import.meta.url).resolve('@electric-sql/pglite');
    const { stdout } = await promisify(execFile)(process.execPath, ['--trace-wasm-compilation-times', ...initdbArguments(pglite, pgdata)], {
      maxBuffer: 64 * 1024 * 1024,
    });
    expect(stdout).toContain('using Liftoff');
    expect(stdout).not.toContain('using TurboFan');
    expect(existsSync(path.join(pgdata, 'PG_VERSION'))).toBe(true);
  });

  it('creates a cluster in a new directory and leaves an existing one alone', async () => {
    const pgdata = path.join(newDir(), 'pgdata');
    await initializeDataDir(pgdata);
    const version = path.join(pgdata, 'PG_VERSION');
    expect(existsSync(version)).toBe(true);
    const before = statSync(version).mtimeMs;
    await initializeDataDir(pgdata);
    expect(statSync(version).mtimeMs).toBe(before);
  });

  it('says which directory it could not create a cluster in, and why', async () => {
    const blocked = path.join(newDir(), 'file');
    writeFileSync(blocked, '');
    const pgdata = path.join(blocked, 'pgdata');
    await expect(initializeDataDir(pgdata)).rejects.toThrow(`could not create the embedded database in ${pgdata}: Error: ENOTDIR`);
  });
});
