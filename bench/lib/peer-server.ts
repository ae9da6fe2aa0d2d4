/** Runs a peer's HTTP server as a bench child: listen, answer the orchestrator's calls, announce ready. */
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { announceReady, serveCalls } from './child.js';
import { profilerCalls } from './profiler.js';

export async function servePeer(server: http.Server, options: { release?: () => unknown; details?: Record<string, unknown> } = {}): Promise<void> {
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
      await options.release?.();
    },
  );
  announceReady({ url: `http://127.0.0.1:${port}`, ...options.details });
}
