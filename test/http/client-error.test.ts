import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { createTestRuntime, type TestRuntime } from '../support/runtime.js';
import { answerClientErrors, MAX_URL_LENGTH } from '../../src/http/client-error.js';
import { startServer } from '../../src/server.js';

/** Sends a raw request head and returns the raw response. */
function rawRequest(port: number, head: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(head));
    let data = '';
    socket.on('data', (chunk) => (data += chunk));
    socket.on('end', () => resolve(data));
    socket.on('close', () => resolve(data));
    socket.on('error', reject);
  });
}

function parse(response: string): { status: number; headers: string; body: unknown } {
  const [head, body] = response.split('\r\n\r\n', 2) as [string, string];
  return { status: Number(head.split(' ')[1]), headers: head, body: body ? JSON.parse(body) : undefined };
}

describe('oversized requests get the Google error body', () => {
  let context: TestRuntime;
  let server: http.Server;
  let port: number;

  beforeAll(async () => {
    context = await createTestRuntime('pglite');
    server = http.createServer(context.app);
    answerClientErrors(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await context.close();
  });

  const get = (target: string, extra = '') => rawRequest(port, `GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${extra}\r\n`).then(parse);

  it('a URL over the app limit is 414', async () => {
    const res = await get(`/products?fields=${'a'.repeat(MAX_URL_LENGTH)}`);
    expect(res.status).toBe(414);
    expect(res.body).toStrictEqual({
      error: { code: 414, status: 'INVALID_ARGUMENT', message: `the URL is longer than ${MAX_URL_LENGTH} characters`, details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', domain: 'fieldgate.dev', reason: 'URL_TOO_LONG', metadata: {} }] },
    });
  });

  it('a URL just under the limit reaches the route', async () => {
    const res = await get(`/products?fields=${'a'.repeat(MAX_URL_LENGTH - 100)}`);
    expect(res.status).toBe(401);
  });

  it('a request line or headers over Node’s limit are 431 with a JSON body', async () => {
    for (const res of [await get(`/products?fields=${'a'.repeat(20_000)}`), await get('/products', `X-Padding: ${'p'.repeat(20_000)}\r\n`)]) {
      expect(res.status).toBe(431);
      expect(res.headers).toMatch(/content-type: application\/json/i);
      expect(res.body).toStrictEqual({
        error: { code: 431, status: 'INVALID_ARGUMENT', message: 'the request line and headers are too large', details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', domain: 'fieldgate.dev', reason: 'HEADERS_TOO_LARGE', metadata: {} }] },
      });
    }
  });

  it('a request that is not HTTP is 400 with a JSON body', async () => {
    const res = parse(await rawRequest(port, 'NOT HTTP\r\n\r\n'));
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: { code: 400 } });
  });
});

describe('requests refused before routing', () => {
  it('get an access line of their own, naming no path, header or anything they sent', async () => {
    const context = await createTestRuntime('pglite', { PORT: '0' });
    const server = await startServer(context.runtime);
    try {
      const secret = 'refused-secret-value';
      const head = `GET /token?code=${secret}&x=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${secret}\r\nConnection: close\r\n\r\n`;
      expect(parse(await rawRequest(server.port, head)).status).toBe(431);
      expect(parse(await rawRequest(server.port, `NOT HTTP ${secret}\r\n\r\n`)).status).toBe(400);
      const refused = context.logs.records().filter((record) => typeof record.refused === 'string');
      expect(refused.map((record) => [(record.res as { statusCode: number }).statusCode, record.refused])).toEqual([
        [431, 'HEADERS_TOO_LARGE'],
        [400, 'INVALID_HTTP'],
      ]);
      for (const record of refused) expect((record.req as { id?: unknown }).id).toEqual(expect.any(String));
      expect(context.logs.text).not.toContain(secret);
    } finally {
      await server.close();
      await context.testDatabase.drop();
    }
  });
});

