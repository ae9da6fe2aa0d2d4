/**
 * Baseline of target 3: a bare Express 5 route in a process of its own — fixed JSON, no
 * middleware, no database — the ceiling a REST read in a separate server is compared with.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { announceFailure, announceReady, serveCalls } from '../lib/child.js';
import { profilerCalls } from '../lib/profiler.js';

async function main(): Promise<void> {
  const app = express();
  app.get('/bare', (_req, res) => {
    res.json({ id: 1, name: 'Trail Backpack' });
  });
  const server = http.createServer(app);
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  serveCalls(
    { memory: () => process.memoryUsage(), cpu: () => process.cpuUsage(), ...profilerCalls(process.env.BENCH_PROFILE_DIR || undefined) },
    async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  );
  announceReady({ url: `http://127.0.0.1:${port}` });
}

main().catch(announceFailure);
