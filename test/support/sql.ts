/** The one way tests look at the SQL a request sends (plugin-drizzle's tests do the same through the Drizzle logger). */
import type { Runtime } from '../../src/runtime.js';

/** The SQL statements `run` sends, in order. */
export async function captureSql(runtime: Runtime, run: () => Promise<unknown>): Promise<string[]> {
  const statements: string[] = [];
  const stop = runtime.database.onQuery((query) => statements.push(query));
  try {
    await run();
  } finally {
    stop();
  }
  return statements;
}
