import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSender, runHttp } from '../../bench/lib/drivers.js';

let server: http.Server;
let base: string;
const seen: { method: string; body: string; cookie: string | undefined }[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      seen.push({ method: req.method!, body, cookie: req.headers.cookie });
      if (req.url === '/fail') {
        res.writeHead(500).end('no');
        return;
      }
      res.writeHead(302, { location: '/next?code=abc', 'set-cookie': ['a=1; Path=/', 'b=2; Path=/'] }).end('moved');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('the undici client stack', () => {
  it('sends method, headers and body and returns what the flow code reads: status, location, every set-cookie, text', async () => {
    const { send, close } = createSender('undici', 2);
    try {
      const res = await send(`${base}/authorize?x=1`, { method: 'POST', headers: { cookie: 'sid=7', 'content-type': 'text/plain' }, body: 'hello' });
      expect(res.status).toBe(302);
      expect(res.headers.location).toBe('/next?code=abc');
      expect(res.headers['set-cookie']).toEqual(['a=1; Path=/', 'b=2; Path=/']);
      expect(res.body).toBe('moved');
      expect(seen.at(-1)).toEqual({ method: 'POST', body: 'hello', cookie: 'sid=7' });
    } finally {
      await close();
    }
  });

  it('counts a non-2xx answer as failed, and gives up on a server that only fails', async () => {
    await expect(runHttp({ url: `${base}/fail`, connections: 2, warmupSec: 0, durationSec: 5 }, 'undici')).rejects.toThrow(/every operation failed; first error: HTTP 500/);
  });
});
