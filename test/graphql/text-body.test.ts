/**
 * POST /graphql reads a JSON body with a Content-Length itself and hands it to graphql-yoga
 * parsed (src/graphql/text-body.ts); a chunked body still goes through yoga's own reader. Both
 * must answer every request alike, hostile ones first: the same status, type, challenge and body.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash } from 'node:crypto';
import type { RequestHandler } from 'express';
import { describeEachDatabase } from '../support/runtime.js';
import { issueTestToken, type TestToken } from '../support/tokens.js';
import { buildProduct } from '../support/factories.js';
import { readTextBody } from '../../src/graphql/text-body.js';

interface Answer {
  status: number;
  headers: Record<string, string | undefined>;
  body: string;
}

type Framing = 'sized' | 'chunked';

/** Every response header but these, which differ between any two responses or only reflect the framing. */
const UNCOMPARED_HEADERS = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding', 'x-request-id']);

function send(port: number, framing: Framing, body: Buffer, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/graphql',
        headers: { ...headers, ...(framing === 'sized' ? { 'Content-Length': String(body.length) } : { 'Transfer-Encoding': 'chunked' }) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: Object.fromEntries(Object.entries(res.headers).filter(([name]) => !UNCOMPARED_HEADERS.has(name))) as Answer['headers'],
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    req.on('error', reject);
    // Two writes, split inside the body (and inside a multi-byte character when there is one).
    const middle = Math.floor(body.length / 2);
    req.write(body.subarray(0, middle));
    req.end(body.subarray(middle));
  });
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const deep = (depth: number): string => (depth === 0 ? 'id' : `orders { items { product { seller { id } } } } products { ${deep(depth - 1)} }`);

/** Request bodies as sent, hostile ones first; every one must get the same answer either way. */
const BODIES: Record<string, string> = {
  'a valid query with variables': JSON.stringify({ query: 'query P($limit: Int) { products(limit: $limit) { id name } }', variables: { limit: 2 } }),
  'a name with non-ASCII text': JSON.stringify({ query: '{ products(limit: 1) { id } }', operationName: null, extensions: { note: 'Größe – 価格 ✓' } }),
  'a syntax error': JSON.stringify({ query: '{ products { id ' }),
  'too deep': JSON.stringify({ query: `{ ${deep(6)} }` }),
  'too costly': JSON.stringify({ query: '{ products(limit: 200) { reviews(limit: 100) { id author rating body createdAt } seller { id name rating } } a: products(limit: 200) { reviews(limit: 100) { id author rating body createdAt } } }' }),
  'too many aliases': JSON.stringify({ query: `{ ${Array.from({ length: 20 }, (_, i) => `a${i}: __typename`).join(' ')} }` }),
  'variables of the wrong type': JSON.stringify({ query: 'query P($id: Int!) { product(id: $id) { id } }', variables: { id: 'seven' } }),
  'a missing variable': JSON.stringify({ query: 'query P($id: Int!) { product(id: $id) { id } }' }),
  'variables that are not an object': JSON.stringify({ query: '{ __typename }', variables: [1, 2] }),
  'an unknown field': JSON.stringify({ query: '{ produc { id } }' }),
  'introspection': JSON.stringify({ query: '{ __schema { queryType { name } } }' }),
  'an unknown persisted hash': JSON.stringify({ extensions: { persistedQuery: { version: 1, sha256Hash: sha256('{ nothing }') } } }),
  'a persisted hash that does not match the query': JSON.stringify({ query: '{ __typename }', extensions: { persistedQuery: { version: 1, sha256Hash: sha256('{ other }') } } }),
  'a persisted query with a bad version': JSON.stringify({ query: '{ __typename }', extensions: { persistedQuery: { version: 2, sha256Hash: sha256('{ __typename }') } } }),
  'an unknown operation name': JSON.stringify({ query: 'query A { __typename } query B { __typename }', operationName: 'C' }),
  'several operations without a name': JSON.stringify({ query: 'query A { __typename } query B { __typename }' }),
  'a mutation without its input': JSON.stringify({ query: 'mutation { createOrder { id } }' }),
  'a query that is not a string': JSON.stringify({ query: 42 }),
  'no query': JSON.stringify({ variables: {} }),
  'an unknown parameter': JSON.stringify({ query: '{ __typename }', extra: true }),
  'a batched array': JSON.stringify([{ query: '{ __typename }' }, { query: '{ __typename }' }]),
  'an empty array': '[]',
  'an empty object': '{}',
  'null': 'null',
  'a number': '42',
  'a string': '"{ __typename }"',
  'truncated JSON': '{"query":"{ __typename }"',
  'not JSON': '{ __typename }',
  'whitespace': '   ',
  'a leading byte order mark': `\uFEFF${JSON.stringify({ query: '{ __typename }' })}`,
};

describeEachDatabase('POST /graphql with a sized or a chunked JSON body', (context) => {
  let me: TestToken;
  let server: http.Server;
  let port: number;

  beforeAll(async () => {
    me = await issueTestToken(context().runtime, { scope: 'products:read orders:read' });
    await buildProduct(context().runtime, { reviews: 2 });
    await buildProduct(context().runtime);
    server = http.createServer(context().app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  async function both(body: string, headers: Record<string, string>): Promise<Answer> {
    const sized = await send(port, 'sized', Buffer.from(body, 'utf8'), headers);
    const chunked = await send(port, 'chunked', Buffer.from(body, 'utf8'), headers);
    expect(sized).toEqual(chunked);
    return sized;
  }

  const json = { 'Content-Type': 'application/json' };

  it.each(Object.entries(BODIES))('answers %s alike', async (_name, body) => {
    await both(body, { ...json, Authorization: me.authorization });
  });

  it('answers alike under each accepted media type and JSON content type', async () => {
    const body = BODIES['a syntax error']!;
    for (const accept of ['application/json', 'application/graphql-response+json', 'application/graphql-response+json, application/json;q=0.9', '*/*', 'text/plain']) {
      for (const type of ['application/json', 'application/json; charset=utf-8', 'application/graphql+json', 'Application/JSON']) {
        await both(body, { 'Content-Type': type, Accept: accept, Authorization: me.authorization });
        await both(BODIES['a valid query with variables']!, { 'Content-Type': type, Accept: accept, Authorization: me.authorization });
      }
    }
  });

  it('answers alike without a token, with a bad one, and from another origin', async () => {
    const body = BODIES['a valid query with variables']!;
    const missing = await both(body, json);
    expect(missing.status).toBe(401);
    expect(missing.headers['www-authenticate']).toMatch(/^Bearer /);
    await both(body, { ...json, Authorization: 'Bearer not-a-token' });
    await both(body, { ...json, Authorization: me.authorization, Origin: 'https://elsewhere.example' });
  });

  it('answers a valid read and the refusals as before', async () => {
    const headers = { ...json, Authorization: me.authorization, Accept: 'application/json' };
    const ok = await both(BODIES['a valid query with variables']!, headers);
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body).data.products).toHaveLength(2);
    const tooDeep = JSON.parse((await both(BODIES['too deep']!, headers)).body);
    expect(tooDeep.errors[0].extensions).toMatchObject({ code: 'INVALID_ARGUMENT', reason: 'MAX_DEPTH' });
    const costly = await both(BODIES['too costly']!, headers);
    expect(costly.status).toBe(400);
    expect(JSON.parse(costly.body).errors[0].extensions).toMatchObject({ code: 'INVALID_ARGUMENT', reason: 'MAX_COST' });
    expect((await both(BODIES['an unknown persisted hash']!, headers)).status).toBe(404);
    expect((await both(BODIES['a batched array']!, headers)).status).toBeGreaterThanOrEqual(400);
    expect((await both(BODIES['truncated JSON']!, headers)).status).toBe(400);
  });

  it('still refuses a mutation over GET', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/graphql?query=${encodeURIComponent('mutation { createOrder(input: { items: [] }) { id } }')}`, {
      headers: { Authorization: me.authorization, Accept: 'application/json' },
    });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
  });
});

describe('readTextBody', () => {
  /** Runs the middleware on a real request carrying `body` and reports what it left on `req.body`. */
  async function readBy(body: string, headers: Record<string, string> = { 'Content-Type': 'application/json' }): Promise<unknown> {
    const middleware: RequestHandler = readTextBody(1024);
    const server = http.createServer((req, res) => {
      middleware(req as never, res as never, () => {
        const read = req.readableEnded;
        res.end(JSON.stringify({ read, body: req.body ?? null }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const res = await fetch(`http://127.0.0.1:${port}/graphql`, { method: 'POST', headers, body });
      return await res.json();
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }

  it('hands over an operation parsed, and anything yoga must refuse as text', async () => {
    expect(await readBy('{"query":"{ a }"}')).toEqual({ read: true, body: { query: '{ a }' } });
    expect(await readBy('[{"query":"{ a }"}]')).toEqual({ read: true, body: [{ query: '{ a }' }] });
    for (const text of ['{}', '[]', 'null', '7', '"x"', '{"query":', ' ']) expect(await readBy(text)).toEqual({ read: true, body: text });
  });

  it('reads the other types yoga parses as text, to hold them to UTF-8 too, and hands them over as that text', async () => {
    expect(await readBy('{ a }', { 'Content-Type': 'application/graphql' })).toEqual({ read: true, body: '{ a }' });
    expect(await readBy('query=%7B%20a%20%7D', { 'Content-Type': 'application/x-www-form-urlencoded; charset=utf-8' })).toEqual({ read: true, body: 'query=%7B%20a%20%7D' });
    expect(await readBy('{ a }', { 'Content-Type': 'text/plain' })).toEqual({ read: false, body: null });
  });

  it('leaves other types, empty bodies and bodies over the limit to yoga, unread', async () => {
    expect(await readBy('{"query":"{ a }"}', { 'Content-Type': 'Application/JSON' })).toEqual({ read: false, body: null });
    expect(await readBy('', { 'Content-Type': 'application/json' })).toEqual({ read: false, body: null });
    expect(await readBy(JSON.stringify({ query: 'x'.repeat(2000) }))).toEqual({ read: false, body: null });
  });
});
