import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { acquireDataDirLock, DataDirLockedError } from '../../src/db/data-dir-lock.js';
import { temporaryDirectories } from '../support/temp-dirs.js';

/** Field 22 of /proc/<pid>/stat: when the process started. */
function startTimeOf(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!;
}

describe('the embedded data directory lock', () => {
  const newDir = temporaryDirectories('fieldgate-lock-');

  it('takes over a lock left by a killed process whose pid this process now has, as in a restarted container', () => {
    const dataDir = newDir();
    // The previous container's node was killed with the same pid (1 in a container) and its lock survived in the volume.
    writeFileSync(path.join(dataDir, 'fieldgate.lock'), JSON.stringify({ pid: process.pid, command: 'fieldgate.js serve' }));
    const lock = acquireDataDirLock(dataDir);
    try {
      expect(() => acquireDataDirLock(dataDir)).toThrow(DataDirLockedError);
    } finally {
      lock.release();
    }
    expect(existsSync(path.join(dataDir, 'fieldgate.lock'))).toBe(false);
  });

  it.runIf(existsSync('/proc/self/stat'))('takes over a lock whose pid now belongs to another, later process', () => {
    const dataDir = newDir();
    const other = process.ppid;
    writeFileSync(path.join(dataDir, 'fieldgate.lock'), JSON.stringify({ pid: other, command: 'fieldgate.js serve', started: `${startTimeOf(other)}1` }));
    acquireDataDirLock(dataDir).release();
    // The same pid with its real start time is the owner itself, alive: refused.
    writeFileSync(path.join(dataDir, 'fieldgate.lock'), JSON.stringify({ pid: other, command: 'fieldgate.js serve', started: startTimeOf(other) }));
    expect(() => acquireDataDirLock(dataDir)).toThrow(`in use by process ${other}`);
  });

  it('never takes over a lock file another process has just created and is still writing', () => {
    const dataDir = newDir();
    writeFileSync(path.join(dataDir, 'fieldgate.lock'), '');
    expect(() => acquireDataDirLock(dataDir)).toThrow(DataDirLockedError);
    expect(() => acquireDataDirLock(dataDir)).toThrow(/in use by a process that is starting/);
  });
});
