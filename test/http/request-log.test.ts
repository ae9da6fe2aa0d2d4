import { Writable } from 'node:stream';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import express from 'express';
import request from 'supertest';
import { createLogger } from '../../src/logger.js';
import { requestLog } from '../../src/http/request-log.js';

function capture(): { lines: Record<string, unknown>[]; stream: Writable } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      callback();
    },
  });
  return { lines, stream };
}

function appWith(lines: ReturnType<typeof capture>) {
  const app = express();
  app.use(requestLog(createLogger('info', lines.stream)));
  app.get('/ok', (_req, res) => res.json({ ok: true }));
  app.get('/fail', (_req, res) => res.status(503).json({ ok: false }));
  app.get('/hang', () => {});
  return app;
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

describe('access line', () => {
  it('writes one line per request: id, method, path without the query, status, time', async () => {
    const log = capture();
    const app = appWith(log);
    const res = await request(app).get('/ok?code=secret').set('X-Request-Id', 'req-1');
    await request(app).get('/ok');
    await settle();
    expect(res.headers['x-request-id']).toBe('req-1');
    expect(log.lines).toHaveLength(2);
    const [first, second] = log.lines;
    expect(first).toMatchObject({ level: 30, req: { id: 'req-1', method: 'GET', path: '/ok' }, res: { statusCode: 200 }, msg: 'GET /ok 200' });
    expect(typeof first!.responseTime).toBe('number');
    expect(first).not.toHaveProperty('aborted');
    expect(JSON.stringify(first)).not.toContain('secret');
    expect((second!.req as { id: string }).id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('logs only the path of an absolute-form target (RFC 9112 §3.2.2), never its userinfo, query or fragment', async () => {
    const log = capture();
    const server = appWith(log).listen(0);
    const { port } = server.address() as { port: number };
    /** Sends `target` as it is: an HTTP client would never put the userinfo of a URL on the request line. */
    const send = (target: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = net.connect(port, '127.0.0.1', () => socket.end(`GET ${target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`));
        let answer = '';
        socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
        socket.on('error', reject);
        socket.on('close', () => resolve(answer.split('\r\n')[0]!));
      });
    try {
      expect(await send('http://alice:hunter2-password@localhost/ok?code=the-code')).toBe('HTTP/1.1 200 OK');
      expect(await send('HTTP://alice:hunter2-password@localhost:80/ok')).toBe('HTTP/1.1 200 OK');
      expect(await send('/ok#code=the-code')).toBe('HTTP/1.1 200 OK');
      await settle();
    } finally {
      server.close();
    }
    expect(log.lines.map((line) => [(line.req as { path: string }).path, line.msg])).toEqual([
      ['/ok', 'GET /ok 200'],
      ['/ok', 'GET /ok 200'],
      ['/ok', 'GET /ok 200'],
    ]);
    const text = JSON.stringify(log.lines);
    for (const secret of ['hunter2-password', 'alice', 'the-code']) expect(text).not.toContain(secret);
  });

  it('logs a 5xx answer at error level', async () => {
    const log = capture();
    await request(appWith(log)).get('/fail');
    await settle();
    expect(log.lines).toEqual([expect.objectContaining({ level: 50, res: { statusCode: 503 }, msg: 'GET /fail 503' })]);
  });

  it('marks a request the client gave up on as aborted, once', async () => {
    const log = capture();
    const server = appWith(log).listen(0);
    try {
      const { port } = server.address() as { port: number };
      const controller = new AbortController();
      const pending = fetch(`http://127.0.0.1:${port}/hang`, { signal: controller.signal }).catch(() => undefined);
      await settle();
      controller.abort();
      await pending;
      await settle();
    } finally {
      server.closeAllConnections();
      server.close();
    }
    expect(log.lines).toEqual([expect.objectContaining({ aborted: true, msg: 'GET /hang 200 (aborted)' })]);
  });
});
