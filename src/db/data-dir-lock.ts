/**
 * An embedded data directory may be opened by one process at a time: two PGlite instances on
 * one directory would corrupt it. The lock is a file holding the owner's pid, command and start
 * time, put in place whole (written aside, then hard-linked under its name, which fails if it
 * exists); a lock left by a dead process (after kill -9) is taken over, also when a new process
 * got the dead one's pid (a restarted container's node is pid 1 again).
 */
import { closeSync, linkSync, openSync, readFileSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';

export class DataDirLockedError extends Error {
  override readonly name = 'DataDirLockedError';
  constructor(
    readonly dataDir: string,
    readonly ownerPid: number,
    readonly ownerCommand: string,
  ) {
    super(
      `the data directory ${dataDir} is in use by ${ownerPid === 0 ? ownerCommand : `process ${ownerPid} (${ownerCommand})`}; ` +
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
  /** The owner's start time in clock ticks since boot (Linux), to tell it from a later process given the same pid. */
  started?: string;
  /** Names this hold of the lock, so a release never removes a lock another process has taken since. */
  token?: string;
}

/** A lock file another process is still writing (the fallback for file systems without hard links) looks empty this long. */
const WRITING_GRACE_MS = 5_000;

/** Lock files this process holds: one with our pid that is not among them was left by an earlier process. */
const held = new Set<string>();

/** Field 22 of /proc/<pid>/stat; undefined where there is no /proc (macOS) or no such process. */
function startTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

function isAlive(owner: LockOwner): boolean {
  try {
    process.kill(owner.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  // The pid is taken, but perhaps by a process started after the owner died (a reboot, a restarted container).
  const started = owner.started === undefined ? undefined : startTime(owner.pid);
  return started === undefined || started === owner.started;
}

function readOwner(text: string): LockOwner | undefined {
  try {
    const owner = JSON.parse(text) as Partial<LockOwner>;
    if (typeof owner.pid !== 'number') return undefined;
    return { ...owner, pid: owner.pid, command: String(owner.command ?? 'unknown') };
  } catch {
    return undefined;
  }
}

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** Creates `lockFile` holding `content`, whole or not at all; false when it exists. */
function createWhole(lockFile: string, content: string): boolean {
  const aside = `${lockFile}.${process.pid}.${randomBytes(6).toString('hex')}`;
  const fd = openSync(aside, 'wx', 0o600);
  try {
    writeSync(fd, content);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(aside, lockFile);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    if (!['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EXDEV'].includes(code ?? '')) throw error;
    // No hard links here: create it exclusively and write it, which another process may see half done.
    try {
      const lockFd = openSync(lockFile, 'wx', 0o600);
      try {
        writeSync(lockFd, content);
      } finally {
        closeSync(lockFd);
      }
      return true;
    } catch (fallbackError) {
      if ((fallbackError as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw fallbackError;
    }
  } finally {
    rmSync(aside, { force: true });
  }
}

/**
 * Removes the stale lock whose text was `seen`. It is renamed aside first, which only one process can do: if what was
 * renamed is not what was judged stale, another process took the directory meanwhile, and its lock is put back.
 */
function removeStale(lockFile: string, seen: string): void {
  const aside = `${lockFile}.stale.${process.pid}.${randomBytes(6).toString('hex')}`;
  try {
    renameSync(lockFile, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  try {
    if (readText(aside) !== seen) {
      try {
        linkSync(aside, lockFile);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
    }
  } finally {
    rmSync(aside, { force: true });
  }
}

function lockedBy(dataDir: string, lockFile: string, text: string): DataDirLockedError | undefined {
  const owner = readOwner(text);
  if (owner === undefined) {
    // Empty or cut short: being written right now by a process that just created it, unless it has been like that a while.
    const age = Date.now() - (statSync(lockFile, { throwIfNoEntry: false })?.mtimeMs ?? 0);
    return text.trim() === '' && age < WRITING_GRACE_MS ? new DataDirLockedError(dataDir, 0, 'a process that is starting') : undefined;
  }
  if (owner.pid === process.pid) return held.has(lockFile) ? new DataDirLockedError(dataDir, owner.pid, 'this process') : undefined;
  return isAlive(owner) ? new DataDirLockedError(dataDir, owner.pid, owner.command) : undefined;
}

export function acquireDataDirLock(dataDir: string): DataDirLock {
  const lockFile = path.join(path.resolve(dataDir), 'fieldgate.lock');
  const started = startTime(process.pid);
  const me: LockOwner = {
    pid: process.pid,
    command: process.argv.slice(1).map((a) => path.basename(a)).join(' '),
    ...(started !== undefined && { started }),
    token: randomBytes(12).toString('hex'),
  };
  for (let attempt = 0; attempt < 5; attempt++) {
    if (createWhole(lockFile, JSON.stringify(me))) {
      held.add(lockFile);
      let released = false;
      return {
        release() {
          if (released) return;
          released = true;
          held.delete(lockFile);
          const text = readText(lockFile);
          if (text !== undefined && readOwner(text)?.token === me.token) rmSync(lockFile, { force: true });
        },
      };
    }
    const text = readText(lockFile);
    if (text === undefined) continue;
    const locked = lockedBy(dataDir, lockFile, text);
    if (locked) throw locked;
    removeStale(lockFile, text);
  }
  throw new Error(`could not lock the data directory ${dataDir}`);
}
