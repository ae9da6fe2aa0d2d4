/**
 * The HTTP edge of /graphql: requests refused before they reach GraphQL still answer with a
 * GraphQL error body and a meaningful status.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { Express } from 'express';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { describeEachDatabase } from '../support/runtime.js';
import { issueTestToken, type TestToken } from '../support/tokens.js';
import { buildProduct } from '../support/factories.js';

/** The CORS headers of an answer (and Vary), to compare a refusal's with an answer's. */
const cors = (res: request.Response) =>
  Object.fromEntries(Object.entries(res.headers).filter(([name]) => name.startsWith('access-control-') || name === 'vary'));

/**
 * A POST to /graphql over a real socket, with `headers` as given and the body written by `send`, which may leave it
 * unfinished: what supertest cannot send.
 */
async function rawPost(app: Express, headers: http.OutgoingHttpHeaders, send: (req: http.ClientRequest) => void): Promise<{ status: number; body: string }> {
  const server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    return await new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/graphql', headers }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      send(req);
    });
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

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
          extensions: { code: 'INVALID_ARGUMENT', reason: 'UNSUPPORTED_MEDIA_TYPE', http: { status: 415 } },
        },
      ],
    });
  });

  it('answers OPTIONS with the methods it serves (RFC 9110 §9.3.7), as the 405 names them', async () => {
    const plain = await request(context().app).options('/graphql');
    expect(plain.status).toBe(204);
    expect(plain.headers['allow']).toBe('GET, HEAD, POST, OPTIONS');
    const preflight = await request(context().app).options('/graphql').set('Origin', 'https://shop.example').set('Access-Control-Request-Method', 'POST');
    expect(preflight.status).toBe(204);
    expect(preflight.headers['allow']).toBe('GET, HEAD, POST, OPTIONS');
    expect(preflight.headers['access-control-allow-methods']).toMatch(/POST/);
  });

  it('lets a cross-origin page read Allow on a 405 and Retry-After on a 503, which are not CORS-safelisted', async () => {
    const refused = await request(context().app).put('/graphql').set('Origin', 'https://shop.example').send('');
    expect(refused.status).toBe(405);
    expect(refused.headers['allow']).toBe('GET, HEAD, POST, OPTIONS');
    const exposed = refused.headers['access-control-expose-headers']?.split(', ');
    expect(exposed).toEqual(expect.arrayContaining(['Allow', 'Retry-After']));
  });

  it('lets a cross-origin page read the refusals sent before yoga, with the CORS headers yoga gives its own answers', async () => {
    const origin = 'https://shop.example';
    const answered = await request(context().app)
      .post('/graphql')
      .set('Origin', origin)
      .set('Authorization', me.authorization)
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ query: '{ __typename }' }));
    expect(answered.status).toBe(200);
    expect(cors(answered)).toMatchObject({ 'access-control-allow-origin': origin, 'access-control-expose-headers': 'WWW-Authenticate, DPoP-Nonce, Allow, Retry-After' });
    const refusals = [
      request(context().app).post('/graphql').set('Origin', origin).set('Content-Type', 'text/plain').send('{ __typename }'),
      request(context().app).post('/graphql').set('Origin', origin).set('Accept', 'text/plain').set('Content-Type', 'application/json').send('{"query":"{ __typename }"}'),
      request(context().app).post('/graphql').set('Origin', origin).set('Content-Type', 'application/json').set('Content-Encoding', 'gzip').send('not gzip'),
    ];
    for (const refused of await Promise.all(refusals)) {
      expect(refused.status, refused.text).toBeGreaterThanOrEqual(400);
      expect(cors(refused), String(refused.status)).toEqual(cors(answered));
    }
    // Without an Origin, no CORS headers are added.
    const sameOrigin = await request(context().app).post('/graphql').set('Content-Type', 'text/plain').send('{ __typename }');
    expect(cors(sameOrigin)).toEqual({});
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

  it('reads a media type in any case and with spaces around its parameters (RFC 9110), on the fast path and through yoga', async () => {
    for (const type of ['Application/JSON', 'APPLICATION/JSON; Charset=UTF-8', 'application/json ; charset=utf-8', 'application/GraphQL']) {
      for (const accept of ['application/json', 'application/json, */*;q=0.5']) {
        const res = await request(context().app)
          .post('/graphql')
          .set('Authorization', me.authorization)
          .set('Content-Type', type)
          .set('Accept', accept)
          .send(type.toLowerCase().includes('graphql') ? '{ __typename }' : JSON.stringify({ query: '{ __typename }' }));
        expect([type, accept, res.status, res.body]).toEqual([type, accept, 200, { data: { __typename: 'Query' } }]);
      }
    }
  });

  it('answers a GET whose URL is over the app limit with 414 and a GraphQL error, in any case of the path', async () => {
    for (const path of ['/graphql', '/GraphQL']) {
      const res = await request(context().app)
        .get(`${path}?query=${encodeURIComponent(`{ products { id } } # ${'a'.repeat(13 * 1024)}`)}`)
        .set('Authorization', me.authorization)
        .set('Accept', 'application/graphql-response+json');
      expect(res.status).toBe(414);
      expect(res.headers['content-type']).toMatch(/^application\/graphql-response\+json/);
      expect(JSON.parse(res.text)).toEqual({
        errors: [{ message: expect.stringContaining('the URL is longer than'), extensions: expect.objectContaining({ code: 'INVALID_ARGUMENT', reason: 'URL_TOO_LONG', http: { status: 414 } }) }],
      });
    }
    // The other faces keep the Google shape.
    expect((await request(context().app).get(`/products?fields=${'a'.repeat(13 * 1024)}`)).body.error).toMatchObject({ code: 414, status: 'INVALID_ARGUMENT' });
  });

  it('answers a body typed as the response type application/graphql-response+json with 415 and a GraphQL error, not an empty 415', async () => {
    const res = await request(context().app)
      .post('/graphql')
      .set('Authorization', me.authorization)
      .set('Content-Type', 'application/graphql-response+json')
      .send(JSON.stringify({ query: '{ __typename }' }));
    expect(res.status).toBe(415);
    expect(res.body.errors[0].extensions).toEqual({ code: 'INVALID_ARGUMENT', reason: 'UNSUPPORTED_MEDIA_TYPE', http: { status: 415 } });
  });

  it('answers a body announced larger than the limit with 413 and a GraphQL error, before it is sent', async () => {
    // Only the start of the announced body is sent; the answer must not wait for the rest.
    const answer = await rawPost(context().app, { 'Content-Type': 'application/json', 'Content-Length': 2 * 1024 * 1024, Authorization: me.authorization }, (req) => req.write('{"query":"{ __typename }"'));
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body)).toEqual({
      errors: [{ message: 'the request body is larger than 262144 bytes', extensions: { code: 'INVALID_ARGUMENT', reason: 'BODY_TOO_LARGE', http: { status: 413 } } }],
    });
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
      expect(res.body).toEqual({ errors: [{ message: 'the request body could not be read', extensions: { code: 'INVALID_ARGUMENT', reason: 'BODY_UNREADABLE', http: { status: 400 } } }] });
      expect(errorLogs().slice(before)).toEqual([]);
    });

    it('answers a Content-Encoding it cannot decode with 415 and a GraphQL error', async () => {
      const res = await post('compress', 'garbage');
      expect(res.status).toBe(415);
      expect(res.body).toEqual({
        errors: [{ message: 'the Content-Encoding of the request body is not supported', extensions: { code: 'INVALID_ARGUMENT', reason: 'UNSUPPORTED_MEDIA_TYPE', http: { status: 415 } } }],
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
      expect(res.body.errors[0].extensions).toEqual({ code: 'INVALID_ARGUMENT', reason: 'BODY_TOO_LARGE', http: { status: 413 } });
    });
  });
});

describeEachDatabase('request-level errors of /graphql', (context) => {
  let me: TestToken;
  let writer: TestToken;
  beforeAll(async () => {
    me = await issueTestToken(context().runtime, { scope: 'products:read' });
    writer = await issueTestToken(context().runtime, { scope: 'products:read orders:read orders:write' });
  });

  const json = (body: string) => ({ method: 'post' as const, type: 'application/json', body });
  const form = (body: string) => ({ method: 'post' as const, type: 'application/x-www-form-urlencoded', body });
  const get = (query: string) => ({ method: 'get' as const, query });
  type Sent = { method: 'get' | 'post' | 'put' | 'delete'; type?: string; body?: string; query?: string; authorization?: string | null; accept?: string };

  function send(sent: Sent, accept?: string) {
    let test = request(context().app)[sent.method](`/graphql${sent.query === undefined ? '' : `?${sent.query}`}`);
    const authorization = sent.authorization === undefined ? me.authorization : sent.authorization;
    if (authorization !== null) test = test.set('Authorization', authorization);
    if (sent.accept ?? accept) test = test.set('Accept', (sent.accept ?? accept)!);
    if (sent.type) test = test.set('Content-Type', sent.type);
    return sent.body === undefined ? test : test.send(sent.body);
  }

  const twoOperations = 'query A { __typename } query B { __typename }';
  const tooDeep = `{ products { ${'seller { products { '.repeat(5)}id${' } }'.repeat(5)} } }`;
  // [what, request, HTTP status, code, reason, field]
  const cases: [string, Sent, number, string, string | undefined, string | undefined][] = [
    ['a body that is not JSON', json('{bad'), 400, 'INVALID_ARGUMENT', 'INVALID_JSON', undefined],
    ['a null body', json('null'), 400, 'INVALID_ARGUMENT', 'BODY_NOT_AN_OBJECT', undefined],
    ['a batch (batching is off)', json('[{"query":"{ __typename }"}]'), 400, 'INVALID_ARGUMENT', 'BATCHING_NOT_SUPPORTED', undefined],
    ['no query', json('{}'), 400, 'INVALID_ARGUMENT', 'INVALID_PARAMETER', 'query'],
    ['a query that is not a string', json('{"query":1}'), 400, 'INVALID_ARGUMENT', 'INVALID_PARAMETER', 'query'],
    ['variables=[1]', json('{"query":"{ __typename }","variables":[1]}'), 400, 'INVALID_ARGUMENT', 'INVALID_PARAMETER', 'variables'],
    ['variables that are a string', json('{"query":"{ __typename }","variables":"x"}'), 400, 'INVALID_ARGUMENT', 'INVALID_PARAMETER', 'variables'],
    ['extensions that are an array', json('{"query":"{ __typename }","extensions":[1]}'), 400, 'INVALID_ARGUMENT', 'INVALID_PARAMETER', 'extensions'],
    ['an unknown parameter', json('{"query":"{ __typename }","querry":"x"}'), 400, 'INVALID_ARGUMENT', 'INVALID_PARAMETER', 'querry'],
    ['form variables=[1]', form('query=%7B__typename%7D&variables=%5B1%5D'), 400, 'INVALID_ARGUMENT', 'INVALID_PARAMETER', 'variables'],
    ['form variables that are not JSON', form('query=%7B__typename%7D&variables=%7B'), 400, 'INVALID_ARGUMENT', 'INVALID_PARAMETER', undefined],
    ['GET variables=[1]', get('query=%7B__typename%7D&variables=%5B1%5D'), 400, 'INVALID_ARGUMENT', 'INVALID_PARAMETER', 'variables'],
    ['GET variables that are not JSON', get('query=%7B__typename%7D&variables=%7B'), 400, 'INVALID_ARGUMENT', 'INVALID_PARAMETER', undefined],
    ['GET without a query', get(''), 400, 'INVALID_ARGUMENT', 'INVALID_PARAMETER', 'query'],
    ['an operationName that is a number', json('{"query":"query A { __typename }","operationName":1}'), 400, 'INVALID_ARGUMENT', 'INVALID_PARAMETER', 'operationName'],
    ['an operationName of 0', json('{"query":"{ __typename }","operationName":0}'), 400, 'INVALID_ARGUMENT', 'INVALID_PARAMETER', 'operationName'],
    ['an operationName of false', json('{"query":"{ __typename }","operationName":false}'), 400, 'INVALID_ARGUMENT', 'INVALID_PARAMETER', 'operationName'],
    ['an operationName that is an object', json('{"query":"{ __typename }","operationName":{}}'), 400, 'INVALID_ARGUMENT', 'INVALID_PARAMETER', 'operationName'],
    ['an unknown operationName', json(JSON.stringify({ query: twoOperations, operationName: 'C' })), 400, 'INVALID_ARGUMENT', 'OPERATION_RESOLUTION_FAILURE', undefined],
    ['several operations without operationName', json(JSON.stringify({ query: twoOperations })), 400, 'INVALID_ARGUMENT', 'OPERATION_RESOLUTION_FAILURE', undefined],
    ['a syntax error', json('{"query":"{"}'), 400, 'INVALID_ARGUMENT', 'GRAPHQL_PARSE_FAILED', undefined],
    ['a validation error', json('{"query":"{ nope }"}'), 400, 'INVALID_ARGUMENT', 'GRAPHQL_VALIDATION_FAILED', undefined],
    ['a document too deep', json(JSON.stringify({ query: tooDeep })), 400, 'INVALID_ARGUMENT', 'MAX_DEPTH', undefined],
    ['a mutation over GET', get(`query=${encodeURIComponent('mutation { updateOrder(id: 1, input: {}) { id } }')}`), 405, 'INVALID_ARGUMENT', 'METHOD_NOT_ALLOWED', undefined],
    ['PUT', { ...json('{"query":"{ __typename }"}'), method: 'put' }, 405, 'INVALID_ARGUMENT', 'METHOD_NOT_ALLOWED', undefined],
    ['DELETE', { method: 'delete' }, 405, 'INVALID_ARGUMENT', 'METHOD_NOT_ALLOWED', undefined],
    ['an Accept it cannot answer', { ...json('{"query":"{ __typename }"}'), accept: 'text/plain' }, 406, 'INVALID_ARGUMENT', 'NOT_ACCEPTABLE', undefined],
    ['a GET asking for HTML without GraphiQL', { ...get('query=%7B__typename%7D'), accept: 'text/html' }, 406, 'INVALID_ARGUMENT', 'NOT_ACCEPTABLE', undefined],
    ['a body of an unsupported type', { method: 'post', type: 'text/plain', body: '{ __typename }' }, 415, 'INVALID_ARGUMENT', 'UNSUPPORTED_MEDIA_TYPE', undefined],
    ['no token', { ...json('{"query":"{ __typename }"}'), authorization: null }, 401, 'UNAUTHENTICATED', undefined, undefined],
    ['a malformed token', { ...json('{"query":"{ __typename }"}'), authorization: 'Bearer not-a-token' }, 401, 'UNAUTHENTICATED', undefined, undefined],
    ['a token without the scope', json('{"query":"{ orders { id } }"}'), 403, 'FORBIDDEN', undefined, undefined],
  ];

  describe.each([undefined, 'application/graphql-response+json'])('asked for %s', (accept) => {
    it.each(cases)('answers %s with its status, a stable code and extensions.http.status', async (_what, sent, status, code, reason, field) => {
      const res = await send(sent, accept);
      expect(res.status, res.text).toBe(status);
      const type = sent.accept ? 'application/json' : (accept ?? 'application/json');
      expect(res.headers['content-type']).toBe(`${type}; charset=utf-8`);
      const body = JSON.parse(res.text) as { errors: { message: string; extensions: Record<string, unknown> }[] };
      expect(body.errors.length).toBeGreaterThan(0);
      expect(body.errors[0]!.extensions).toMatchObject({ code, http: { status }, ...(reason && { reason }), ...(field && { field }) });
      for (const error of body.errors) {
        expect(error.extensions.code).not.toMatch(/^(BAD_REQUEST|REQUEST_ENTITY_TOO_LARGE)$/);
        expect(error.extensions).toHaveProperty('http', { status });
        expect(error.extensions).not.toHaveProperty('originalError');
      }
      if (status === 405) expect(res.headers.allow).toBe(sent.method === 'get' ? 'POST' : 'GET, HEAD, POST, OPTIONS');
      else expect(res.headers.allow).toBeUndefined();
      if (status === 401) expect(res.headers['www-authenticate']).toMatch(/^Bearer realm="fieldgate"/);
    });
  });

  it('answers in the type the Accept header prefers by its quality values, never one it refuses with q=0', async () => {
    const json = 'application/json; charset=utf-8';
    const graphqlJson = 'application/graphql-response+json; charset=utf-8';
    const cases: [string, string][] = [
      ['application/graphql-response+json;q=0, application/json', json],
      ['application/json;q=0, application/graphql-response+json', graphqlJson],
      ['application/json;q=0.1, application/graphql-response+json', graphqlJson],
      ['application/graphql-response+json;q=0.1, application/json', json],
      ['*/*;q=0.1, application/graphql-response+json;q=0.5', graphqlJson],
      ['application/json;q=0, */*', graphqlJson],
      ['application/graphql-response+json, application/json;q=0.9', graphqlJson],
      ['application/json; charset=utf-8', json],
      ['application/graphql-response+json;charset=UTF-8', graphqlJson],
    ];
    for (const [accept, type] of cases) {
      for (const body of ['{"query":"{ __typename }"}', '{"query":"{ nope }"}']) {
        const res = await request(context().app).post('/graphql').set('Authorization', me.authorization).set('Content-Type', 'application/json').set('Accept', accept).send(body);
        expect([accept, body, res.headers['content-type'], res.status]).toEqual([accept, body, type, body.includes('nope') ? 400 : 200]);
      }
      const get = await request(context().app).get('/graphql?query=%7B__typename%7D').set('Authorization', me.authorization).set('Accept', accept);
      expect([accept, get.headers['content-type'], get.body]).toEqual([accept, type, { data: { __typename: 'Query' } }]);
    }
    // Answers are UTF-8 only: JSON asked for in another charset is not acceptable.
    const latin1 = await request(context().app).post('/graphql').set('Authorization', me.authorization).set('Content-Type', 'application/json').set('Accept', 'application/json; charset=iso-8859-1').send('{"query":"{ __typename }"}');
    expect(latin1.status).toBe(406);
    expect(latin1.body.errors[0].extensions).toEqual({ code: 'INVALID_ARGUMENT', reason: 'NOT_ACCEPTABLE', http: { status: 406 } });
  });

  it('answers at /graphql in any case and with a trailing slash, on the fast path and through yoga alike', async () => {
    for (const path of ['/graphql', '/graphql/', '/GraphQL', '/GRAPHQL/']) {
      for (const accept of ['application/json', 'application/json, */*;q=0.5']) {
        const post = await request(context().app).post(path).set('Authorization', me.authorization).set('Accept', accept).set('Content-Type', 'application/json').send('{"query":"{ __typename }"}');
        const get = await request(context().app).get(`${path}?query=%7B__typename%7D`).set('Authorization', me.authorization).set('Accept', accept);
        expect([path, accept, post.status, post.body, get.status, get.body]).toEqual([path, accept, 200, { data: { __typename: 'Query' } }, 200, { data: { __typename: 'Query' } }]);
      }
    }
  });

  it('runs nothing at a path below /graphql, which is a 404 with a JSON body whichever path would answer it', async () => {
    const product = await buildProduct(context().runtime);
    const create = JSON.stringify({ query: `mutation { createOrder(input: { items: [{ productId: ${product.id}, quantity: 1 }], memo: "below" }) { id } }` });
    for (const path of ['/graphql/x', '/graphql/graphql', '/GRAPHQL/x/']) {
      for (const accept of ['application/json', 'application/json, */*;q=0.5']) {
        const post = await request(context().app).post(path).set('Authorization', writer.authorization).set('Accept', accept).set('Content-Type', 'application/json').send(create);
        const get = await request(context().app).get(`${path}?query=%7B__typename%7D`).set('Authorization', writer.authorization).set('Accept', accept);
        for (const res of [post, get]) {
          expect([path, accept, res.status]).toEqual([path, accept, 404]);
          expect(res.headers['content-type']).toMatch(/^application\/json/);
          expect(res.body.data).toBeUndefined();
        }
      }
    }
    const orders = await send({ ...json('{"query":"{ orders { memo } }"}'), authorization: writer.authorization });
    expect(orders.body.data.orders).not.toContainEqual({ memo: 'below' });
  });

  it('takes an empty operationName as none, whichever path answers and whatever ran before', async () => {
    for (const query of ['{ a: __typename }', 'query Only { b: __typename }']) {
      for (const accept of ['application/json', 'application/json, */*;q=0.5', 'application/json']) {
        const res = await send(json(JSON.stringify({ query, operationName: '' })), accept);
        expect([query, accept, res.status, res.body.data]).toEqual([query, accept, 200, expect.any(Object)]);
      }
    }
    const several = await send(json(JSON.stringify({ query: twoOperations, operationName: '' })));
    expect(several.body.errors[0]).toMatchObject({ message: 'the document has several operations: give operationName', extensions: { reason: 'OPERATION_RESOLUTION_FAILURE' } });
  });

  // GraphQL over HTTP §GET: the parameters are one URLSearchParams; a request naming one twice is not
  // well-formed (400), where the values used to reach the executor joined by commas, as one document.
  it('refuses a GET that repeats a GraphQL parameter, and runs neither value', async () => {
    const twice: [string, string][] = [
      ['query', `query=${encodeURIComponent('query A { a: __typename }')}&query=${encodeURIComponent('query B { b: __typename }')}&operationName=B`],
      ['operationName', `query=${encodeURIComponent(twoOperations)}&operationName=A&operationName=B`],
      ['variables', `query=${encodeURIComponent('query ($l: Int) { products(limit: $l) { id } }')}&variables=%7B%7D&variables=%7B%22l%22%3A1%7D`],
      ['extensions', 'query=%7B__typename%7D&extensions=%7B%7D&extensions=%7B%7D'],
      ['documentId', `documentId=sha256%3A${'0'.repeat(64)}&documentId=sha256%3A${'1'.repeat(64)}`],
    ];
    for (const [field, query] of twice) {
      for (const accept of ['application/json', 'application/graphql-response+json']) {
        const res = await send({ ...get(query), accept });
        expect([field, accept, res.status, res.headers['content-type']]).toEqual([field, accept, 400, `${accept}; charset=utf-8`]);
        expect(res.body).toEqual({
          errors: [
            {
              message: `the query string names the "${field}" parameter more than once`,
              extensions: { code: 'INVALID_ARGUMENT', reason: 'INVALID_PARAMETER', field, http: { status: 400 } },
            },
          ],
        });
      }
    }
    // Other names (a cache buster) are no GraphQL parameter and may repeat.
    const busted = await send(get('query=%7B__typename%7D&_=1&_=2'));
    expect([busted.status, busted.body]).toEqual([200, { data: { __typename: 'Query' } }]);
  });

  it('answers a chunked body over the limit, found while reading it, as one announced too large', async () => {
    const answer = await rawPost(context().app, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked', Authorization: me.authorization }, (req) =>
      req.end(JSON.stringify({ query: '{ __typename }', variables: { padding: 'p'.repeat(300 * 1024) } })),
    );
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body).errors[0].extensions).toEqual({ code: 'INVALID_ARGUMENT', reason: 'BODY_TOO_LARGE', http: { status: 413 } });
  });

  it('refuses an Accept it cannot answer before the operation runs', async () => {
    const product = await buildProduct(context().runtime);
    const create = JSON.stringify({ query: `mutation { createOrder(input: { items: [{ productId: ${product.id}, quantity: 1 }], memo: "406" }) { id } }` });
    const res = await send({ ...json(create), authorization: writer.authorization, accept: 'text/plain' });
    expect(res.status).toBe(406);
    const orders = await send({ ...json('{"query":"{ orders { memo } }"}'), authorization: writer.authorization });
    expect(orders.status).toBe(200);
    expect(orders.body.data.orders).toEqual([]);
  });

  it('answers the same bad requests identically on the fast path (plain-post.ts) and through yoga', async () => {
    const bodies = [
      '{bad',
      '{"query":"{ __typename }","variables":[1]}',
      JSON.stringify({ query: twoOperations }),
      JSON.stringify({ query: twoOperations, operationName: 'C' }),
      '{"query":"{"}',
      '{"query":"{ nope }"}',
      JSON.stringify({ query: tooDeep }),
      '{"query":"{ orders { id } }"}',
      '{"query":"query($l: Int) { products(limit: $l) { id } }","variables":{"l":"x"}}',
    ];
    for (const body of bodies) {
      for (const authorization of [me.authorization, 'Bearer not-a-token']) {
        // A plain Accept takes the fast path; one it does not read unambiguously goes to yoga.
        const fast = await send({ ...json(body), authorization }, 'application/json');
        const yoga = await send({ ...json(body), authorization }, 'application/json, */*;q=0.5');
        expect(fast.status, body).toBeGreaterThanOrEqual(400);
        expect([yoga.status, yoga.text, yoga.headers['content-type'], yoga.headers['www-authenticate']], body).toEqual([
          fast.status,
          fast.text,
          fast.headers['content-type'],
          fast.headers['www-authenticate'],
        ]);
      }
    }
  });
});

describeEachDatabase(
  'CORS of /graphql refusals with a list of allowed origins',
  (context) => {

    it('gives a refusal the CORS headers yoga gives an answer, for an allowed and a refused origin', async () => {
      for (const origin of ['https://b.example', 'https://evil.example']) {
        const answered = await request(context().app).post('/graphql').set('Origin', origin).set('Content-Type', 'application/json').send('{"query":"{ __typename }"}');
        const refused = await request(context().app).post('/graphql').set('Origin', origin).set('Content-Type', 'text/plain').send('{ __typename }');
        expect(refused.status).toBe(415);
        expect(cors(refused), origin).toEqual(cors(answered));
        expect(cors(answered)['access-control-allow-origin'], origin).toBe(origin === 'https://b.example' ? origin : 'null');
      }
    });
  },
  { CORS_ORIGINS: 'https://a.example,https://b.example' },
);
