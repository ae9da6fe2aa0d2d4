import type { SQL } from 'drizzle-orm';
import { rowsOf, type Db } from '../../db/database.js';

export { rowsOf };

/** PGlite answers `{ rows }`, postgres.js an array; raw SQL only where the builder cannot say it in one statement. */
export async function queryRows<T>(db: Pick<Db, 'execute'>, statement: SQL): Promise<T[]> {
  return rowsOf<T>(await db.execute(statement));
}

/** A timestamp column read through raw SQL: postgres.js gives a Date, PGlite may give a string. */
export function toDate(value: Date | string): Date {
  return value instanceof Date ? value : new Date(value);
}
