/**
 * PORT=0: `serve` picks the port before the runtime exists (tokens and links name it) and holds it until the server
 * takes it over, so another process on a busy host cannot take it in between.
 */
import { expect, it } from 'vitest';
import net from 'node:net';
import { reservePort } from '../../src/http/reserved-port.js';
import { startServer } from '../../src/server.js';
import { createTestRuntime } from '../support/runtime.js';

/** Whether another listener can open `port` now. */
const canListenOn = (port: number) =>
  new Promise<boolean>((resolve) => {
    const other = net.createServer();
    other.once('error', () => resolve(false));
    other.listen(port, '127.0.0.1', () => other.close(() => resolve(true)));
  });

/** Sends GET /healthz at once, and resolves with the status line of the answer, or 'hung up'. */
const getHealth = (port: number) =>
  new Promise<string>((resolve, reject) => {
    let answer = '';
    const client = net.connect(port, '127.0.0.1', () => client.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n'));
    client.on('data', (chunk) => (answer += chunk));
    client.on('error', () => {});
    client.on('close', () => resolve(answer ? answer.split('\r\n')[0]! : 'hung up'));
    setTimeout(() => reject(new Error('left waiting')), 20_000).unref();
  });

it('holds the port until the server listens on it, and serves the clients that came while it started', async () => {
  const reserved = await reservePort('127.0.0.1');
  expect(await canListenOn(reserved.port)).toBe(false);
  const early = getHealth(reserved.port);

  const { runtime, testDatabase } = await createTestRuntime('pglite', { PORT: String(reserved.port) });
  const server = await startServer(runtime, { reserved });
  try {
    expect(server.port).toBe(reserved.port);
    expect(await early).toBe('HTTP/1.1 200 OK');
    expect(await getHealth(reserved.port)).toBe('HTTP/1.1 200 OK');
    // Releasing after the handover must not close the server's listening socket.
    await reserved.release();
    expect(await getHealth(reserved.port)).toBe('HTTP/1.1 200 OK');
  } finally {
    await server.close();
    await testDatabase.drop();
  }
  expect(await canListenOn(reserved.port)).toBe(true);
}, 30_000);

it('gives the port back, hanging up on waiting clients, when the start fails before the handover', async () => {
  const reserved = await reservePort('127.0.0.1');
  const waiting = getHealth(reserved.port);
  await new Promise((resolve) => setTimeout(resolve, 100));
  await reserved.release();
  expect(await waiting).toBe('hung up');
  expect(await canListenOn(reserved.port)).toBe(true);
});

it('names PORT when HOST is not an address of this host', async () => {
  await expect(reservePort('192.0.2.1')).rejects.toThrow(/cannot listen on 192\.0\.2\.1:0 \(PORT\)/);
});
