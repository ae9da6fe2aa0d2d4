/**
 * Corners of HTTP at /graphql: HEAD (RFC 9110 §9.3.2), the charset of a JSON body and its
 * bytes (RFC 8259 §8.1: JSON is UTF-8; a leading BOM may be ignored). Each holds whichever
 * path answers: the fast path (plain-post.ts: a Bearer token, no Origin, a plain Accept), yoga
 * (a request with an Origin), and a chunked body as a sized one.
 */
import { beforeAll, expect, it } from 'vitest';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';
import request from 'supertest';
import { describeEachDatabase } from '../support/runtime.js';
import { issueTestToken, type TestToken } from '../support/tokens.js';
import { buildProduct } from '../support/factories.js';
import { dpopKey, dpopProof } from '../support/dpop.js';

/** The response headers two answers to the same request share (not the date or request id). */
const comparable = (headers: Record<string, unknown>) => Object.fromEntries(Object.entries(headers).filter(([name]) => !['date', 'x-request-id', 'etag', 'connection', 'keep-alive'].includes(name)));

/** A POST whose body is written as these bytes, in chunks (Transfer-Encoding: chunked) or with a Content-Length. */
async function postBytes(app: Express, body: Buffer, headers: http.OutgoingHttpHeaders, framing: 'sized' | 'chunked'): Promise<{ status: number; body: string }> {
  const server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    return await new Promise((resolve, reject) => {
      const framed = { ...headers, ...(framing === 'sized' ? { 'Content-Length': body.length } : { 'Transfer-Encoding': 'chunked' }) };
      const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/graphql', headers: framed }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      });
      req.on('error', reject);
      req.write(body.subarray(0, 3));
      req.end(body.subarray(3));
    });
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

describeEachDatabase('HEAD /graphql', (context) => {
  let me: TestToken;
  let writer: TestToken;
  beforeAll(async () => {
    me = await issueTestToken(context().runtime, { scope: 'products:read' });
    writer = await issueTestToken(context().runtime, { scope: 'products:read orders:read orders:write' });
  });

  const typename = '/graphql?query=%7B__typename%7D';

  it('answers as GET would, with the same status and headers and no body (RFC 9110 §9.3.2)', async () => {
    for (const extra of [{}, { Origin: 'https://shop.example' }, { Accept: 'application/graphql-response+json' }] as Record<string, string>[]) {
      const get = await request(context().app).get(typename).set('Authorization', me.authorization).set(extra);
      const head = await request(context().app).head(typename).set('Authorization', me.authorization).set(extra);
      expect(get.status).toBe(200);
      expect(get.body).toEqual({ data: { __typename: 'Query' } });
      expect([head.status, comparable(head.headers)]).toEqual([get.status, comparable(get.headers)]);
      expect(head.text ?? '').toBe('');
    }
    // The access log still names the method sent.
    const logged = context().logs.records().map((record) => (record as { req?: { method?: string; path?: string } }).req).filter((req) => req?.path?.startsWith('/graphql'));
    expect(logged.filter((req) => req?.method === 'HEAD')).toHaveLength(3);
  });

  it('sends nothing after the head on the wire (an HTTP client would not read it, and the connection would break)', async () => {
    const server = http.createServer(context().app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const wire = await new Promise<string>((resolve, reject) => {
        const socket = net.connect(port, '127.0.0.1', () =>
          socket.write(`HEAD ${typename} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${me.authorization}\r\nConnection: close\r\n\r\n`),
        );
        let text = '';
        socket.setEncoding('latin1');
        socket.on('data', (chunk: string) => (text += chunk));
        socket.on('end', () => resolve(text));
        socket.on('error', reject);
      });
      expect(wire).toMatch(/^HTTP\/1\.1 200 /);
      expect(wire.endsWith('\r\n\r\n')).toBe(true);
      expect(wire).not.toContain('__typename');
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('answers the refusals GET gets, without a body, and runs no mutation', async () => {
    const product = await buildProduct(context().runtime);
    const mutation = `/graphql?query=${encodeURIComponent(`mutation { createOrder(input: { items: [{ productId: ${product.id}, quantity: 1 }], memo: "head" }) { id } }`)}`;
    const refusals: [string, string | null, number][] = [
      [mutation, writer.authorization, 405],
      [typename, null, 401],
      [typename, 'Bearer not-a-token', 401],
      ['/graphql', me.authorization, 400],
      ['/graphql?query=%7B', me.authorization, 400],
    ];
    for (const [path, authorization, status] of refusals) {
      let get = request(context().app).get(path);
      let head = request(context().app).head(path);
      if (authorization) {
        get = get.set('Authorization', authorization);
        head = head.set('Authorization', authorization);
      }
      const [got, headed] = [await get, await head];
      expect([path, got.status]).toEqual([path, status]);
      expect([path, headed.status, comparable(headed.headers)]).toEqual([path, got.status, comparable(got.headers)]);
      expect(headed.text ?? '').toBe('');
    }
    const orders = await request(context().app).post('/graphql').set('Authorization', writer.authorization).set('Content-Type', 'application/json').send('{"query":"{ orders { memo } }"}');
    expect(orders.body.data.orders).not.toContainEqual({ memo: 'head' });
  });

  it('checks a DPoP proof against the method sent, HEAD', async () => {
    const key = await dpopKey();
    const { runtime } = context();
    const { token } = await runtime.accessTokens.issue({ userId: me.userId, clientId: me.clientId, scope: 'products:read', grantId: me.grantId, jkt: key.jkt });
    const htu = `${runtime.config.issuer}/graphql`;
    for (const [htm, status] of [['HEAD', 200], ['GET', 401]] as const) {
      const proof = await dpopProof(key, { htm, htu, accessToken: token, nonce: runtime.dpop.currentNonce() });
      const res = await request(context().app).head(typename).set('Authorization', `DPoP ${token}`).set('DPoP', proof);
      expect([htm, res.status]).toEqual([htm, status]);
    }
  });
});

describeEachDatabase('the charset and bytes of a POST /graphql JSON body', (context) => {
  let me: TestToken;
  beforeAll(async () => {
    me = await issueTestToken(context().runtime, { scope: 'products:read' });
  });

  /** The fast path answers the first; an Origin sends the second to yoga. */
  const paths = (): [string, Record<string, string>][] => [
    ['fast path', { Authorization: me.authorization }],
    ['yoga', { Authorization: me.authorization, Origin: 'https://shop.example' }],
  ];

  const post = (body: Buffer | string, headers: Record<string, string>) =>
    request(context().app)
      .post('/graphql')
      .set(headers)
      .serialize((data: unknown) => data as string)
      .send(body);

  it('refuses a JSON body declared in another charset than UTF-8 with 415 and a GraphQL error', async () => {
    for (const [path, headers] of paths()) {
      for (const type of ['application/json; charset=iso-8859-1', 'application/json;charset=UTF-16', 'application/json; CHARSET="latin1"', 'application/json; charset=']) {
        const res = await post('{"query":"{ __typename }"}', { ...headers, 'Content-Type': type });
        expect([path, type, res.status]).toEqual([path, type, 415]);
        expect(res.body).toEqual({
          errors: [{ message: expect.stringMatching(/UTF-8/), extensions: { code: 'INVALID_ARGUMENT', reason: 'UNSUPPORTED_MEDIA_TYPE', http: { status: 415 } } }],
        });
      }
    }
  });

  it('refuses the other body types declared in another charset than UTF-8 too: they are read as UTF-8 as well', async () => {
    for (const [type, body] of [['application/graphql; charset=iso-8859-1', '{ __typename }'], ['application/x-www-form-urlencoded; charset=windows-1252', 'query=%7B__typename%7D']]) {
      const res = await post(body!, { Authorization: me.authorization, 'Content-Type': type! });
      expect([type, res.status, res.body.errors[0].extensions]).toEqual([type, 415, { code: 'INVALID_ARGUMENT', reason: 'UNSUPPORTED_MEDIA_TYPE', http: { status: 415 } }]);
    }
  });

  it('takes a JSON body declared UTF-8, however the charset is written', async () => {
    for (const [path, headers] of paths()) {
      for (const type of ['application/json; charset=utf-8', 'application/json; charset=UTF8', 'application/json; Charset="utf-8"', 'application/json']) {
        const res = await post('{"query":"{ __typename }"}', { ...headers, 'Content-Type': type });
        expect([path, type, res.status, res.body]).toEqual([path, type, 200, { data: { __typename: 'Query' } }]);
      }
    }
  });

  /** An operation that runs whatever its comment holds, so a misread byte would go unnoticed. */
  const commented = (text: Buffer) => Buffer.concat([Buffer.from('{"query":"{ __typename } # '), text, Buffer.from('"}')]);

  it('refuses a body that is not valid UTF-8 with 400, rather than running it with replacement characters', async () => {
    // A Latin-1 "é", a lone continuation byte, an overlong "/", a truncated sequence.
    for (const bad of [Buffer.from([0xe9]), Buffer.from([0x80]), Buffer.from([0xc0, 0xaf]), Buffer.from([0xe2, 0x82])]) {
      for (const [path, headers] of paths()) {
        const res = await post(commented(bad), { ...headers, 'Content-Type': 'application/json' });
        expect([path, bad.toString('hex'), res.status]).toEqual([path, bad.toString('hex'), 400]);
        expect(res.body).toEqual({
          errors: [{ message: 'the request body is not valid UTF-8', extensions: { code: 'INVALID_ARGUMENT', reason: 'INVALID_JSON', http: { status: 400 } } }],
        });
      }
    }
  });

  it('refuses a JSON body naming a member twice, rather than running its last copy (RFC 8259 §4), sized or chunked', async () => {
    const bodies: [string, string][] = [
      ['{"query":"{ __typename }","query":"mutation { __typename }"}', 'query'],
      ['{"query":"query($n: Int) { __typename }","variables":{"n":1,"n":2}}', 'variables.n'],
    ];
    for (const [body, field] of bodies) {
      for (const [path, headers] of paths()) {
        const res = await post(body, { ...headers, 'Content-Type': 'application/json' });
        expect([path, field, res.status, res.body]).toEqual([
          path,
          field,
          400,
          { errors: [{ message: `the request body names '${field.split('.').at(-1)}' twice in one object`, extensions: { code: 'INVALID_ARGUMENT', reason: 'DUPLICATE_JSON_MEMBER', field, http: { status: 400 } } }] },
        ]);
      }
      const chunked = await postBytes(context().app, Buffer.from(body), { Authorization: me.authorization, 'Content-Type': 'application/json' }, 'chunked');
      expect([field, chunked.status, JSON.parse(chunked.body).errors[0].extensions.reason]).toEqual([field, 400, 'DUPLICATE_JSON_MEMBER']);
    }
    // The same name in two objects is no repeat.
    const res = await post('{"query":"query($a: Boolean!) { __typename @include(if: $a) }","variables":{"a":true},"extensions":{"a":1}}', {
      Authorization: me.authorization,
      'Content-Type': 'application/json',
    });
    expect([res.status, res.body]).toEqual([200, { data: { __typename: 'Query' } }]);
  });

  it('refuses variables naming a member twice in a GET query string or a form body, and a form naming a parameter twice', async () => {
    const query = 'query($n: Int!) { __typename @include(if: true) product(id: $n) { id } }';
    const variables = '{"n":1,"n":2}';
    const get = await request(context().app)
      .get(`/graphql?query=${encodeURIComponent(query)}&variables=${encodeURIComponent(variables)}`)
      .set('Authorization', me.authorization);
    expect([get.status, get.body.errors[0].extensions]).toEqual([400, { code: 'INVALID_ARGUMENT', reason: 'DUPLICATE_JSON_MEMBER', field: 'variables.n', http: { status: 400 } }]);
    const form = (body: string) => post(body, { Authorization: me.authorization, 'Content-Type': 'application/x-www-form-urlencoded' });
    const repeatedMember = await form(`query=${encodeURIComponent(query)}&variables=${encodeURIComponent(variables)}`);
    expect([repeatedMember.status, repeatedMember.body.errors[0].extensions]).toEqual([400, { code: 'INVALID_ARGUMENT', reason: 'DUPLICATE_JSON_MEMBER', field: 'variables.n', http: { status: 400 } }]);
    const repeatedParameter = await form('query=%7B__typename%7D&query=mutation%7B__typename%7D');
    expect([repeatedParameter.status, repeatedParameter.body.errors[0].extensions]).toEqual([400, { code: 'INVALID_ARGUMENT', reason: 'INVALID_PARAMETER', field: 'query', http: { status: 400 } }]);
    // Variables that are not JSON are yoga's to refuse, as before.
    const notJson = await form('query=%7B__typename%7D&variables=%7Bn');
    expect(notJson.body.errors[0].extensions.reason).toBe('INVALID_PARAMETER');
  });

  it('takes a body starting with a UTF-8 byte order mark as the same body without it (RFC 8259 §8.1)', async () => {
    const body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"query":"{ __typename }"}')]);
    for (const [path, headers] of paths()) {
      const res = await post(body, { ...headers, 'Content-Type': 'application/json' });
      expect([path, res.status, res.body]).toEqual([path, 200, { data: { __typename: 'Query' } }]);
    }
  });

  it('refuses an application/graphql or form body that is not valid UTF-8, sized or chunked, rather than running it with replacement characters', async () => {
    const headers = { Authorization: me.authorization };
    for (const [type, text] of [['application/graphql', '{ __typename } # '], ['application/x-www-form-urlencoded', 'query=%7B__typename%7D&operationName=']] as const) {
      for (const framing of ['sized', 'chunked'] as const) {
        const good = await postBytes(context().app, Buffer.from(text), { ...headers, 'Content-Type': type }, framing);
        expect([type, framing, good.status, JSON.parse(good.body)]).toEqual([type, framing, 200, { data: { __typename: 'Query' } }]);
        const bad = await postBytes(context().app, Buffer.concat([Buffer.from(text), Buffer.from([0xe9])]), { ...headers, 'Content-Type': type }, framing);
        expect([type, framing, bad.status, JSON.parse(bad.body)]).toEqual([
          type,
          framing,
          400,
          { errors: [{ message: 'the request body is not valid UTF-8', extensions: { code: 'INVALID_ARGUMENT', reason: 'BODY_UNREADABLE', http: { status: 400 } } }] },
        ]);
      }
    }
  });

  it('answers a chunked body as a sized one: invalid UTF-8 refused, a BOM ignored', async () => {
    const headers = { Authorization: me.authorization, 'Content-Type': 'application/json' };
    const bad = commented(Buffer.from([0xe9]));
    const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"query":"{ __typename }"}')]);
    for (const [body, status] of [[bad, 400], [bom, 200]] as const) {
      const sized = await postBytes(context().app, body, headers, 'sized');
      const chunked = await postBytes(context().app, body, headers, 'chunked');
      expect(sized.status).toBe(status);
      expect(chunked).toEqual(sized);
    }
  });
});
