/**
 * PORT=0: `serve` picks the port before the runtime exists (tokens and links name it) and holds it until the server
 * takes it over, so another process on a busy host cannot take it in between.
 */
import { expect, it } from 'vitest';
import net from 'node:net';
import { reservePort, startServer } from '../src/server.js';
import { createTestRuntime } from './support/runtime.js';

/** Whether another listener can open `port` now. */
const canListenOn = (port: number) =>
  new Promise<boolean>((resolve) => {
    const other = net.createServer();
    other.once('error', () => resolve(false));
    other.listen(port, '127.0.0.1', () => other.close(() => resolve(true)));
  });

/** Connects and reports how the connection ended: hung up on, or answered. */
const connectAndWait = (port: number) =>
  new Promise<'hung up' | 'answered'>((resolve, reject) => {
    const client = net.connect(port, '127.0.0.1', () => client.write('GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n'));
    client.on('data', () => {
      client.destroy();
      resolve('answered');
    });
    client.on('error', () => {});
    client.on('close', () => resolve('hung up'));
    setTimeout(() => reject(new Error('left waiting')), 5_000).unref();
  });

it('holds the port from the pick until the server listens on it, and hangs up on early clients', async () => {
  const reserved = await reservePort('127.0.0.1');
  expect(await canListenOn(reserved.port)).toBe(false);
  expect(await connectAndWait(reserved.port)).toBe('hung up');

  const { runtime, testDatabase } = await createTestRuntime('pglite', { PORT: String(reserved.port) });
  const server = await startServer(runtime, { reserved });
  try {
    expect(server.port).toBe(reserved.port);
    expect(await connectAndWait(reserved.port)).toBe('answered');
    // Releasing after the takeover must not close the server's listening socket.
    await reserved.release();
    expect(await connectAndWait(reserved.port)).toBe('answered');
  } finally {
    await server.close();
    await testDatabase.drop();
  }
  expect(await canListenOn(reserved.port)).toBe(true);
});

it('gives the port back when the start fails before the server took it', async () => {
  const reserved = await reservePort('127.0.0.1');
  await reserved.release();
  expect(await canListenOn(reserved.port)).toBe(true);
});

it('names PORT when HOST is not an address of this host', async () => {
  await expect(reservePort('192.0.2.1')).rejects.toThrow(/\(PORT\)/);
});
