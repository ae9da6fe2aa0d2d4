/** A client that sends its headers slowly is cut off near the documented 10 s, not after Node's 30 s check interval. */
import { expect, it } from 'vitest';
import net from 'node:net';
import { startServer } from '../src/server.js';
import { createTestRuntime } from './support/runtime.js';

it('cuts off a client still sending headers well before 30 s', async () => {
  const { runtime, testDatabase } = await createTestRuntime('pglite', { PORT: '0' });
  const server = await startServer(runtime);
  try {
    const started = Date.now();
    const closedAfterMs = await new Promise<number>((resolve, reject) => {
      const socket = net.connect(server.port, '127.0.0.1', () => socket.write('GET /health HTTP/1.1\r\nHost: localhost\r\n'));
      // One header byte a second: never finishes the headers.
      const drip = setInterval(() => socket.writable && socket.write('X'), 1_000);
      socket.on('data', () => {});
      socket.on('error', () => {});
      socket.on('close', () => {
        clearInterval(drip);
        resolve(Date.now() - started);
      });
      setTimeout(() => reject(new Error('still connected after 25 s')), 25_000).unref();
    });
    expect(closedAfterMs).toBeLessThan(20_000);
  } finally {
    await server.close();
    await testDatabase.drop();
  }
}, 40_000);
