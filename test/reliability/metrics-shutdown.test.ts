/**
 * SIGTERM with a connection open on METRICS_PORT: systemd gives the process TimeoutStopSec (20 s in docs/DEPLOYMENT.md)
 * before SIGKILL, and the server promises to drain in at most 10 s. A scraper's half-sent request used to hold the
 * metrics listener, and so the process, for as long as the client kept the socket open.
 */
import { afterEach, describe, expect, it } from 'vitest';
import net from 'node:net';
import { freePort, startServerProcess, type ServerProcess } from '../support/processes.js';

describe('fieldgate serve with METRICS_PORT on SIGTERM', () => {
  let server: ServerProcess | undefined;
  const sockets: net.Socket[] = [];
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.destroy();
    await server?.stop('SIGKILL');
  });

  it('exits 0 promptly while a client holds a half-sent request and an idle keep-alive connection on the metrics port', async () => {
    const metricsPort = await freePort();
    server = await startServerProcess({ DATA_DIR: 'memory://', DEMO: 'false', METRICS_PORT: String(metricsPort) });
    const scrape = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(scrape.status).toBe(200);
    expect(await scrape.text()).toContain('fieldgate_http_requests_total');

    const connect = () =>
      new Promise<net.Socket>((resolve, reject) => {
        const socket = net.connect(metricsPort, '127.0.0.1', () => resolve(socket));
        socket.on('error', () => {});
        socket.once('error', reject);
        sockets.push(socket);
      });
    // Headers never finished: the connection is not idle, so closing the listener alone waits for it.
    (await connect()).write('GET /metrics HTTP/1.1\r\nHost: metrics\r\n');
    // A finished scrape on a keep-alive connection that the client keeps open.
    const idle = await connect();
    idle.write('GET /metrics HTTP/1.1\r\nHost: metrics\r\n\r\n');
    await new Promise<void>((resolve) => idle.once('data', () => resolve()));

    const started = Date.now();
    const code = await Promise.race([server.stop('SIGTERM'), new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), 15_000))]);
    expect(code).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});
