/**
 * Recognising PostgreSQL errors the same way for both drivers: postgres.js and PGlite both set
 * the SQLSTATE on `code`, and Drizzle may wrap either in an error whose `cause` holds it.
 */
const FOREIGN_KEY_VIOLATION = '23503';

function sqlState(error: unknown): string | undefined {
  for (let e = error, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
  }
  return undefined;
}

/** A row referred to a row that does not exist (any more): e.g. its user was deleted meanwhile. */
export function isForeignKeyViolation(error: unknown): boolean {
  return sqlState(error) === FOREIGN_KEY_VIOLATION;
}
