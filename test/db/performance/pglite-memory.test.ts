import { describe, expect, it, vi } from 'vitest';
import v8 from 'node:v8';
import { existsSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { openDatabase, type Database } from '../../../src/db/database.js';
import { EMBEDDED_WASM_FLAGS, initializeDataDir } from '../../../src/db/performance/pglite-memory.js';
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

  it('has V8 optimize one WebAssembly function at a time before PGlite compiles its program', async () => {
    const setFlags = vi.spyOn(v8, 'setFlagsFromString');
    try {
      const database = await openDatabase({});
      await database.close();
      expect(setFlags).toHaveBeenCalledWith(EMBEDDED_WASM_FLAGS);
      expect(EMBEDDED_WASM_FLAGS).toBe('--wasm-num-compilation-tasks=1');
    } finally {
      setFlags.mockRestore();
    }
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
