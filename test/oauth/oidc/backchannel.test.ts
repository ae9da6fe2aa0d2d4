/**
 * Delivering a Logout Token (OIDC Back-Channel Logout 1.0 §2.5) to a receiver that does not play along: the delivery
 * has one deadline for the whole exchange, and the receiver's body is never waited for.
 */
import http from 'node:http';
import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { postLogoutToken } from '../../../src/oauth/oidc/backchannel.js';

/** A receiver on 127.0.0.1 that answers by `respond`, and tells when each connection closes. */
async function receiver(respond: (socket: Socket) => NodeJS.Timeout) {
  const timers: NodeJS.Timeout[] = [];
  const closed: Promise<void>[] = [];
  const server = http.createServer((req) => {
    req.resume();
    req.on('end', () => timers.push(respond(req.socket)));
  });
  server.on('connection', (socket: Socket) => closed.push(new Promise((resolve) => socket.on('close', () => resolve()))));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/bc`;
  return {
    url,
    closed: () => Promise.all(closed),
    stop: () => {
      timers.forEach(clearInterval);
      server.closeAllConnections();
      server.close();
    },
  };
}

/** Writes `chunk` every 20 ms: never silent for as long as the delivery's socket timeout. */
function trickle(socket: Socket, chunk: string): NodeJS.Timeout {
  return setInterval(() => {
    if (!socket.destroyed) socket.write(chunk);
  }, 20);
}

describe('postLogoutToken', () => {
  let stop: (() => void) | undefined;
  afterEach(() => stop?.());

  it('gives up on a receiver that trickles its status line and headers, at the deadline for the whole delivery', async () => {
    const rp = await receiver((socket) => {
      socket.write('HTTP/1.1 200 OK\r\n');
      return trickle(socket, 'X');
    });
    stop = rp.stop;
    await expect(postLogoutToken(rp.url, 'a.b.c', { allowPrivate: true, timeoutMs: 300 })).rejects.toThrow(/timed out/);
    await rp.closed();
  }, 10_000);

  it('takes the status and closes the connection, whatever body the receiver goes on sending', async () => {
    const rp = await receiver((socket) => {
      socket.write('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n');
      return trickle(socket, '1\r\nX\r\n');
    });
    stop = rp.stop;
    expect(await postLogoutToken(rp.url, 'a.b.c', { allowPrivate: true, timeoutMs: 300 })).toBe(200);
    await rp.closed();
  }, 10_000);
});
