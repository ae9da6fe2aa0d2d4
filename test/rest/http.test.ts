import { beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { once } from 'node:events';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { eq } from 'drizzle-orm';
import { describeEachDatabase } from '../support/runtime.js';
import { issueTestToken, type TestToken } from '../support/tokens.js';
import { buildOrder, buildProduct, type Product } from '../support/factories.js';
import { orders } from '../../src/db/schema.js';
import { ACCESS_TOKEN_TYP } from '../../src/tokens/access-token.js';

/** Every REST operation, with a request that would succeed given the right token. */
const OPERATIONS = (orderId: number, productId: number) =>
  [
    { method: 'get', path: '/products', scope: 'products:read' },
    { method: 'get', path: `/products/${productId}`, scope: 'products:read' },
    { method: 'get', path: '/orders?fields=id', scope: 'orders:read' },
    { method: 'get', path: `/orders/${orderId}?fields=id`, scope: 'orders:read' },
    { method: 'post', path: '/orders?fields=id', scope: 'orders:write', body: { items: [{ productId, quantity: 1 }] } },
    { method: 'patch', path: `/orders/${orderId}?update_mask=memo&fields=id`, scope: 'orders:write', body: { memo: 'x' } },
  ] as const;

describeEachDatabase('REST requests', (context) => {
  let owner: TestToken;
  let product: Product;
  let orderId: number;

  beforeAll(async () => {
    const { runtime } = context();
    owner = await issueTestToken(runtime);
    product = await buildProduct(runtime);
    orderId = (await buildOrder(runtime, { userId: owner.userId, memo: 'kept', items: [{ product }] })).id;
  });

  const memo = async () => (await context().runtime.db.select({ memo: orders.memo }).from(orders).where(eq(orders.id, orderId)))[0]!.memo;
  const send = (method: 'post' | 'patch', path: string) => request(context().app)[method](path).set('Authorization', owner.authorization);

  describe('request bodies', () => {
    it.each([
      ['text/plain', 'memo=x'],
      ['application/x-www-form-urlencoded', 'memo=x'],
      ['multipart/form-data; boundary=x', '--x--'],
      ['application/xml', '<memo>x</memo>'],
    ])('a %s body is 415', async (type, body) => {
      for (const method of ['post', 'patch'] as const) {
        const res = await send(method, method === 'post' ? '/orders' : `/orders/${orderId}?update_mask=memo`).set('Content-Type', type).send(body);
        expect(res.status).toBe(415);
        expect(res.body.error).toMatchObject({ code: 415, message: expect.stringContaining('application/json') });
      }
      expect(await memo()).toBe('kept');
    });

    it('a body without Content-Type is 415; no body at all is 400', async () => {
      const untyped = await request(context().app)
        .patch(`/orders/${orderId}?update_mask=memo`)
        .set('Authorization', owner.authorization)
        .set('Content-Type', '')
        .send(Buffer.from('{"memo":"x"}'));
      expect(untyped.status).toBe(415);
      const none = await send('post', '/orders');
      expect(none.status).toBe(400);
      expect(none.body.error.message).toBe('a JSON object request body is required');
    });

    it('an empty body is 400 however it is framed: chunked with no bytes, or gzip of nothing; nothing changes', async () => {
      const server = context().app.listen(0, '127.0.0.1');
      await once(server, 'listening');
      try {
        const { port } = server.address() as AddressInfo;
        const chunked = await new Promise<{ status: number; body: string }>((resolve, reject) => {
          const req = httpRequest(
            { host: '127.0.0.1', port, method: 'PATCH', path: `/orders/${orderId}?update_mask=memo`, headers: { Authorization: owner.authorization, 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' } },
            (res) => {
              let body = '';
              res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
              res.on('end', () => resolve({ status: res.statusCode!, body }));
            },
          );
          req.on('error', reject).end();
        });
        expect(chunked.status).toBe(400);
        expect(JSON.parse(chunked.body).error.details[0]).toMatchObject({ reason: 'MISSING_BODY' });
      } finally {
        server.close();
      }
      const gzipped = await send('patch', `/orders/${orderId}?update_mask=memo`)
        .set('Content-Type', 'application/json')
        .set('Content-Encoding', 'gzip')
        .serialize((data: unknown) => data as string)
        .send(gzipSync(Buffer.alloc(0)) as never);
      expect(gzipped.status).toBe(400);
      expect(gzipped.body.error).toMatchObject({ message: 'a JSON object request body is required', details: [{ reason: 'MISSING_BODY' }] });
      expect(await memo()).toBe('kept');
    });

    it('application/json with a charset, and +json types, are JSON', async () => {
      const res = await send('patch', `/orders/${orderId}?update_mask=memo&fields=memo`).set('Content-Type', 'application/merge-patch+json; charset=utf-8').send('{"memo":"kept"}');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ memo: 'kept' });
    });

    it.each(['{"memo": ', '{memo: "x"}', "{'memo':'x'}", '{"memo":"x"} trailing', '\u0000'])('malformed JSON %j is 400', async (body) => {
      const res = await send('patch', `/orders/${orderId}?update_mask=memo`).set('Content-Type', 'application/json').send(body);
      expect(res.status).toBe(400);
      expect(res.body).toStrictEqual({
        error: { code: 400, status: 'INVALID_ARGUMENT', message: 'the request body is not valid JSON', details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', domain: 'fieldgate.dev', reason: 'INVALID_JSON', metadata: {} }] },
      });
      expect(await memo()).toBe('kept');
    });

    it.each([
      ['a lone continuation byte', [0x80]],
      ['a truncated sequence', [0xe2, 0x82]],
      ['bytes no UTF-8 has', [0xff, 0xfe]],
      ['an encoded surrogate', [0xed, 0xa0, 0x80]],
    ])('a body with %s in a string is 400 and stores nothing, not U+FFFD', async (_name, bytes) => {
      // superagent would serialize a Buffer as JSON; the bytes must go as they are.
      const raw = (path: string, body: Buffer) => send('patch', path).set('Content-Type', 'application/json').serialize(() => body as never).send(body);
      const res = await raw(`/orders/${orderId}?update_mask=memo`, Buffer.concat([Buffer.from('{"memo":"a'), Buffer.from(bytes), Buffer.from('b"}')]));
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT', message: 'the request body is not valid UTF-8' });
      expect(res.body.error.details[0]).toMatchObject({ reason: 'INVALID_UTF8' });
      expect(await memo()).toBe('kept');
      const valid = await raw(`/orders/${orderId}?update_mask=memo&fields=memo`, Buffer.from('{"memo":"kept \u00e9 \u{1F6A2}"}', 'utf-8'));
      expect(valid.body).toEqual({ memo: 'kept \u00e9 \u{1F6A2}' });
      await send('patch', `/orders/${orderId}?update_mask=memo`).set('Content-Type', 'application/json').send('{"memo":"kept"}');
    });

    it.each([
      ['[{"memo":"x"}]', 'an array'],
      ['"memo"', 'a string'],
      ['42', 'a number'],
      ['null', 'null'],
      ['true', 'a boolean'],
    ])('a JSON body that is not an object (%s) is 400', async (body, what) => {
      const res = await send('patch', `/orders/${orderId}?update_mask=memo`).set('Content-Type', 'application/json').send(body);
      expect(res.status).toBe(400);
      expect(res.body.error.message).toBe(`the request body must be a JSON object, not ${what}`);
    });

    it('a deeply nested body is 400, even in a field the mask ignores', async () => {
      const deep = `{"memo":"x","extra":${'['.repeat(5000)}${']'.repeat(5000)}}`;
      const res = await send('patch', `/orders/${orderId}?update_mask=memo`).set('Content-Type', 'application/json').send(deep);
      expect(res.status).toBe(400);
      expect(res.body.error.message).toMatch(/nested deeper than 16 levels/);
      expect(await memo()).toBe('kept');
    });

    it('a body over 64 KB is 413, and one just under is read', async () => {
      const big = JSON.stringify({ memo: 'x', padding: 'p'.repeat(64 * 1024) });
      const res = await send('patch', `/orders/${orderId}?update_mask=memo`).set('Content-Type', 'application/json').send(big);
      expect(res.status).toBe(413);
      expect(res.body.error).toMatchObject({ code: 413, message: 'the request body is too large' });
      const fits = JSON.stringify({ memo: 'kept', padding: 'p'.repeat(60 * 1024) });
      expect((await send('patch', `/orders/${orderId}?update_mask=memo`).set('Content-Type', 'application/json').send(fits)).status).toBe(200);
      const huge = await send('post', '/orders').set('Content-Type', 'application/json').send(JSON.stringify({ items: [], memo: 'm'.repeat(10 * 1024 * 1024) }));
      expect(huge.status).toBe(413);
    });
  });

  describe('request bodies with a Content-Encoding', () => {
    /** Sends `body` as is (supertest would serialize a Buffer by its Content-Type). */
    const encoded = (method: 'post' | 'patch', path: string, coding: string, body: Buffer | string) =>
      send(method, path).set('Content-Type', 'application/json').set('Content-Encoding', coding).serialize((data: unknown) => data as string).send(body);
    const errorLogs = () => context().logs.records().filter((record) => (record.level as number) >= 50);

    it.each(['gzip', 'br', 'deflate'])('corrupt %s data is 400 INVALID_ARGUMENT, logged as no error', async (coding) => {
      const before = errorLogs().length;
      for (const method of ['post', 'patch'] as const) {
        const res = await encoded(method, method === 'post' ? '/orders' : `/orders/${orderId}?update_mask=memo`, coding, 'garbage');
        expect(res.status, method).toBe(400);
        expect(res.body.error, method).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
      }
      expect(errorLogs().slice(before)).toEqual([]);
      expect(await memo()).toBe('kept');
    });

    it('a Content-Encoding it cannot decode is 415', async () => {
      const res = await encoded('patch', `/orders/${orderId}?update_mask=memo`, 'compress', 'garbage');
      expect(res.status).toBe(415);
      expect(res.body.error).toMatchObject({ code: 415, status: 'INVALID_ARGUMENT', details: [expect.objectContaining({ reason: 'UNSUPPORTED_ENCODING' })] });
    });

    it('a well-formed gzip body is read', async () => {
      const res = await encoded('patch', `/orders/${orderId}?update_mask=memo&fields=memo`, 'gzip', gzipSync('{"memo":"kept"}'));
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ memo: 'kept' });
    });
  });

  describe('authentication and scopes, as on GraphQL', () => {
    const call = (operation: ReturnType<typeof OPERATIONS>[number], authorization?: string) => {
      let test = request(context().app)[operation.method](operation.path);
      if (authorization !== undefined) test = test.set('Authorization', authorization);
      return 'body' in operation ? test.send(operation.body) : test;
    };

    it('no token: 401 with a bare Bearer challenge, the DPoP offer and the REST error body', async () => {
      for (const operation of OPERATIONS(orderId, product.id)) {
        const res = await call(operation);
        expect(res.status, operation.path).toBe(401);
        expect(res.headers['www-authenticate']).toBe(
          'Bearer realm="fieldgate", resource_metadata="http://localhost:3000/.well-known/oauth-protected-resource", DPoP realm="fieldgate", algs="ES256 EdDSA Ed25519 RS256"',
        );
        expect(res.body).toStrictEqual({
          error: { code: 401, status: 'UNAUTHENTICATED', message: 'an access token is required', details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', domain: 'fieldgate.dev', reason: 'MISSING_TOKEN', metadata: {} }] },
        });
      }
      expect(await memo()).toBe('kept');
    });

    it('a malformed, foreign or expired token: 401 invalid_token', async () => {
      const { runtime } = context();
      const key = await runtime.keys.signingKey();
      const now = Math.floor(Date.now() / 1000);
      const issuer = context().config.issuer;
      const expired = key.sign(
        { client_id: owner.clientId, scope: 'products:read orders:read orders:write', grant_id: owner.grantId, iss: issuer, aud: issuer, sub: String(owner.userId), jti: randomUUID(), iat: now - 7200, exp: now - 3600 },
        ACCESS_TOKEN_TYP,
      );
      for (const [authorization, description] of [
        ['Bearer not-a-jwt', /malformed|invalid/],
        ['Bearer a.b.c', /malformed|invalid/],
        [`Bearer ${expired}`, /expired/],
        ['Basic dXNlcjpwYXNz', /Bearer/],
      ] as const) {
        for (const operation of OPERATIONS(orderId, product.id)) {
          const res = await call(operation, authorization);
          expect(res.status, `${authorization} ${operation.path}`).toBe(401);
          expect(res.body.error.status).toBe('UNAUTHENTICATED');
          expect(res.body.error.message).toMatch(description);
          if (!authorization.startsWith('Basic')) {
            expect(res.headers['www-authenticate']).toMatch(/^Bearer realm="fieldgate", error="invalid_token", error_description="[^"]+", resource_metadata="http:\/\/localhost:3000\/\.well-known\/oauth-protected-resource"$/);
          }
        }
      }
    });

    it('a revoked token: 401 invalid_token', async () => {
      const { runtime } = context();
      const token = await issueTestToken(runtime, { userId: owner.userId });
      await runtime.revocations.revokeGrant(token.grantId);
      for (const operation of OPERATIONS(orderId, product.id)) {
        const res = await call(operation, token.authorization);
        expect(res.status).toBe(401);
        expect(res.headers['www-authenticate']).toMatch(/error="invalid_token"/);
        expect(res.body.error.message).toMatch(/revoked/);
      }
    });

    it('a token revoked after it was accepted: the next request is refused, though its checks were cached', async () => {
      const { app, runtime } = context();
      const token = await issueTestToken(runtime, { userId: owner.userId });
      const read = () => request(app).get(`/products/${product.id}?fields=id`).set('Authorization', token.authorization);
      expect((await read()).status).toBe(200);
      expect((await read()).status).toBe(200);
      await runtime.revocations.revokeGrant(token.grantId);
      const res = await read();
      expect(res.status).toBe(401);
      expect(res.body.error.message).toMatch(/revoked/);
    });

    it('a token without the scope: 403 insufficient_scope naming it, and nothing changes', async () => {
      const { runtime } = context();
      for (const operation of OPERATIONS(orderId, product.id)) {
        const others = ['products:read', 'orders:read', 'orders:write'].filter((scope) => scope !== operation.scope).join(' ');
        const token = await issueTestToken(runtime, { userId: owner.userId, scope: others });
        const res = await call(operation, token.authorization);
        expect(res.status, operation.path).toBe(403);
        expect(res.headers['www-authenticate']).toMatch(/error="insufficient_scope"/);
        expect(res.headers['www-authenticate']).toMatch(new RegExp(`scope="${operation.scope}"`));
        expect(res.body.error).toMatchObject({ code: 403, status: 'PERMISSION_DENIED' });
        expect(res.body.error.message).toMatch(operation.scope);
      }
      expect(await memo()).toBe('kept');
    });

    it('the right token gets through every operation', async () => {
      for (const operation of OPERATIONS(orderId, product.id)) {
        const res = await call(operation, owner.authorization);
        expect(res.status, operation.path).toBeLessThan(300);
      }
      await send('patch', `/orders/${orderId}?update_mask=memo`).send({ memo: 'kept' });
    });

    it('authentication comes before reading the body or the parameters', async () => {
      const res = await request(context().app).patch(`/orders/x?update_mask=`).set('Content-Type', 'text/plain').send('junk');
      expect(res.status).toBe(401);
    });
  });

  describe('query parameters and methods', () => {
    const get = (path: string) => request(context().app).get(path).set('Authorization', owner.authorization);

    it.each([
      ['/products?field=id', 'field'],
      ['/products/1?order_by=name', 'order_by'],
      [`/products/1?limit=1`, 'limit'],
      ['/orders?fields=id&update_mask=memo', 'update_mask'],
      ['/orders?fields[]=id', 'fields[]'],
      ['/orders?=x', ''],
      ['/orders?access_token=abc', 'access_token'],
    ])('%s is 400 naming the unknown parameter', async (path, name) => {
      const res = await get(path);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
      expect(res.body.error.message).toContain(`unknown query parameter '${name}'`);
    });

    // RFC 6750 §2.3's query token is not read (RFC 9700 §4.3.2): a request with only that has no token, and the answer
    // says where the token goes.
    it.each(['/products?access_token=abc', '/orders/1?fields=id&access_token=abc'])('%s without an Authorization header is 401 saying where the token goes', async (path) => {
      const res = await request(context().app).get(path);
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toMatch(/^Bearer realm="fieldgate", resource_metadata=/);
      expect(res.body.error).toMatchObject({ code: 401, status: 'UNAUTHENTICATED' });
      expect(res.body.error.details[0]).toMatchObject({ reason: 'MISSING_TOKEN' });
      expect(res.body.error.message).toBe('an access token is required: send the access token in the Authorization header, not the access_token query parameter');
    });

    it('an unknown parameter is refused on writes too, and nothing changes', async () => {
      const patch = await send('patch', `/orders/${orderId}?update_mask=memo&updateMask=memo`).send({ memo: 'changed' });
      expect(patch.status).toBe(400);
      expect(patch.body.error.message).toContain("unknown query parameter 'updateMask'");
      const post = await send('post', '/orders?dry_run=true').send({ items: [{ productId: product.id, quantity: 1 }] });
      expect(post.status).toBe(400);
      expect(await memo()).toBe('kept');
    });

    it.each(['/products?limit=1&limit=2', '/products?fields=id&fields=name', `/orders/${0}?fields=id&fields=id`])('a repeated parameter is 400: %s', async (path) => {
      const res = await get(path.replace('/0?', `/${orderId}?`));
      expect(res.status).toBe(400);
      expect(res.body.error.message).toMatch(/is given more than once/);
    });

    it('a long unknown name is cut short in the message', async () => {
      const res = await get(`/products?${'x'.repeat(1000)}=1`);
      expect(res.status).toBe(400);
      expect(res.body.error.message.length).toBeLessThan(200);
    });

    it('a query past the pairs the parser reads is 400, never answered without its last parameters', async () => {
      // node's querystring reads 1000 '&'-separated pairs, empty ones included, and drops the rest.
      const hidden = await get(`/orders?fields=id,status&${'&'.repeat(1000)}filter=status%3Dpaid`);
      expect(hidden.status).toBe(400);
      expect(hidden.body.error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
      expect(hidden.body.error.message).toMatch(/^too many query parameters/);
      expect(hidden.body.error.details[0]).toMatchObject({ reason: 'TOO_MANY_QUERY_PARAMETERS', metadata: { limit: '1000' } });
      for (const path of [`/products?${'&'.repeat(1000)}`, `/orders/${orderId}?fields=id${'&'.repeat(1000)}`]) expect((await get(path)).status, path).toBe(400);
      const write = await send('patch', `/orders/${orderId}?update_mask=memo${'&'.repeat(1000)}`).send({ memo: 'changed' });
      expect(write.status).toBe(400);
      expect(await memo()).toBe('kept');
      // Exactly 1000 pairs are all read: the filter in the last one applies.
      const most = await get(`/orders?fields=id,status${'&'.repeat(999)}filter=status%3Dpaid`);
      expect(most.status).toBe(200);
      expect(most.body.every((order: { status: string }) => order.status === 'paid')).toBe(true);
      expect((await get(`/orders?fields=id,status${'&'.repeat(999)}filter=status%3Dpending`)).body).toContainEqual({ id: orderId, status: 'pending' });
    });

    it.each([
      ['delete', '/products/1', 'GET, HEAD, OPTIONS'],
      ['put', '/products', 'GET, HEAD, OPTIONS'],
      ['post', '/products/1', 'GET, HEAD, OPTIONS'],
      ['delete', '/orders/1', 'GET, HEAD, PATCH, OPTIONS'],
      ['put', '/orders/1', 'GET, HEAD, PATCH, OPTIONS'],
      ['patch', '/orders', 'GET, HEAD, POST, OPTIONS'],
      ['delete', '/orders/abc', 'GET, HEAD, PATCH, OPTIONS'],
      ['post', '/openapi.json', 'GET, HEAD, OPTIONS'],
    ] as const)('%s %s is 405 with Allow and the error body, with or without a token', async (method, path, allow) => {
      for (const authorization of [owner.authorization, undefined]) {
        let test = request(context().app)[method](path);
        if (authorization) test = test.set('Authorization', authorization);
        const res = await test;
        expect(res.status).toBe(405);
        expect(res.headers.allow).toBe(allow);
        expect(res.body).toStrictEqual({
          error: {
            code: 405,
            status: 'INVALID_ARGUMENT',
            message: `the method ${method.toUpperCase()} is not allowed here; allowed: ${allow}`,
            details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', domain: 'fieldgate.dev', reason: 'METHOD_NOT_ALLOWED', metadata: {} }],
          },
        });
      }
      expect(await memo()).toBe('kept');
    });

    it('OPTIONS names the methods; an unknown path is still 404', async () => {
      const options = await request(context().app).options(`/orders/${orderId}`);
      expect(options.status).toBe(204);
      expect(options.headers.allow).toBe('GET, HEAD, PATCH, OPTIONS');
      const missing = await request(context().app).delete(`/orders/${orderId}/items`).set('Authorization', owner.authorization);
      expect(missing.status).toBe(404);
      expect(missing.body.error.status).toBe('NOT_FOUND');
    });
  });

  describe('error answers of the HTTP edge (AIP-193)', () => {
    const get = (path: string) => request(context().app).get(path).set('Authorization', owner.authorization);
    /** The google.rpc.Code each HTTP status of a refused REST request carries (README, "REST API"). */
    const STATUS_NAME: Record<number, string> = { 400: 'INVALID_ARGUMENT', 404: 'NOT_FOUND', 405: 'INVALID_ARGUMENT', 413: 'INVALID_ARGUMENT', 414: 'INVALID_ARGUMENT', 415: 'INVALID_ARGUMENT' };

    it.each([
      ['an unknown path', () => get('/nope'), 404, 'NO_SUCH_ROUTE'],
      ['a path past a resource', () => get('/products/1/reviews'), 404, 'NO_SUCH_ROUTE'],
      ['a method the path does not serve', () => request(context().app).delete('/products').set('Authorization', owner.authorization), 405, 'METHOD_NOT_ALLOWED'],
      ['a body over the limit', () => send('post', '/orders').set('Content-Type', 'application/json').send(JSON.stringify({ memo: 'm'.repeat(70 * 1024) })), 413, 'BODY_TOO_LARGE'],
      ['a URL over the limit', () => get(`/products?fields=${'a'.repeat(13 * 1024)}`), 414, 'URL_TOO_LONG'],
      ['a body that is not JSON', () => send('post', '/orders').set('Content-Type', 'text/plain').send('x'), 415, 'UNSUPPORTED_MEDIA_TYPE'],
      ['a path segment that does not percent-decode', () => get('/products/%E0%A4%A'), 400, 'INVALID_URL_ENCODING'],
      ['a bad escape in a path', () => get('/orders/%ZZ'), 400, 'INVALID_URL_ENCODING'],
    ] as const)('answers %s with its HTTP status and the google.rpc.Code of that status', async (_what, answer, status, reason) => {
      const res = await answer();
      expect(res.status).toBe(status);
      expect(res.body.error).toMatchObject({ code: status, status: STATUS_NAME[status], details: [{ reason, domain: 'fieldgate.dev' }] });
      expect(res.body.error.status).not.toBe('UNIMPLEMENTED');
      if (status === 405) expect(res.headers.allow).toBe('GET, HEAD, OPTIONS');
    });

    it('refuses a query parameter that does not percent-decode to UTF-8, naming it, instead of reading it leniently', async () => {
      for (const [query, parameter] of [
        ['filter=name%3A%22%FF%22', 'filter'],
        ['fields=id%E0%A4%A', 'fields'],
        ['order_by=price%', 'order_by'],
        ['fields=id&page_token=%G0', 'page_token'],
      ]) {
        const res = await get(`/products?${query}`);
        expect(res.status, query).toBe(400);
        expect(res.body.error, query).toMatchObject({
          code: 400,
          status: 'INVALID_ARGUMENT',
          details: [{ reason: 'INVALID_URL_ENCODING', metadata: { parameter } }, { fieldViolations: [{ field: parameter }] }],
        });
      }
      expect((await get('/products?filter=name%3A%22m%C3%BCg%22&fields=id')).status).toBe(200);
      expect((await get('/products?filter=name%3A%22a+b%22')).status).toBe(200);
    });

    it('matches paths case-sensitively, as Google APIs do: /PRODUCTS is an unknown path, whatever the method', async () => {
      for (const [method, path] of [
        ['get', '/PRODUCTS'],
        ['get', '/Products/1'],
        ['get', `/ORDERS/${orderId}`],
        ['get', '/OpenAPI.json'],
        ['delete', '/PRODUCTS'],
        ['patch', `/Orders/${orderId}?update_mask=memo`],
      ] as const) {
        const res = await request(context().app)[method](path).set('Authorization', owner.authorization);
        expect(res.status, path).toBe(404);
        expect(res.body.error, path).toMatchObject({ code: 404, status: 'NOT_FOUND', details: [{ reason: 'NO_SUCH_ROUTE' }] });
      }
      expect(await memo()).toBe('kept');
      expect((await get('/products/')).status).toBe(200);
    });

    it('leaves the other faces as they were: their paths still match in any case', async () => {
      for (const [lower, upper] of [
        ['/token', '/TOKEN'],
        ['/.well-known/openid-configuration', '/.WELL-KNOWN/openid-configuration'],
        ['/healthz', '/HEALTHZ'],
      ] as const) {
        const method = lower === '/token' ? 'post' : 'get';
        const a = await request(context().app)[method](lower);
        const b = await request(context().app)[method](upper);
        expect([b.status, b.text], upper).toEqual([a.status, a.text]);
      }
      const graphql = await request(context().app).post('/GRAPHQL').set('Authorization', owner.authorization).send({ query: '{ __typename }' });
      expect(graphql.body).toEqual({ data: { __typename: 'Query' } });
    });
  });
});
