/**
 * The contract of GET /openapi.json, checked against what the server really answers: every documented
 * operation is sent real requests (sparse `fields` masks, page tokens, update masks, conditional
 * requests, every refusal it can meet), and each answer must be documented for that operation — its
 * status, the headers clients read, and a body valid under the documented schema ($refs resolved).
 * Client generators (openapi-generator, openapi-typescript, Postman) break on exactly these gaps: a
 * status the document does not list, a required property a sparse response leaves out, a header
 * sent but not declared. Every documented status must also be produced here, so the document cannot
 * promise what the server never does.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import request from 'supertest';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import type { Express } from 'express';
import { sql } from 'drizzle-orm';
import { createTestRuntime, describeEachDatabase, TEST_ISSUER } from '../support/runtime.js';
import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/database.js';
import { createLogger } from '../../src/logger.js';
import { openRuntime } from '../../src/runtime.js';
import { createTestDatabase } from '../support/databases.js';
import { issueTestToken, type TestToken } from '../support/tokens.js';
import { buildOrder, buildProduct, buildSeller, type Product } from '../support/factories.js';
import { ALL_SCOPES } from '../../src/oauth/scopes.js';
import { answerClientErrors } from '../../src/http/client-error.js';
import { grants } from '../../src/db/schema.js';
import { dpopKey, dpopProof } from '../support/dpop.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
type Method = 'get' | 'post' | 'patch';
/** `GET /products/{id}`: an operation as the document names it. */
type Operation = `${'GET' | 'POST' | 'PATCH'} /${string}`;

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The body as sent (empty for 304). */
  text: string;
}

/** Headers a client acts on: each one sent must be documented on the response that carries it. */
const HEADERS_CLIENTS_READ = ['ETag', 'Next-Page-Token', 'Link', 'Location', 'Allow', 'Retry-After', 'WWW-Authenticate', 'DPoP-Nonce', 'Idempotent-Replayed'];

/**
 * Documented statuses no in-process request can produce on purpose: POST /orders' 409 is
 * IDEMPOTENCY_KEY_CONFLICT, answered only when the key's row is deleted between the two statements
 * of its claim (a race with the janitor).
 */
const NOT_PRODUCIBLE = new Set(['POST /orders 409']);

/** RFC 3339 `date-time` (OpenAPI's `format: date-time`), as a strict client generator parses it. */
const RFC3339 = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/i;

describeEachDatabase('OpenAPI contract: the document says what the server does', (context) => {
  let doc: Json;
  let owner: TestToken;
  let stranger: TestToken;
  let products: Product[];
  let orderIds: { pending: number; delivered: number; strangers: number };
  // Formats are asserted: a generated client parses `date-time` into a date and `int32` into a 32-bit integer.
  const ajv = new Ajv2020({ strict: false, allErrors: true })
    .addFormat('date-time', RFC3339)
    .addFormat('int32', { type: 'number', validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31 })
    .addFormat('uri', (text: string) => URL.canParse(text));
  const compiled = new Map<unknown, ValidateFunction>();
  /** `GET /products 200`, for every answer checked. */
  const exercised = new Set<string>();

  const deref = (value: Json): Json => {
    let current = value;
    while (current && typeof current.$ref === 'string') {
      current = current.$ref
        .slice(2)
        .split('/')
        .reduce((node: Json, key: string) => node?.[key.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
      expect(current, `unresolvable $ref ${value.$ref}`).toBeDefined();
    }
    return current;
  };

  function validate(schema: Json, value: unknown): string | undefined {
    let check = compiled.get(schema);
    if (!check) {
      check = ajv.compile({ ...schema, components: doc.components });
      compiled.set(schema, check);
    }
    return check(value) ? undefined : ajv.errorsText(check.errors);
  }

  function operationOf(op: Operation): Json {
    const [method, path] = op.split(' ') as [string, string];
    const operation = doc.paths[path]?.[method.toLowerCase()];
    expect(operation, `${op} is not documented`).toBeDefined();
    return operation;
  }

  /** Checks one answer against a documented response object: headers, media type and body. */
  function conformsToResponse(where: string, documented: Json, res: Answer): Json | undefined {
    const response = deref(documented);
    const headers = Object.fromEntries(Object.entries((response.headers ?? {}) as Json).map(([name, header]) => [name.toLowerCase(), deref(header)]));
    for (const name of HEADERS_CLIENTS_READ) {
      if (res.headers[name.toLowerCase()] !== undefined) expect(headers[name.toLowerCase()], `${where} sends ${name}, which is not documented`).toBeDefined();
    }
    for (const [name, header] of Object.entries(headers)) {
      const value = res.headers[name];
      if (header.required) expect(value, `${where}: documented as required, the ${name} header is missing`).toBeDefined();
      if (value !== undefined && header.schema) expect(validate(header.schema, value), `${where}: header ${name}: ${String(value)}`).toBeUndefined();
    }
    if (!response.content) {
      expect(res.text, `${where}: documented without a body`).toBe('');
      return undefined;
    }
    const type = String(res.headers['content-type'] ?? '').split(';')[0]!.trim();
    const media = response.content[type];
    expect(media, `${where}: answered ${type || 'no content type'}, documented ${Object.keys(response.content).join(', ')}`).toBeDefined();
    const body = JSON.parse(res.text) as Json;
    expect(validate(media.schema, body), `${where}: body ${res.text.slice(0, 300)}`).toBeUndefined();
    if (body && typeof body === 'object' && 'error' in body) expect(body.error.code, `${where}: error.code is the HTTP status`).toBe(res.status);
    return body;
  }

  /** The answer must be one the operation documents. */
  function conforms(op: Operation, res: Answer): Json | undefined {
    const responses = operationOf(op).responses as Json;
    const reason = res.text.startsWith('{"error"') ? ` ${JSON.parse(res.text).error.details?.[0]?.reason}` : '';
    // `default` covers what a proxy or the HTTP parser may answer; the server's own statuses are listed one by one.
    const documented = responses[String(res.status)];
    expect(documented, `${op} answered ${res.status}${reason}, which it does not document (${Object.keys(responses).join(', ')})`).toBeDefined();
    exercised.add(`${op} ${res.status}`);
    return conformsToResponse(`${op} ${res.status}${reason}`, documented, res);
  }

  interface Send {
    /** `Authorization` value; the owner's token when absent, none when null. */
    authorization?: string | null;
    headers?: Record<string, string>;
    /** A JSON body, or raw bytes with their type. */
    json?: unknown;
    raw?: { type: string; data: string | Buffer };
    /** Another app than the suite's (one whose database is out of reach, or slow). */
    app?: Express;
  }

  async function send(method: Method | 'put' | 'delete', url: string, options: Send = {}): Promise<Answer> {
    let test = request(options.app ?? context().app)[method](url);
    const authorization = options.authorization === undefined ? owner.authorization : options.authorization;
    if (authorization !== null) test = test.set('Authorization', authorization);
    for (const [name, value] of Object.entries(options.headers ?? {})) test = test.set(name, value);
    // superagent would serialize a Buffer as JSON; raw bodies go as they are.
    if (options.raw) test = test.set('Content-Type', options.raw.type).serialize((data: unknown) => data as never).send(options.raw.data as never);
    else if (options.json !== undefined) test = test.send(options.json as object);
    const res = await test.buffer(true).parse((response, callback) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => callback(null, text));
    });
    return { status: res.status, headers: res.headers as Answer['headers'], text: res.body as string };
  }

  /** Sends `url` as `op` and checks the answer against it; `status` is what the case means to provoke. */
  async function exchange(op: Operation, url: string, status: number, options: Send = {}): Promise<{ res: Answer; body: Json | undefined }> {
    const method = op.split(' ')[0]!.toLowerCase() as Method;
    const res = await send(method, url, options);
    const body = conforms(op, res);
    expect(res.status, `${op} ${url}: ${res.text.slice(0, 300)}`).toBe(status);
    return { res, body };
  }

  /** Without `fields`, every documented property is present except those documented as only sent when named. */
  function expectEveryDefaultField(schema: Json, value: unknown, where: string): void {
    const resolved = deref(schema);
    if (value === null) return;
    if (resolved.oneOf) return expectEveryDefaultField(resolved.oneOf.find((alternative: Json) => alternative.type !== 'null'), value, where);
    if (resolved.type === 'array' || (Array.isArray(resolved.type) && Array.isArray(value))) {
      for (const [i, item] of (value as unknown[]).entries()) expectEveryDefaultField(resolved.items, item, `${where}[${i}]`);
      return;
    }
    if (resolved.type !== 'object' || !resolved.properties) return;
    const expected = Object.entries(resolved.properties as Json)
      .filter(([, property]) => !/only when named in `fields`/.test(property.description ?? ''))
      .map(([name]) => name);
    expect(Object.keys(value as Json).sort(), where).toEqual(expected.sort());
    for (const name of expected) expectEveryDefaultField(resolved.properties[name], (value as Json)[name], `${where}.${name}`);
  }

  const successSchema = (op: Operation, status: number) => deref(operationOf(op).responses[String(status)]).content['application/json'].schema;

  beforeAll(async () => {
    const { runtime, app } = context();
    const res = await request(app).get('/openapi.json');
    expect(res.status).toBe(200);
    doc = res.body;
    owner = await issueTestToken(runtime);
    stranger = await issueTestToken(runtime);
    const unrated = await buildSeller(runtime, { rating: null });
    products = [
      await buildProduct(runtime, { reviews: 3, withShippingPolicy: true }),
      await buildProduct(runtime, { description: null, sellerId: unrated.id }),
      await buildProduct(runtime, { reviews: 1 }),
      await buildProduct(runtime, { priceCents: 250 }),
    ];
    const pending = await buildOrder(runtime, { userId: owner.userId, memo: null, items: [{ product: products[0]!, quantity: 2 }, { product: products[1]! }] });
    const delivered = await buildOrder(runtime, { userId: owner.userId, status: 'delivered', memo: 'left at the door', items: [{ product: products[2]! }] });
    await buildOrder(runtime, { userId: owner.userId, items: [{ product: products[3]! }] });
    const strangers = await buildOrder(runtime, { userId: stranger.userId, items: [{ product: products[0]! }] });
    orderIds = { pending: pending.id, delivered: delivered.id, strangers: strangers.id };
  });

  describe('success answers', () => {
    it('GET /products and /products/{id}: every fields mask gives a body valid under the documented schema', async () => {
      const masks = [undefined, '', '*', 'id', 'id,name,seller(name,rating)', 'seller', 'reviews.rating,shippingPolicy', 'shippingPolicy(regions),description', 'reviews(author,body)'];
      for (const fields of masks) {
        const query = fields === undefined ? '' : `?fields=${encodeURIComponent(fields)}`;
        const list = await exchange('GET /products', `/products${query}`, 200);
        expect((list.body as unknown as Json[]).length).toBe(products.length);
        for (const product of products) await exchange('GET /products/{id}', `/products/${product.id}${query}`, 200);
      }
    });

    it('every documented property is in a default answer (nothing `fields` did not leave out is missing)', async () => {
      const list = await exchange('GET /products', '/products', 200);
      expectEveryDefaultField(successSchema('GET /products', 200), list.body, 'GET /products');
      const orders = await exchange('GET /orders', '/orders', 200);
      expectEveryDefaultField(successSchema('GET /orders', 200), orders.body, 'GET /orders');
      const order = await exchange('GET /orders/{id}', `/orders/${orderIds.pending}`, 200);
      expectEveryDefaultField(successSchema('GET /orders/{id}', 200), order.body, 'GET /orders/{id}');
    });

    it('GET /orders and /orders/{id}: sparse and nested masks, the order-item product only when named', async () => {
      const masks = [undefined, '*', 'id', 'id,status,memo', 'items', 'items(productId,quantity)', 'items.product(name,seller(name))', 'etag,totalCents,createdAt,updatedAt'];
      for (const fields of masks) {
        const query = fields === undefined ? '' : `?fields=${encodeURIComponent(fields)}`;
        const list = await exchange('GET /orders', `/orders${query}`, 200);
        expect((list.body as unknown as Json[]).length).toBe(3);
        for (const id of [orderIds.pending, orderIds.delivered]) {
          const { res } = await exchange('GET /orders/{id}', `/orders/${id}${query}`, 200);
          expect(res.headers.etag).toBeDefined();
        }
      }
    });

    it('lists page by page_token: Next-Page-Token and Link while another page follows, neither on the last', async () => {
      for (const [op, path, total] of [['GET /products', '/products', products.length], ['GET /orders', '/orders', 3]] as const) {
        const seen: number[] = [];
        let token: string | undefined;
        let pages = 0;
        do {
          const query = new URLSearchParams({ page_size: '1', fields: 'id', ...(token === undefined ? {} : { page_token: token }) });
          const { res, body } = await exchange(op, `${path}?${query}`, 200);
          seen.push(...(body as unknown as { id: number }[]).map((item) => item.id));
          token = res.headers['next-page-token'] as string | undefined;
          expect(res.headers.link === undefined, `${op}: Link and Next-Page-Token go together`).toBe(token === undefined);
          pages++;
        } while (token !== undefined && pages < 10);
        expect(new Set(seen).size).toBe(total);
        expect(seen.length).toBe(total);
      }
      // Legacy paging, its Link, with a filter and an order.
      await exchange('GET /products', `/products?limit=2&offset=1&fields=id,priceCents&order_by=${encodeURIComponent('price desc')}`, 200);
      await exchange('GET /products', `/products?filter=${encodeURIComponent('price < 5000 AND reviews.rating:1')}&fields=id`, 200);
      await exchange('GET /orders', `/orders?filter=${encodeURIComponent('status = PENDING')}&order_by=totalCents&page_size=0`, 200);
    });

    it('a page may hold fewer items than page_size while more follow, as the document says', async () => {
      expect(deref(doc.components.parameters.page_size).description).toMatch(/fewer/);
      expect(deref(doc.components.parameters.page_size).description).toMatch(/Next-Page-Token/);
      // An expensive selection on the largest page: whatever the server answers is documented.
      const res = await send('get', `/orders?page_size=200&fields=${encodeURIComponent('items.product(reviews)')}`);
      conforms('GET /orders', res);
    });

    it('GET: If-None-Match with the current ETag is 304 without a body; a stale If-Match is 412', async () => {
      for (const [op, url] of [
        ['GET /products', '/products?fields=id'],
        ['GET /products', '/products?fields=id&page_size=1'],
        ['GET /products/{id}', `/products/${products[0]!.id}`],
        ['GET /orders', '/orders'],
        ['GET /orders', '/orders?limit=1&fields=id,memo'],
        ['GET /orders/{id}', `/orders/${orderIds.pending}?fields=status`],
      ] as const) {
        const { res } = await exchange(op, url, 200);
        await exchange(op, url, 304, { headers: { 'If-None-Match': res.headers.etag as string } });
        await exchange(op, url, 200, { headers: { 'If-Match': res.headers.etag as string } });
        await exchange(op, url, 412, { headers: { 'If-Match': '"stale"' } });
      }
    });

    // The list sets its paging headers before the If-Match check refuses the page: the error handler drops them.
    it('a 412 on a list page carries no Link or Next-Page-Token', async () => {
      const res = await send('get', '/products?fields=id&page_size=1', { headers: { 'If-Match': '"stale"' } });
      expect(res.status).toBe(412);
      expect(res.headers['next-page-token']).toBeUndefined();
      expect(res.headers.link).toBeUndefined();
    });

    it('POST /orders: 201 with Location and ETag for every mask; a replay carries Idempotent-Replayed; another body under the key is 422', async () => {
      for (const fields of [undefined, 'id', 'id,etag,status', 'items(product(name))', 'memo,totalCents']) {
        const query = fields === undefined ? '' : `?fields=${encodeURIComponent(fields)}`;
        const { res } = await exchange('POST /orders', `/orders${query}`, 201, { json: { items: [{ productId: products[3]!.id, quantity: 1 }], memo: null } });
        expect(res.headers.location).toMatch(/\/orders\/\d+$/);
      }
      const key = randomUUID();
      const json = { items: [{ productId: products[2]!.id, quantity: 3 }], memo: 'gift' };
      const first = await exchange('POST /orders', '/orders?fields=id,memo', 201, { json, headers: { 'Idempotency-Key': key } });
      const replay = await exchange('POST /orders', '/orders?fields=id,memo', 201, { json, headers: { 'Idempotency-Key': key } });
      expect(replay.res.headers['idempotent-replayed']).toBe('true');
      expect(replay.body).toEqual(first.body);
      await exchange('POST /orders', '/orders', 422, { json: { ...json, memo: 'another' }, headers: { 'Idempotency-Key': key } });
    });

    it('PATCH /orders/{id}: update_mask with several fields masks, conditional on the ETag', async () => {
      const id = (await exchange('POST /orders', '/orders?fields=id', 201, { json: { items: [{ productId: products[0]!.id, quantity: 1 }] } })).body!.id as number;
      for (const fields of [undefined, 'id', 'memo,etag', 'items(productId)', 'status,updatedAt']) {
        const query = fields === undefined ? '' : `&fields=${encodeURIComponent(fields)}`;
        await exchange('PATCH /orders/{id}', `/orders/${id}?update_mask=memo${query}`, 200, { json: { memo: `memo ${fields}` } });
      }
      await exchange('PATCH /orders/{id}', `/orders/${id}?update_mask=memo`, 200, { json: { memo: null } });
      const { res } = await exchange('GET /orders/{id}', `/orders/${id}?fields=id`, 200);
      await exchange('PATCH /orders/{id}', `/orders/${id}?update_mask=status,memo`, 200, { json: { status: 'paid', memo: 'paid' }, headers: { 'If-Match': res.headers.etag as string } });
      // Output-only fields in the mask are ignored: an answer as a read.
      await exchange('PATCH /orders/{id}', `/orders/${id}?update_mask=id,totalCents`, 200, { json: { id: 1, totalCents: 1 } });
    });
  });

  describe('refusals', () => {
    const ALL: { op: Operation; url: () => string; json?: () => unknown }[] = [
      { op: 'GET /products', url: () => '/products' },
      { op: 'GET /products/{id}', url: () => `/products/${products[0]!.id}` },
      { op: 'GET /orders', url: () => '/orders' },
      { op: 'GET /orders/{id}', url: () => `/orders/${orderIds.pending}` },
      { op: 'POST /orders', url: () => '/orders', json: () => ({ items: [{ productId: products[0]!.id, quantity: 1 }] }) },
      { op: 'PATCH /orders/{id}', url: () => `/orders/${orderIds.pending}?update_mask=memo`, json: () => ({ memo: 'x' }) },
    ];
    const json = (item: (typeof ALL)[number]) => (item.json ? { json: item.json() } : {});
    const withQuery = (url: string, query: string) => `${url}${url.includes('?') ? '&' : '?'}${query}`;
    /** One good request per operation, on another runtime's product and order. */
    const everyOperationOn = (productId: number, orderId: number): { op: Operation; url: string; json?: unknown }[] => [
      { op: 'GET /products', url: '/products' },
      { op: 'GET /products/{id}', url: `/products/${productId}` },
      { op: 'GET /orders', url: '/orders' },
      { op: 'GET /orders/{id}', url: `/orders/${orderId}` },
      { op: 'POST /orders', url: '/orders', json: { items: [{ productId, quantity: 1 }] } },
      { op: 'PATCH /orders/{id}', url: `/orders/${orderId}?update_mask=memo`, json: { memo: 'x' } },
    ];

    it('401 with WWW-Authenticate: no token, a malformed one, a foreign one', async () => {
      for (const item of ALL) {
        for (const authorization of [null, 'Bearer not-a-jwt', 'Basic dXNlcjpwdw==', `Bearer ${owner.token.slice(0, -4)}AAAA`]) {
          const { res } = await exchange(item.op, item.url(), 401, { authorization, ...json(item) });
          expect(res.headers['www-authenticate']).toMatch(/^(Bearer|DPoP) /);
        }
      }
    });

    it('403 with WWW-Authenticate naming the scope the token lacks', async () => {
      for (const item of ALL) {
        const scope = operationOf(item.op).security[0].oauth2[0] as string;
        const without = await issueTestToken(context().runtime, { userId: owner.userId, scope: ALL_SCOPES.filter((s) => s !== scope).join(' ') });
        const { res } = await exchange(item.op, item.url(), 403, { authorization: without.authorization, ...json(item) });
        expect(res.headers['www-authenticate']).toContain(`scope="${scope}"`);
      }
      // An order item's product needs products:read, named or not in the route's scope.
      const ordersOnly = await issueTestToken(context().runtime, { userId: owner.userId, scope: 'orders:read' });
      await exchange('GET /orders', '/orders?fields=items.product', 403, { authorization: ordersOnly.authorization });
    });

    it('403 without a challenge: a token with no user (client_credentials) asking for orders', async () => {
      const { runtime } = context();
      const grantId = randomUUID();
      await runtime.db.insert(grants).values({ id: grantId, clientId: owner.clientId, userId: null, scope: ALL_SCOPES.join(' ') });
      const { token } = await runtime.accessTokens.issue({ userId: null, clientId: owner.clientId, scope: ALL_SCOPES.join(' '), grantId });
      for (const item of ALL.filter((candidate) => candidate.op.includes('/orders'))) {
        const { body } = await exchange(item.op, item.url(), 403, { authorization: `Bearer ${token}`, ...json(item) });
        expect(body!.error.details[0].reason).toBe('USER_REQUIRED');
      }
      await exchange('GET /products', '/products?fields=id', 200, { authorization: `Bearer ${token}` });
    });

    it('401 for DPoP: a bound token sent as Bearer, and a proof without the nonce the server requires (DPoP-Nonce)', async () => {
      const { runtime } = context();
      const key = await dpopKey();
      const { token } = await runtime.accessTokens.issue({ userId: owner.userId, clientId: owner.clientId, scope: ALL_SCOPES.join(' '), grantId: owner.grantId, jkt: key.jkt });
      for (const item of ALL) {
        const [method] = item.op.split(' ') as [string];
        const htu = `${TEST_ISSUER}${item.url().split('?')[0]}`;
        const asBearer = await exchange(item.op, item.url(), 401, { authorization: `Bearer ${token}`, ...json(item) });
        expect(asBearer.res.headers['www-authenticate']).toMatch(/^DPoP .*error="invalid_token"/);
        const proof = await dpopProof(key, { htm: method, htu, accessToken: token });
        const nonce = await exchange(item.op, item.url(), 401, { authorization: `DPoP ${token}`, headers: { DPoP: proof }, ...json(item) });
        expect(nonce.res.headers['www-authenticate']).toMatch(/error="use_dpop_nonce"/);
        expect(nonce.res.headers['dpop-nonce']).toBeTruthy();
        // The documented `dpop` scheme: with the nonce, the same request succeeds, answered as documented.
        const withNonce = await dpopProof(key, { htm: method, htu, accessToken: token, nonce: nonce.res.headers['dpop-nonce'] as string });
        const success = Number(Object.keys(operationOf(item.op).responses as Json).find((status) => status.startsWith('2')));
        await exchange(item.op, item.url(), success, { authorization: `DPoP ${token}`, headers: { DPoP: withNonce }, ...json(item) });
      }
    });

    it('400: unknown fields, bad filter, order_by and page tokens, undocumented or repeated parameters, bad percent-encoding', async () => {
      for (const item of ALL) {
        for (const query of ['fields=nope', 'fields=id(', 'undocumented=1', 'fields=id&fields=id', 'fields=%FF', 'fields=%ZZ', 'fields=%']) {
          await exchange(item.op, withQuery(item.url(), query), 400, json(item));
        }
      }
      for (const op of ['GET /products', 'GET /orders'] as const) {
        const path = op.slice(4);
        for (const query of ['filter=price%20%3C', 'filter=nope%3D1', 'order_by=nope', 'order_by=id%20sideways', 'page_token=forged', 'page_size=-1', 'page_size=x', 'limit=0', 'limit=201', 'offset=-1', 'limit=1&page_size=1']) {
          await exchange(op, `${path}?${query}`, 400);
        }
      }
      // A page token is bound to its filter.
      const { res } = await exchange('GET /products', '/products?page_size=1&fields=id', 200);
      await exchange('GET /products', `/products?page_size=1&page_token=${encodeURIComponent(res.headers['next-page-token'] as string)}&filter=id%3E0`, 400);
      for (const [op, path] of [['GET /products/{id}', '/products'], ['GET /orders/{id}', '/orders']] as const) {
        for (const id of ['0', 'abc', '1.5', '99999999999', '%ZZ']) await exchange(op, `${path}/${id}`, 400);
      }
      await exchange('PATCH /orders/{id}', '/orders/abc?update_mask=memo', 400, { json: { memo: 'x' } });
      await exchange('PATCH /orders/{id}', '/orders/%ZZ?update_mask=memo', 400, { json: { memo: 'x' } });
    });

    it('400 for bodies: not an object, bad JSON, missing, invalid fields, bad Idempotency-Key and update_mask', async () => {
      const order = `/orders/${orderIds.pending}`;
      for (const [op, url] of [['POST /orders', '/orders'], ['PATCH /orders/{id}', `${order}?update_mask=memo`]] as const) {
        await exchange(op, url, 400, { raw: { type: 'application/json', data: '[1]' } });
        await exchange(op, url, 400, { raw: { type: 'application/json', data: '{"memo":' } });
        await exchange(op, url, 400, { raw: { type: 'application/json', data: Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]) } });
        await exchange(op, url, 400);
      }
      await exchange('POST /orders', '/orders', 400, { json: { items: [] } });
      await exchange('POST /orders', '/orders', 400, { json: { items: [{ productId: 2_000_000_000, quantity: 1 }] } });
      await exchange('POST /orders', '/orders', 400, { json: { items: [{ productId: products[0]!.id, quantity: 0 }] } });
      await exchange('POST /orders', '/orders', 400, { json: { items: 'many' } });
      await exchange('POST /orders', '/orders', 400, { json: { items: [{ productId: products[0]!.id, quantity: 1 }] }, headers: { 'Idempotency-Key': '' } });
      await exchange('PATCH /orders/{id}', order, 400, { json: { memo: 'x' } });
      await exchange('PATCH /orders/{id}', `${order}?update_mask=nope`, 400, { json: { memo: 'x' } });
      await exchange('PATCH /orders/{id}', `${order}?update_mask=*`, 400, { json: { memo: 'x' } });
      await exchange('PATCH /orders/{id}', `${order}?update_mask=status`, 400, { json: { status: null } });
      await exchange('PATCH /orders/{id}', `${order}?update_mask=status`, 400, { json: { status: 'lost' } });
      await exchange('PATCH /orders/{id}', `${order}?update_mask=memo`, 400, { json: { memo: 'x', etag: 'unquoted' } });
      await exchange('PATCH /orders/{id}', `${order}?update_mask=memo`, 400, { json: { memo: 'x' }, headers: { 'If-Match': 'unquoted' } });
    });

    it('404: a missing product or order, and someone else’s order', async () => {
      await exchange('GET /products/{id}', '/products/2000000000', 404);
      await exchange('GET /orders/{id}', '/orders/2000000000', 404);
      await exchange('GET /orders/{id}', `/orders/${orderIds.strangers}`, 404);
      await exchange('PATCH /orders/{id}', `/orders/${orderIds.strangers}?update_mask=memo`, 404, { json: { memo: 'mine now' } });
      await exchange('PATCH /orders/{id}', '/orders/2000000000?update_mask=memo', 404, { json: { memo: 'x' } });
    });

    it('409: an illegal status move (FAILED_PRECONDITION) and a stale body etag (ABORTED); 412: a stale If-Match, If-None-Match naming the order', async () => {
      const order = `/orders/${orderIds.delivered}`;
      const moved = await exchange('PATCH /orders/{id}', `${order}?update_mask=status`, 409, { json: { status: 'paid' } });
      expect(moved.body!.error.status).toBe('FAILED_PRECONDITION');
      const read = await exchange('GET /orders/{id}', `${order}?fields=etag`, 200);
      const etag = read.body!.etag as string;
      await exchange('PATCH /orders/{id}', `${order}?update_mask=memo`, 200, { json: { memo: 'changed', etag } });
      const stale = await exchange('PATCH /orders/{id}', `${order}?update_mask=memo`, 409, { json: { memo: 'again', etag } });
      expect(stale.body!.error.status).toBe('ABORTED');
      await exchange('PATCH /orders/{id}', `${order}?update_mask=memo`, 412, { json: { memo: 'again' }, headers: { 'If-Match': etag } });
      await exchange('PATCH /orders/{id}', `${order}?update_mask=memo`, 412, { json: { memo: 'again' }, headers: { 'If-None-Match': '*' } });
      const current = await exchange('GET /orders/{id}', `${order}?fields=etag`, 200);
      await exchange('PATCH /orders/{id}', `${order}?update_mask=memo`, 412, { json: { memo: 'again' }, headers: { 'If-None-Match': current.body!.etag as string } });
    });

    it('413 for a body over the limit, 415 for one that is not JSON', async () => {
      for (const item of ALL.filter((candidate) => candidate.json)) {
        await exchange(item.op, item.url(), 413, { json: { items: [{ productId: 1, quantity: 1 }], memo: 'x'.repeat(70 * 1024) } });
        await exchange(item.op, item.url(), 415, { raw: { type: 'text/plain', data: 'memo=x' } });
        await exchange(item.op, item.url(), 415, { raw: { type: 'application/x-www-form-urlencoded', data: 'memo=x' } });
        await exchange(item.op, item.url(), 415, { raw: { type: 'application/json; charset=latin1', data: '{"memo":"x"}' } });
      }
    });

    it('414 for a URL over the limit, on every operation', async () => {
      for (const item of ALL) await exchange(item.op, withQuery(item.url(), `fields=${'a'.repeat(13 * 1024)}`), 414, json(item));
    });

    it('431 for request headers over the limit, as the HTTP server answers them, on every operation', async () => {
      const server = http.createServer(context().app);
      answerClientErrors(server);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as AddressInfo;
      try {
        for (const item of ALL) {
          const [method] = item.op.split(' ') as [string];
          const res = await new Promise<Answer>((resolve, reject) => {
            const outgoing = http.request({ host: '127.0.0.1', port, method, path: item.url(), headers: { Authorization: owner.authorization, 'X-Padding': 'p'.repeat(17 * 1024) } }, (incoming) => {
              let text = '';
              incoming.setEncoding('utf8');
              incoming.on('data', (chunk: string) => (text += chunk));
              incoming.on('end', () => resolve({ status: incoming.statusCode!, headers: incoming.headers, text }));
            });
            outgoing.on('error', reject);
            outgoing.end();
          });
          expect(res.status).toBe(431);
          conforms(item.op, res);
        }
      } finally {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    });

    it('500 with the error shape when something fails inside the server', async () => {
      const { runtime } = context();
      // The token check fails unexpectedly (as a database outage would make it).
      const uncached = vi.spyOn(runtime.accessTokens, 'verifyFromCache').mockReturnValue(undefined);
      const failure = vi.spyOn(runtime.accessTokens, 'verify').mockRejectedValue(new Error('simulated failure'));
      try {
        for (const item of ALL) await exchange(item.op, item.url(), 500, json(item));
      } finally {
        failure.mockRestore();
        uncached.mockRestore();
      }
    });

    it('503 UNAVAILABLE with Retry-After on every operation while the database is out of reach', async () => {
      // A runtime of its own, whose database really goes away under the running app.
      const away = await createTestRuntime(context().kind);
      try {
        const caller = await issueTestToken(away.runtime);
        const product = await buildProduct(away.runtime);
        const order = await buildOrder(away.runtime, { userId: caller.userId, items: [{ product }] });
        await away.runtime.database.close();
        for (const item of everyOperationOn(product.id, order.id)) {
          const { res, body } = await exchange(item.op, item.url, 503, { app: away.app, authorization: caller.authorization, json: item.json });
          expect(body!.error.status).toBe('UNAVAILABLE');
          expect(res.headers['retry-after']).toMatch(/^\d+$/);
        }
      } finally {
        await away.close().catch(() => {});
      }
    });

    it('504 DEADLINE_EXCEEDED on every operation whose statement runs past DATABASE_STATEMENT_TIMEOUT_MS [postgres]', async (test) => {
      // PGlite has no statement timeout: there, the documented 504 is one only a PostgreSQL deployment answers.
      if (context().kind !== 'postgres') return test.skip();
      const testDatabase = await createTestDatabase('postgres');
      const config = loadConfig({ ISSUER: TEST_ISSUER, DATA_DIR: 'memory://', LOG_LEVEL: 'fatal', DEMO: 'false', DATABASE_URL: testDatabase.url!, DATABASE_STATEMENT_TIMEOUT_MS: '300' });
      // Opened from the configuration, as `fieldgate serve` does, so the pool's connections carry statement_timeout.
      const runtime = await openRuntime(config, createLogger('fatal'));
      const locker = await openDatabase({ databaseUrl: testDatabase.url!, poolSize: 1 });
      try {
        const app = createApp(runtime);
        const caller = await issueTestToken(runtime);
        const product = await buildProduct(runtime);
        const order = await buildOrder(runtime, { userId: caller.userId, items: [{ product }] });
        // Another session holds the catalogue and the orders: every statement on them waits, until the server cancels it.
        await locker.db.transaction(async (tx) => {
          await tx.execute(sql`lock table products, orders, order_items in access exclusive mode`);
          for (const item of everyOperationOn(product.id, order.id)) {
            const { body } = await exchange(item.op, item.url, 504, { app, authorization: caller.authorization, json: item.json });
            expect(body!.error).toMatchObject({ status: 'DEADLINE_EXCEEDED', details: [{ reason: 'STATEMENT_TIMEOUT' }] });
          }
        });
        // As the document says, a write whose statement was cancelled did not happen: no new order, the memo unchanged.
        const { body } = await exchange('GET /orders', '/orders?fields=id,memo', 200, { app, authorization: caller.authorization });
        expect(body).toEqual([{ id: order.id, memo: order.memo }]);
      } finally {
        await locker.close();
        await runtime.close();
        await testDatabase.drop();
      }
    });

    it('405 with Allow on a path’s other methods, answered in the documented error shape', async () => {
      const error405 = doc.components.responses.Error405;
      expect(error405, 'components.responses.Error405').toBeDefined();
      for (const [method, template] of [['delete', '/orders/{id}'], ['put', '/orders/{id}'], ['post', '/orders/{id}'], ['delete', '/products/{id}'], ['patch', '/products/{id}'], ['post', '/products'], ['patch', '/orders'], ['delete', '/orders']] as const) {
        const res = await send(method, template.replace('{id}', String(orderIds.pending)), { json: {} });
        expect(res.status, `${method} ${template}`).toBe(405);
        conformsToResponse(`${method.toUpperCase()} ${template} 405`, error405, res);
        expect(JSON.parse(res.text).error).toMatchObject({ status: 'INVALID_ARGUMENT', details: [{ reason: 'METHOD_NOT_ALLOWED' }] });
        const documented = Object.keys(doc.paths[template]).filter((key) => ['get', 'put', 'post', 'delete', 'patch'].includes(key));
        const allowed = String(res.headers.allow).split(', ');
        expect(allowed.filter((m) => m !== 'HEAD' && m !== 'OPTIONS').sort()).toEqual(documented.map((m) => m.toUpperCase()).sort());
        for (const operation of documented.map((m) => doc.paths[template][m] as Json)) {
          expect(operation.description ?? '', `${operation.operationId} says what other methods on its path get`).toContain(`405 with \`Allow: ${String(res.headers.allow)}\``);
        }
      }
    });

    it('OPTIONS is 204 with the Allow each path documents, without a token', async () => {
      for (const template of Object.keys(doc.paths as Json)) {
        const res = await request(context().app).options(template.replace('{id}', String(orderIds.pending)));
        expect(res.status, template).toBe(204);
        for (const operation of Object.values(doc.paths[template] as Json)) {
          expect(operation.description).toContain('OPTIONS 204 with the same `Allow`');
          expect(operation.description).toContain(`\`Allow: ${String(res.headers.allow)}\``);
        }
      }
    });
  });

  it('every documented status of every operation was produced by one of the requests above', () => {
    // Runs last (a file's tests run in order), so `exercised` holds every answer checked.
    const missing: string[] = [];
    for (const [path, item] of Object.entries(doc.paths as Json)) {
      for (const [method, operation] of Object.entries(item as Json)) {
        if (!['get', 'post', 'patch', 'put', 'delete'].includes(method)) continue;
        for (const status of Object.keys((operation as Json).responses)) {
          const key = `${method.toUpperCase()} ${path} ${status}`;
          // PGlite has no statement timeout: a 504 is answered on PostgreSQL only.
          const notHere = context().kind !== 'postgres' && status === '504';
          if (status !== 'default' && !exercised.has(key) && !NOT_PRODUCIBLE.has(key) && !notHere) missing.push(key);
        }
      }
    }
    expect(missing, 'documented statuses no request produced').toEqual([]);
  });
  // Resource requests with a DPoP proof need the server's nonce, so its DPoP-Nonce answer is checked too; Bearer requests are unaffected.
}, { DPOP_NONCE: 'all' });
