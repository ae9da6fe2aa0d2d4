import type { SQL } from 'drizzle-orm';
import type { Db } from '../../db/database.js';

/** PGlite answers `{ rows }`, postgres.js an array; raw SQL only where the builder cannot say it in one statement. */
export async function queryRows<T>(db: Pick<Db, 'execute'>, statement: SQL): Promise<T[]> {
  const result = await db.execute(statement);
  return ((result as { rows?: unknown }).rows ?? result) as T[];
}

/** A timestamp column read through raw SQL: postgres.js gives a Date, PGlite may give a string. */
export function toDate(value: Date | string): Date {
  return value instanceof Date ? value : new Date(value);
}
