/**
 * Sustained mixed load, CI-sized: a few seconds at concurrency 16 of code flows,
 * refreshes, REST reads with `fields`, order creations, contended If-Match PATCHes and GraphQL
 * queries against a `fieldgate serve` process — no 5xx, no request left unanswered, and no
 * acknowledged change missing afterwards. No timing is asserted; the 30-second run with the
 * memory bound is bench/load/sustained.ts (numbers in docs/LOAD.md).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASE_KINDS } from '../support/databases.js';
import { startServerProcess, type ServerProcess } from '../support/processes.js';
import { describeRun, prepareMixedLoad, runMixedLoad, verifyMixedLoad, type MixedLoadTarget, type Operation } from '../support/reliability/mixed-load.js';
import { createStorage, withSetupRuntime, type Storage } from '../support/reliability/setup.js';

const ISSUER = 'http://fieldgate.test';
const DURATION_MS = 5_000;
const CONCURRENCY = 16;

for (const kind of DATABASE_KINDS) {
  describe(`mixed load [${kind}]`, () => {
    let storage: Storage;
    let server: ServerProcess;
    let target: MixedLoadTarget;

    beforeAll(async () => {
      storage = await createStorage(kind);
      const env = { ...storage.env, ISSUER, DEMO: 'false' };
      const prepared = await withSetupRuntime(env, (runtime) => prepareMixedLoad(runtime, { users: 4, products: 10, counters: 3 }));
      server = await startServerProcess(env);
      target = { ...prepared, baseUrl: server.url };
    });

    afterAll(async () => {
      await server?.stop('SIGKILL');
      await storage?.destroy();
    });

    it(`runs ${DURATION_MS / 1000} s at concurrency ${CONCURRENCY} with no 5xx and no lost update`, async () => {
      const report = await runMixedLoad(target, { durationMs: DURATION_MS, concurrency: CONCURRENCY, serverPid: server.child.pid });
      const verification = await verifyMixedLoad(target, report);
      console.info(`[mixed load, ${kind}]\n${describeRun(report, verification)}`);

      expect(Object.keys(report.statuses).filter((status) => Number(status) >= 500)).toEqual([]);
      expect(report.transportErrors).toEqual([]);
      expect(report.unexpected).toEqual([]);
      expect(verification.lost).toEqual([]);
      // The whole mix ran, and the counters were written (and contended) for real.
      for (const operation of Object.keys(report.operations) as Operation[]) expect(report.operations[operation], operation).toBeGreaterThan(0);
      expect(verification.counters.reduce((sum, counter) => sum + counter.stored, 0)).toBeGreaterThan(0);
      expect(verification.creations.stored).toBeGreaterThan(0);
      expect(verification.refreshChainsChecked).toBeGreaterThan(0);
      expect(server.child.exitCode).toBeNull();
    });
  });
}
