/**
 * A throwaway PostgreSQL database for one benchmark run: created fresh on the server named by
 * BENCH_DATABASE_URL (or TEST_DATABASE_URL, or the local default) and dropped afterwards.
 */
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';

export const DEFAULT_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/test';

export function adminUrl(): string {
  return process.env.BENCH_DATABASE_URL?.trim() || process.env.TEST_DATABASE_URL?.trim() || DEFAULT_ADMIN_URL;
}

export interface BenchDatabase {
  url: string;
  serverVersion: string;
  drop(): Promise<void>;
}

/** Creates the database, or returns the reason there is none (no server answering, no rights). */
export async function createBenchDatabase(admin = adminUrl()): Promise<BenchDatabase | { skipped: string }> {
  const name = `fieldgate_bench_${randomBytes(6).toString('hex')}`;
  const sql = postgres(admin, { max: 1, onnotice: () => {}, connect_timeout: 5 });
  let serverVersion: string;
  try {
    const [row] = await sql<{ server_version: string }[]>`show server_version`;
    serverVersion = row?.server_version ?? 'unknown';
    await sql.unsafe(`create database "${name}"`);
  } catch (error) {
    const safe = new URL(admin);
    safe.password = '';
    return { skipped: `no PostgreSQL server usable at ${safe.href} (${error instanceof Error ? error.message : String(error)})` };
  } finally {
    await sql.end({ timeout: 5 }).catch(() => {});
  }
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    url: url.href,
    serverVersion,
    async drop() {
      const conn = postgres(admin, { max: 1, onnotice: () => {} });
      try {
        await conn.unsafe(`drop database if exists "${name}" with (force)`);
      } finally {
        await conn.end({ timeout: 5 });
      }
    },
  };
}
