/** What the numbers were measured on: they only mean something next to this. */
import os from 'node:os';
import { readFileSync } from 'node:fs';
import { REPO_ROOT } from './child.js';

export interface MachineInfo {
  cpuModel: string;
  cores: number;
  memoryGiB: number;
  os: string;
  node: string;
  loadAverageBefore: number[];
  loadAverageAfter?: number[];
  versions: Record<string, string>;
}

function packageVersion(name: string): string {
  try {
    return (JSON.parse(readFileSync(`${REPO_ROOT}node_modules/${name}/package.json`, 'utf8')) as { version: string }).version;
  } catch {
    return 'not installed';
  }
}

export function machineInfo(): MachineInfo {
  const cpus = os.cpus();
  return {
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    os: `${os.type()} ${os.release()} (${os.arch()})`,
    node: process.version,
    loadAverageBefore: os.loadavg(),
    versions: Object.fromEntries(
      ['express', 'graphql-yoga', '@pothos/core', 'drizzle-orm', '@electric-sql/pglite', 'postgres', 'jose', 'fast-jwt', 'oidc-provider', 'autocannon'].map((name) => [
        name,
        packageVersion(name),
      ]),
    ),
  };
}
