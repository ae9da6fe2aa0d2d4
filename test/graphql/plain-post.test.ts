/**
 * src/graphql/plain-post.ts answers an ordinary POST /graphql without graphql-yoga and leaves
 * everything else to it; text-body.test.ts checks that both answer alike. These tests check
 * which requests it takes, and that a result with errors is handed to yoga, not run again.
 */
import { beforeAll, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import type { ExecutionResult } from 'graphql';
import { describeEachDatabase } from '../support/runtime.js';
import { issueTestToken, type TestToken } from '../support/tokens.js';
import { buildProduct } from '../support/factories.js';
import { Executor } from '../../src/graphql/executor.js';
import { DEFAULT_LIMITS } from '../../src/graphql/limits.js';
import { schema } from '../../src/graphql/schema/index.js';
import { readTextBody } from '../../src/graphql/text-body.js';
import { answerPlainPost } from '../../src/graphql/plain-post.js';
import { PersistedOperations } from '../../src/graphql/persisted-operations.js';

interface Outcome {
  /** What reached the next handler (yoga's place): nothing when the middleware answered. */
  handedOver: { body: unknown; graphqlResult?: ExecutionResult } | null;
  status: number;
  body: string;
}

describeEachDatabase('answerPlainPost', (context) => {
  let me: TestToken;
  let runs = 0;

  async function post(body: string, headers: Record<string, string>): Promise<Outcome> {
    const { runtime } = context();
    const executor = new Executor({ schema, db: runtime.db, logger: runtime.logger, limits: DEFAULT_LIMITS });
    const run = executor.run.bind(executor);
    executor.run = (request) => {
      runs++;
      return run(request);
    };
    let handedOver: Outcome['handedOver'] = null;
    const app = express();
    app.use('/graphql', readTextBody(4096), answerPlainPost(runtime, executor, new PersistedOperations({ schema })), (req, res) => {
      handedOver = { body: req.body, ...(req.graphqlResult && { graphqlResult: req.graphqlResult }) };
      res.status(299).end();
    });
    const server = http.createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const res = await fetch(`http://127.0.0.1:${port}/graphql`, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body });
      return { handedOver, status: res.status, body: await res.text() };
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }

  beforeAll(async () => {
    me = await issueTestToken(context().runtime, { scope: 'products:read' });
    await buildProduct(context().runtime, { name: 'Lantern', reviews: 1 });
  });

  const read = JSON.stringify({ query: 'query P($limit: Int) { products(limit: $limit) { name reviews { rating } } }', variables: { limit: 1 } });

  it('answers an ordinary operation itself, with one run', async () => {
    runs = 0;
    for (const accept of [undefined, '*/*', 'application/json', 'application/graphql-response+json']) {
      const outcome = await post(read, { Authorization: me.authorization, ...(accept && { Accept: accept }) });
      expect(outcome.handedOver).toBeNull();
      expect(outcome.status).toBe(200);
      expect(JSON.parse(outcome.body)).toEqual({ data: { products: [{ name: 'Lantern', reviews: [{ rating: expect.any(Number) }] }] } });
    }
    expect(runs).toBe(4);
  });

  it('hands a result with errors to yoga instead of running the operation again', async () => {
    runs = 0;
    const outcome = await post(JSON.stringify({ query: '{ orders { id } }' }), { Authorization: me.authorization });
    expect(runs).toBe(1);
    expect(outcome.handedOver?.graphqlResult?.errors?.[0]?.extensions).toMatchObject({ code: 'FORBIDDEN' });
  });

  it('leaves yoga every request it does not read unambiguously, without running it', async () => {
    runs = 0;
    const bearer = { Authorization: me.authorization };
    const cases: [string, Record<string, string>][] = [
      [read, {}],
      [read, { Authorization: 'Bearer not-a-token' }],
      [read, { Authorization: me.authorization.replace(/^Bearer/, 'DPoP'), DPoP: 'x' }],
      [read, { ...bearer, Origin: 'https://elsewhere.example' }],
      [read, { ...bearer, Accept: 'text/plain' }],
      [read, { ...bearer, Accept: 'application/graphql-response+json, application/json;q=0.9' }],
      [JSON.stringify({ query: '{ __typename }', extensions: {} }), bearer],
      [JSON.stringify({ query: '{ __typename }', extra: true }), bearer],
      [JSON.stringify({ query: 42 }), bearer],
      [JSON.stringify({ query: '{ __typename }', variables: [1] }), bearer],
      [JSON.stringify([{ query: '{ __typename }' }]), bearer],
    ];
    for (const [body, headers] of cases) {
      const outcome = await post(body, headers);
      expect(outcome.status).toBe(299);
      expect(outcome.handedOver?.graphqlResult).toBeUndefined();
    }
    expect(runs).toBe(0);
  });
});
