/** A back-channel logout receiver on 127.0.0.1 that records every logout token POSTed to it, with its path. */
import http from 'node:http';

export interface LogoutReceiver {
  /** `http://127.0.0.1:<port>`; register `${url}/<path>` as a client's backchannel_logout_uri. */
  url: string;
  received: { path: string; token: string }[];
  close(): void;
}

export async function startLogoutReceiver(): Promise<LogoutReceiver> {
  const received: LogoutReceiver['received'] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      received.push({ path: req.url ?? '', token: new URLSearchParams(body).get('logout_token') ?? '' });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, received, close: () => server.close() };
}
