/**
 * A real HTTP server for the end-to-end specs: a free port is picked first so the issuer
 * (ISSUER) can name it, then the app of a fresh test runtime listens on it.
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { createApp } from '../../src/app.js';
import type { DatabaseKind } from './databases.js';
import { createTestRuntime, type TestRuntime } from './runtime.js';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

export interface RunningTestServer {
  baseUrl: string;
  context: TestRuntime;
  close(): Promise<void>;
}

export async function startTestServer(kind: DatabaseKind, env: Record<string, string> = {}): Promise<RunningTestServer> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const context = await createTestRuntime(kind, { ISSUER: baseUrl, ...env });
  const server = http.createServer(createApp(context.runtime));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  return {
    baseUrl,
    context,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await context.close();
    },
  };
}
