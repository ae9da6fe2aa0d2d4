/**
 * The HTTP edge of /graphql: requests refused before they reach GraphQL still answer with a
 * GraphQL error body and a meaningful status.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { describeEachDatabase } from '../support/runtime.js';
import { issueTestToken, type TestToken } from '../support/tokens.js';

describeEachDatabase('POST /graphql at the HTTP edge', (context) => {
  let me: TestToken;
  beforeAll(async () => {
    me = await issueTestToken(context().runtime, { scope: 'products:read' });
  });

  it('answers a body of an unsupported type with 415 and a GraphQL error', async () => {
    const res = await request(context().app)
      .post('/graphql')
      .set('Authorization', me.authorization)
      .set('Content-Type', 'text/plain')
      .send('{ products { id } }');
    expect(res.status).toBe(415);
    expect(res.body).toEqual({
      errors: [
        {
          message: 'POST /graphql takes a body of type application/json (got text/plain)',
          extensions: { code: 'INVALID_ARGUMENT', reason: 'UNSUPPORTED_MEDIA_TYPE' },
        },
      ],
    });
  });

  it('still accepts application/json and application/graphql bodies', async () => {
    const json = await request(context().app)
      .post('/graphql')
      .set('Authorization', me.authorization)
      .set('Content-Type', 'application/json; charset=utf-8')
      .send(JSON.stringify({ query: '{ __typename }' }));
    expect(json.status).toBe(200);
    expect(json.body).toEqual({ data: { __typename: 'Query' } });
    const graphql = await request(context().app)
      .post('/graphql')
      .set('Authorization', me.authorization)
      .set('Content-Type', 'application/graphql')
      .send('{ __typename }');
    expect(graphql.status).toBe(200);
    expect(graphql.body).toEqual({ data: { __typename: 'Query' } });
  });

  it('answers a body announced larger than the limit with 413 and a GraphQL error, before it is sent', async () => {
    const server = http.createServer(context().app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = http.request(
          {
            host: '127.0.0.1',
            port,
            method: 'POST',
            path: '/graphql',
            headers: { 'Content-Type': 'application/json', 'Content-Length': 2 * 1024 * 1024, Authorization: me.authorization },
          },
          (res) => {
            let body = '';
            res.setEncoding('utf8');
            res.on('data', (chunk) => (body += chunk));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          },
        );
        req.on('error', reject);
        // Only the start of the announced body is sent; the answer must not wait for the rest.
        req.write('{"query":"{ __typename }"');
      });
      expect(answer.status).toBe(413);
      expect(JSON.parse(answer.body)).toEqual({
        errors: [{ message: 'the request body is larger than 262144 bytes', extensions: { code: 'INVALID_ARGUMENT', reason: 'BODY_TOO_LARGE' } }],
      });
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  describe('a body with a Content-Encoding', () => {
    /** Sends `body` as is (supertest would serialize a Buffer by its Content-Type). */
    const post = (coding: string, body: Buffer | string, type = 'application/json') =>
      request(context().app)
        .post('/graphql')
        .set('Authorization', me.authorization)
        .set('Content-Type', type)
        .set('Content-Encoding', coding)
        .serialize((data: unknown) => data as string)
        .send(body);
    const errorLogs = () => context().logs.records().filter((record) => (record.level as number) >= 50);

    it.each(['gzip', 'br', 'deflate'])('answers corrupt %s data with 400 and a GraphQL error, logging no error', async (coding) => {
      const before = errorLogs().length;
      const res = await post(coding, 'garbage');
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ errors: [{ message: 'the request body could not be read', extensions: { code: 'INVALID_ARGUMENT', reason: 'BODY_UNREADABLE' } }] });
      expect(errorLogs().slice(before)).toEqual([]);
    });

    it('answers a Content-Encoding it cannot decode with 415 and a GraphQL error', async () => {
      const res = await post('compress', 'garbage');
      expect(res.status).toBe(415);
      expect(res.body).toEqual({
        errors: [{ message: 'the Content-Encoding of the request body is not supported', extensions: { code: 'INVALID_ARGUMENT', reason: 'UNSUPPORTED_MEDIA_TYPE' } }],
      });
    });

    it('runs a well-formed compressed operation, JSON or application/graphql', async () => {
      const operation = JSON.stringify({ query: '{ __typename }' });
      for (const [coding, body] of [
        ['gzip', gzipSync(operation)],
        ['deflate', deflateSync(operation)],
        ['br', brotliCompressSync(operation)],
      ] as const) {
        const res = await post(coding, body);
        expect(res.status, coding).toBe(200);
        expect(res.body, coding).toEqual({ data: { __typename: 'Query' } });
      }
      const graphql = await post('gzip', gzipSync('{ __typename }'), 'application/graphql');
      expect(graphql.status).toBe(200);
      expect(graphql.body).toEqual({ data: { __typename: 'Query' } });
    });

    it('holds the inflated body to the limit, whatever its compressed size', async () => {
      const bomb = gzipSync(JSON.stringify({ query: '{ __typename }', variables: { padding: 'p'.repeat(1024 * 1024) } }));
      expect(bomb.length).toBeLessThan(16 * 1024);
      const res = await post('gzip', bomb);
      expect(res.status).toBe(413);
      expect(res.body.errors[0].extensions).toEqual({ code: 'INVALID_ARGUMENT', reason: 'BODY_TOO_LARGE' });
    });
  });
});
