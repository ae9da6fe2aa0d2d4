import type { SQL } from 'drizzle-orm';
import type { Db } from '../../db/database.js';

/** PGlite answers `{ rows }`, postgres.js an array; raw SQL only where the builder cannot say it in one statement. */
export async function queryRows<T>(db: Pick<Db, 'execute'>, statement: SQL): Promise<T[]> {
  return rowsOf<T>(await db.execute(statement));
}

/** The rows of a raw statement's result, on either driver. */
export function rowsOf<T>(result: unknown): T[] {
  return ((result as { rows?: unknown }).rows ?? result) as T[];
}

/** A timestamp column read through raw SQL: postgres.js gives a Date, PGlite may give a string. */
export function toDate(value: Date | string): Date {
  return value instanceof Date ? value : new Date(value);
}
