/**
 * Builds a fully wired, migrated runtime (and its Express app) on a fresh test database, and
 * `describeEachDatabase` runs a suite once per database kind.
 */
import { afterAll, beforeAll, describe } from 'vitest';
import type { Express } from 'express';
import { Writable } from 'node:stream';
import { loadConfig, type Config } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { openRuntime, type Runtime } from '../../src/runtime.js';
import { createApp } from '../../src/app.js';
import { createTestDatabase, DATABASE_KINDS, type DatabaseKind, type TestDatabase } from './databases.js';

export const TEST_ISSUER = 'http://localhost:3000';

/** Collects every log line the runtime writes, for assertions about what is (not) logged. */
export class LogCapture extends Writable {
  readonly lines: string[] = [];
  override _write(chunk: Buffer, _encoding: string, callback: () => void): void {
    this.lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    callback();
  }
  get text(): string {
    return this.lines.join('\n');
  }
  records(): Record<string, unknown>[] {
    return this.lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  }
}

export interface TestRuntime {
  kind: DatabaseKind;
  runtime: Runtime;
  app: Express;
  config: Config;
  logs: LogCapture;
  testDatabase: TestDatabase;
  close(): Promise<void>;
}

export async function createTestRuntime(
  kind: DatabaseKind,
  env: Record<string, string> = {},
  database: { poolSize?: number } = {},
): Promise<TestRuntime> {
  const testDatabase = await createTestDatabase(kind, database);
  const config = loadConfig({ ISSUER: TEST_ISSUER, DATA_DIR: 'memory://', LOG_LEVEL: 'info', DEMO: 'false', ...env });
  const logs = new LogCapture();
  const runtime = await openRuntime(config, createLogger(config.logLevel, logs), await testDatabase.open());
  const app = createApp(runtime);
  return {
    kind,
    runtime,
    app,
    config,
    logs,
    testDatabase,
    async close() {
      await runtime.close();
      await testDatabase.drop();
    },
  };
}

/**
 * Runs `suite` once for each database kind. The suite receives a getter for its TestRuntime,
 * created before its tests and closed after them.
 */
export function describeEachDatabase(
  title: string,
  suite: (context: () => TestRuntime) => void,
  env: Record<string, string> = {},
): void {
  for (const kind of DATABASE_KINDS) {
    describe(`${title} [${kind}]`, () => {
      let context: TestRuntime | undefined;
      beforeAll(async () => {
        context = await createTestRuntime(kind, env);
      });
      afterAll(async () => {
        await context?.close();
      });
      suite(() => {
        if (!context) throw new Error('test runtime not ready');
        return context;
      });
    });
  }
}
