/**
 * The HTTP edge of /graphql: requests refused before they reach GraphQL still answer with a
 * GraphQL error body and a meaningful status.
 */
import { beforeAll, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
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

  it('reads an oversized body to the end and answers 413 with a GraphQL error (no reset)', async () => {
    const server = http.createServer(context().app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const body = JSON.stringify({ query: `{ __typename } # ${'x'.repeat(2 * 1024 * 1024)}` });
      const res = await fetch(`http://127.0.0.1:${port}/graphql`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: me.authorization },
        body,
      });
      expect(res.status).toBe(413);
      expect(await res.json()).toEqual({
        errors: [{ message: 'the request body is larger than 262144 bytes', extensions: { code: 'INVALID_ARGUMENT', reason: 'BODY_TOO_LARGE' } }],
      });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
