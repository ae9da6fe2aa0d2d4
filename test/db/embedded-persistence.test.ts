import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { openDatabase } from '../../src/db/database.js';
import { DataDirLockedError } from '../../src/db/data-dir-lock.js';
import { sellers } from '../../src/db/schema.js';
import { temporaryDirectories } from '../support/temp-dirs.js';

describe('embedded database on disk', () => {
  const newDir = temporaryDirectories('fieldgate-data-');

  it('keeps data across a close and reopen', async () => {
    const dataDir = newDir();
    const first = await openDatabase({ dataDir });
    await first.migrate();
    const [row] = await first.db.insert(sellers).values({ name: 'Persisted Seller', rating: 4.5 }).returning();
    await first.close();

    const second = await openDatabase({ dataDir });
    try {
      await second.migrate();
      const found = await second.db.select().from(sellers).where(eq(sellers.id, row!.id));
      expect(found).toEqual([{ id: row!.id, name: 'Persisted Seller', rating: 4.5 }]);
    } finally {
      await second.close();
    }
  });

  it('is held by one process at a time and says who holds it', async () => {
    const dataDir = newDir();
    const holder = await openDatabase({ dataDir });
    try {
      expect(existsSync(path.join(dataDir, 'fieldgate.lock'))).toBe(true);
      expect(JSON.parse(readFileSync(path.join(dataDir, 'fieldgate.lock'), 'utf8')).pid).toBe(process.pid);
      await expect(openDatabase({ dataDir })).rejects.toBeInstanceOf(DataDirLockedError);
      await expect(openDatabase({ dataDir })).rejects.toThrow(/in use by process \d+/);
    } finally {
      await holder.close();
    }
    expect(existsSync(path.join(dataDir, 'fieldgate.lock'))).toBe(false);
    const next = await openDatabase({ dataDir });
    await next.close();
  });
});
