/**
 * CORS on the REST face: a browser app on another origin can call it with a bearer token (preflight included) and read
 * what it needs — the body, ETag, paging headers, and WWW-Authenticate of a refusal — without credentials; other
 * origins are not allowed when CORS_ORIGINS lists some, and requests without an Origin get no CORS headers.
 */
import { beforeAll, expect, it } from 'vitest';
import request from 'supertest';
import { describeEachDatabase } from '../support/runtime.js';
import { issueTestToken, type TestToken } from '../support/tokens.js';
import { buildOrder, buildProduct, type Product } from '../support/factories.js';

const APP_ORIGIN = 'https://spa.example';

const corsHeaders = (res: request.Response) =>
  Object.fromEntries(Object.entries(res.headers).filter(([name]) => name.startsWith('access-control-')));

const listed = (value: string | undefined) => (value ?? '').split(',').map((item) => item.trim().toLowerCase());

describeEachDatabase(
  'REST CORS with listed origins',
  (context) => {
    let owner: TestToken;
    let product: Product;
    let orderId: number;

    beforeAll(async () => {
      const { runtime } = context();
      owner = await issueTestToken(runtime);
      product = await buildProduct(runtime);
      orderId = (await buildOrder(runtime, { userId: owner.userId, items: [{ product }] })).id;
    });

    it('answers a preflight for a PATCH with If-Match from an allowed origin: its methods, headers, no credentials', async () => {
      const res = await request(context().app)
        .options(`/orders/${orderId}`)
        .set('Origin', APP_ORIGIN)
        .set('Access-Control-Request-Method', 'PATCH')
        .set('Access-Control-Request-Headers', 'authorization, content-type, if-match');
      expect(res.status).toBe(204);
      expect(res.headers['access-control-allow-origin']).toBe(APP_ORIGIN);
      expect(listed(res.headers['access-control-allow-methods'])).toEqual(expect.arrayContaining(['get', 'patch', 'options']));
      expect(listed(res.headers['access-control-allow-headers'])).toEqual(
        expect.arrayContaining(['authorization', 'content-type', 'if-match', 'if-none-match', 'dpop', 'idempotency-key']),
      );
      expect(res.headers['access-control-allow-credentials']).toBeUndefined();
      expect(res.headers.vary).toMatch(/Origin/);
    });

    it('lets the page read a response and its ETag and paging headers', async () => {
      const one = await request(context().app).get(`/products/${product.id}?fields=id,name`).set('Origin', APP_ORIGIN).set('Authorization', owner.authorization);
      expect(one.status).toBe(200);
      expect(one.headers['access-control-allow-origin']).toBe(APP_ORIGIN);
      expect(listed(one.headers['access-control-expose-headers'])).toEqual(expect.arrayContaining(['etag', 'next-page-token', 'link', 'location', 'www-authenticate']));
      expect(one.headers.vary).toMatch(/Origin/);
      expect(one.headers.vary).toMatch(/Authorization/);
      const list = await request(context().app).get('/products?page_size=1&fields=id').set('Origin', APP_ORIGIN).set('Authorization', owner.authorization);
      expect(list.status).toBe(200);
      expect(list.headers['access-control-allow-origin']).toBe(APP_ORIGIN);
    });

    it('lets the page read Idempotent-Replayed, which tells a retried POST /orders from a new order', async () => {
      const post = () =>
        request(context().app)
          .post('/orders?fields=id')
          .set('Origin', APP_ORIGIN)
          .set('Authorization', owner.authorization)
          .set('Idempotency-Key', `cors-${orderId}`)
          .send({ items: [{ productId: product.id, quantity: 1 }] });
      expect((await post()).status).toBe(201);
      const replay = await post();
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(listed(replay.headers['access-control-expose-headers'])).toContain('idempotent-replayed');
    });

    it('lets the page read a refusal: 401 with WWW-Authenticate, 403, 404, 405', async () => {
      const refusals = await Promise.all([
        request(context().app).get('/products').set('Origin', APP_ORIGIN),
        request(context().app).get('/orders').set('Origin', APP_ORIGIN).set('Authorization', (await issueTestToken(context().runtime, { scope: 'products:read' })).authorization),
        request(context().app).get('/products/999999999').set('Origin', APP_ORIGIN).set('Authorization', owner.authorization),
        request(context().app).delete(`/orders/${orderId}`).set('Origin', APP_ORIGIN).set('Authorization', owner.authorization),
      ]);
      expect(refusals.map((res) => res.status)).toEqual([401, 403, 404, 405]);
      for (const res of refusals) {
        expect(res.headers['access-control-allow-origin'], String(res.status)).toBe(APP_ORIGIN);
        expect(res.body.error.code, String(res.status)).toBe(res.status);
      }
      expect(refusals[0]!.headers['www-authenticate']).toMatch(/^Bearer /);
    });

    it('does not allow an origin that is not listed, and adds nothing without an Origin', async () => {
      const other = await request(context().app).get(`/products/${product.id}`).set('Origin', 'https://evil.example').set('Authorization', owner.authorization);
      expect(other.status).toBe(200);
      expect(other.headers['access-control-allow-origin']).toBeUndefined();
      const preflight = await request(context().app).options('/products').set('Origin', 'https://evil.example').set('Access-Control-Request-Method', 'GET');
      expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
      const server = await request(context().app).get(`/products/${product.id}`).set('Authorization', owner.authorization);
      expect(corsHeaders(server)).toEqual({});
      // Without an Origin, OPTIONS is the plain answer: 204 with Allow.
      const options = await request(context().app).options('/products');
      expect(options.status).toBe(204);
      expect(options.headers.allow).toBe('GET, HEAD, OPTIONS');
      expect(corsHeaders(options)).toEqual({});
    });
  },
  { CORS_ORIGINS: `${APP_ORIGIN},https://other-spa.example` },
);

describeEachDatabase('REST CORS with the default (any origin)', (context) => {
  it('allows any origin, without credentials', async () => {
    const token = await issueTestToken(context().runtime, { scope: 'products:read' });
    const res = await request(context().app).get('/products?fields=id').set('Origin', 'https://anywhere.example').set('Authorization', token.authorization);
    expect(res.status).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-allow-credentials']).toBeUndefined();
  });
});
