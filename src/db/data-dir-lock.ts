/**
 * An embedded data directory may be opened by one process at a time: two PGlite instances on
 * one directory would corrupt it. The lock is a file created exclusively, holding the owner's
 * pid and command; a lock left by a dead process (after kill -9) is taken over.
 */
import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';

export class DataDirLockedError extends Error {
  override readonly name = 'DataDirLockedError';
  constructor(
    readonly dataDir: string,
    readonly ownerPid: number,
    readonly ownerCommand: string,
  ) {
    super(
      `the data directory ${dataDir} is in use by process ${ownerPid} (${ownerCommand}); ` +
        'stop that process first, or point DATABASE_URL at a PostgreSQL server to run several processes',
    );
  }
}

export interface DataDirLock {
  release(): void;
}

interface LockOwner {
  pid: number;
  command: string;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readOwner(lockFile: string): LockOwner | undefined {
  try {
    const owner = JSON.parse(readFileSync(lockFile, 'utf8')) as Partial<LockOwner>;
    return typeof owner.pid === 'number' ? { pid: owner.pid, command: String(owner.command ?? 'unknown') } : undefined;
  } catch {
    return undefined;
  }
}

export function acquireDataDirLock(dataDir: string): DataDirLock {
  const lockFile = path.join(dataDir, 'fieldgate.lock');
  const me: LockOwner = { pid: process.pid, command: process.argv.slice(1).map((a) => path.basename(a)).join(' ') };
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(lockFile, 'wx', 0o600);
      writeSync(fd, JSON.stringify(me));
      closeSync(fd);
      let released = false;
      return {
        release() {
          if (released) return;
          released = true;
          if (readOwner(lockFile)?.pid === process.pid) rmSync(lockFile, { force: true });
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const owner = readOwner(lockFile);
      if (owner && owner.pid !== process.pid && isAlive(owner.pid)) {
        throw new DataDirLockedError(dataDir, owner.pid, owner.command);
      }
      if (owner?.pid === process.pid) {
        throw new DataDirLockedError(dataDir, owner.pid, 'this process');
      }
      // Stale lock from a process that died without releasing it.
      rmSync(lockFile, { force: true });
    }
  }
  throw new Error(`could not lock the data directory ${dataDir}`);
}
