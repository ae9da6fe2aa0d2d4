/**
 * A port picked for PORT=0 before the server exists (tokens and links must name it), held until the server takes it
 * over. Closing the pick and listening again later would leave a gap in which another process on a busy host can
 * take the port.
 */
import type http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { listen, ListenError } from './listen.js';

export interface ReservedPort {
  readonly port: number;
  /** Listens on the reserved socket, and hands it the clients that connected while the server was starting. */
  handTo(server: http.Server): Promise<void>;
  /** Gives the port back, hanging up on waiting clients, when the start fails; does nothing once handed over. */
  release(): Promise<void>;
}

export function reservePort(host: string): Promise<ReservedPort> {
  return new Promise((resolve, reject) => {
    // Paused clients are not read from, so the server that takes them reads their requests from the first byte.
    const socket = net.createServer({ pauseOnConnect: true });
    const waiting = new Set<net.Socket>();
    socket.on('connection', (client) => {
      waiting.add(client);
      client.once('close', () => waiting.delete(client));
    });
    let handedOver = false;
    // A HOST that is no address of this host fails here, and names the setting as listen() does.
    socket.once('error', (error) => reject(new ListenError('PORT', host, 0, { cause: error })));
    socket.listen(0, host, () => {
      const { port } = socket.address() as AddressInfo;
      resolve({
        port,
        async handTo(server) {
          await listen(server, socket, host, 'PORT');
          handedOver = true;
          // Node's documented way to give an HTTP server a connection it did not accept itself.
          for (const client of waiting) {
            server.emit('connection', client);
            client.resume();
          }
          waiting.clear();
        },
        // Closing the socket after the handover would close the server's own listening handle.
        release: () =>
          new Promise<void>((done) => {
            if (handedOver || !socket.listening) return done();
            for (const client of waiting) client.destroy();
            socket.close(() => done());
          }),
      });
    });
  });
}
