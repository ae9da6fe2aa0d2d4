/** Opening a listener, with a failure reported as the setting to fix. */
import type http from 'node:http';
import type net from 'node:net';

/** A listener could not be opened (port in use, address not on this host): a setting to fix, reported in one line. */
export class ListenError extends Error {
  override readonly name = 'ListenError';
  constructor(
    readonly setting: 'PORT' | 'METRICS_PORT',
    host: string,
    port: number,
    options: { cause: unknown },
  ) {
    const code = (options.cause as NodeJS.ErrnoException | undefined)?.code;
    const reason = { EADDRINUSE: 'the address is already in use', EADDRNOTAVAIL: 'the address is not one of this host', EACCES: 'permission denied', ENOTFOUND: 'HOST is not a known host name', EAI_AGAIN: 'HOST could not be looked up' }[code ?? ''];
    super(`cannot listen on ${host}:${port} (${setting}): ${reason ?? (options.cause as Error)?.message ?? String(options.cause)}`, options);
  }
}

/**
 * Listens on port and host, or takes over a socket already listening (Node's documented `listen(handle)`), rejecting
 * with a ListenError naming the setting.
 */
export function listen(server: http.Server, target: number | net.Server, host: string, setting: ListenError['setting']): Promise<void> {
  const port = typeof target === 'number' ? target : (target.address() as net.AddressInfo | null)?.port ?? 0;
  return new Promise<void>((resolve, reject) => {
    const failed = (error: unknown) => reject(new ListenError(setting, host, port, { cause: error }));
    server.once('error', failed);
    const listening = () => {
      server.off('error', failed);
      resolve();
    };
    if (typeof target === 'number') server.listen(target, host, listening);
    else server.listen(target, listening);
  });
}
