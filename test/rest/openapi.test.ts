import { beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describeEachDatabase } from '../support/runtime.js';
import { issueTestToken, type TestToken } from '../support/tokens.js';
import { buildOrder, buildProduct } from '../support/factories.js';
import { ALL_SCOPES } from '../../src/oauth/scopes.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describeEachDatabase('GET /openapi.json', (context) => {
  let doc: Json;
  let owner: TestToken;
  let ids: { product: number; order: number };
  const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });

  /** Checks `value` against a schema of the document (its `$ref`s resolved within the document). */
  function conforms(schema: Json, value: unknown): string | undefined {
    const validate = ajv.compile({ ...schema, components: doc.components });
    return validate(value) ? undefined : ajv.errorsText(validate.errors);
  }

  /** A request that should succeed for a documented operation, with the caller's token. */
  function exampleRequest(path: string, method: string, operation: Json, authorization?: string) {
    const url = path.replace('{id}', String(method === 'get' && path.startsWith('/products') ? ids.product : ids.order));
    const query = (operation.parameters as Json[])
      .map((parameter) => (parameter.$ref ? doc.components.parameters[parameter.$ref.split('/').pop()] : parameter))
      .filter((parameter) => parameter.in === 'query' && parameter.required)
      .map((parameter) => `${parameter.name}=${parameter.name === 'update_mask' ? 'memo' : 'x'}`)
      .join('&');
    let test = request(context().app)[method as 'get'](`${url}${query ? `?${query}` : ''}`);
    if (authorization) test = test.set('Authorization', authorization);
    if (operation.requestBody) test = test.send(method === 'post' ? { items: [{ productId: ids.product, quantity: 1 }] } : { memo: 'from the example' });
    return test;
  }

  const operations = () =>
    Object.entries(doc.paths as Json).flatMap(([path, item]) => Object.entries(item as Json).map(([method, operation]) => ({ path, method, operation: operation as Json })));

  beforeAll(async () => {
    const { runtime, app } = context();
    owner = await issueTestToken(runtime);
    const product = await buildProduct(runtime, { reviews: 2, withShippingPolicy: true });
    await buildProduct(runtime, { description: null });
    const order = await buildOrder(runtime, { userId: owner.userId, items: [{ product, quantity: 2 }] });
    ids = { product: product.id, order: order.id };
    const res = await request(app).get('/openapi.json');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    doc = res.body;
  });

  it('is a valid OpenAPI 3.1 document, served without a token', async () => {
    expect(doc.openapi).toBe('3.1.0');
    const result = await new Validator().validate(structuredClone(doc));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('documents exactly the REST operations', () => {
    expect(operations().map(({ path, method }) => `${method.toUpperCase()} ${path}`).sort()).toEqual(
      ['GET /orders', 'GET /orders/{id}', 'GET /products', 'GET /products/{id}', 'PATCH /orders/{id}', 'POST /orders'].sort(),
    );
  });

  it('every documented operation is served: its success status, headers and body schema hold', async () => {
    for (const { path, method, operation } of operations()) {
      const res = await exampleRequest(path, method, operation, owner.authorization);
      const [status, response] = Object.entries(operation.responses as Json).find(([code]) => code.startsWith('2'))!;
      expect(res.status, `${method} ${path}`).toBe(Number(status));
      expect(conforms(response.content['application/json'].schema, res.body), `${method} ${path}`).toBeUndefined();
      expect(response.headers.ETag.required, `${method} ${path} ETag`).toBe(true);
      for (const [header, definition] of Object.entries((response.headers ?? {}) as Json)) {
        if (!definition.required) continue; // Link, Next-Page-Token: only when there is a next page; Idempotent-Replayed: only on a replay
        expect(res.headers[header.toLowerCase()], `${method} ${path} ${header}`).toBeDefined();
      }
    }
  });

  it('the documented schemas are strict enough to catch a wrong body', () => {
    const productSchema = doc.paths['/products/{id}'].get.responses['200'].content['application/json'].schema;
    expect(conforms(productSchema, { id: 1, name: 'x' })).toBeUndefined();
    expect(conforms(productSchema, { id: 'one' })).toBeDefined();
    expect(conforms(productSchema, { colour: 'red' })).toBeDefined();
    const orderSchema = doc.paths['/orders/{id}'].get.responses['200'].content['application/json'].schema;
    expect(conforms(orderSchema, { status: 'pending', memo: null })).toBeUndefined();
    expect(conforms(orderSchema, { status: 'PENDING' })).toBeDefined();
  });

  it('every request-body field takes null exactly where the document says it is nullable', async () => {
    const schemas = doc.components.schemas;
    const nullable = (property: Json) => (Array.isArray(property.type) && property.type.includes('null')) || (property.oneOf ?? []).some((alt: Json) => alt.type === 'null');
    expect(nullable(schemas.UpdateOrderInput.properties.status)).toBe(false);
    expect(nullable(schemas.UpdateOrderInput.properties.memo)).toBe(true);
    expect(schemas.OrderItem.properties.product.description).toMatch(/only when named in `fields`.*products:read/);
    const base = () => ({ items: [{ productId: ids.product, quantity: 1 }] as Json[] });
    const cases: { where: string; nullable: boolean; send: () => ReturnType<typeof request.agent> | Promise<request.Response> }[] = [];
    for (const [name, property] of Object.entries(schemas.CreateOrderInput.properties as Json)) {
      cases.push({ where: `CreateOrderInput.${name}`, nullable: nullable(property), send: () => request(context().app).post('/orders?fields=id').set('Authorization', owner.authorization).send({ ...base(), [name]: null }) });
    }
    for (const [name, property] of Object.entries(schemas.OrderItemInput.properties as Json)) {
      const body = base();
      body.items[0]![name] = null;
      cases.push({ where: `OrderItemInput.${name}`, nullable: nullable(property), send: () => request(context().app).post('/orders?fields=id').set('Authorization', owner.authorization).send(body) });
    }
    for (const [name, property] of Object.entries(schemas.UpdateOrderInput.properties as Json)) {
      cases.push({
        where: `UpdateOrderInput.${name}`,
        nullable: nullable(property),
        send: () => request(context().app).patch(`/orders/${ids.order}?update_mask=${name}&fields=id`).set('Authorization', owner.authorization).send({ [name]: null }),
      });
    }
    expect(cases.length).toBeGreaterThanOrEqual(6);
    for (const { where, nullable: documented, send } of cases) {
      const res = (await send()) as request.Response;
      expect(res.status, where).toBe(documented ? (where.startsWith('Update') ? 200 : 201) : 400);
    }
  });

  it('the Link header is served where documented, when there is a next page', async () => {
    for (const { path, method, operation } of operations()) {
      const documented = Object.keys(Object.values(operation.responses as Json)[0].headers ?? {}).includes('Link');
      if (method !== 'get' || path.includes('{id}')) {
        expect(documented).toBe(false);
        continue;
      }
      expect(documented).toBe(true);
      const res = await request(context().app).get(`${path}?limit=1&fields=id`).set('Authorization', owner.authorization);
      expect(res.headers.link, path).toMatch(/rel="next"/);
    }
  });

  it('every documented parameter is accepted, and its documented bounds are enforced', async () => {
    for (const { path, method, operation } of operations()) {
      const names = (operation.parameters as Json[]).map((parameter) => parameter.$ref.split('/').pop());
      for (const name of names) expect(doc.components.parameters[name], name).toBeDefined();
      if (names.includes('fields')) {
        const good = await exampleRequest(path, method, operation, owner.authorization).query({ fields: 'id' });
        expect(good.status, `${method} ${path}`).toBeLessThan(300);
        expect(Object.keys(Array.isArray(good.body) ? good.body[0] : good.body)).toEqual(['id']);
        const bad = await exampleRequest(path, method, operation, owner.authorization).query({ fields: 'nope' });
        expect(bad.status).toBe(400);
        expect(conforms(doc.components.responses.Error400.content['application/json'].schema, bad.body)).toBeUndefined();
      }
      if (names.includes('limit')) {
        const { maximum, minimum } = doc.components.parameters.limit.schema;
        const url = `${path}?fields=id&limit=`;
        expect((await request(context().app).get(`${url}${maximum}`).set('Authorization', owner.authorization)).status).toBe(200);
        expect((await request(context().app).get(`${url}${maximum + 1}`).set('Authorization', owner.authorization)).status).toBe(400);
        expect((await request(context().app).get(`${url}${minimum - 1}`).set('Authorization', owner.authorization)).status).toBe(400);
      }
    }
  });

  it('the documented error responses come with the Error shape and the documented headers', async () => {
    for (const { path, method, operation } of operations()) {
      const unauthenticated = await exampleRequest(path, method, operation);
      expect(operation.responses['401'], `${method} ${path}`).toBeDefined();
      expect(unauthenticated.status).toBe(401);
      expect(conforms(doc.components.schemas.Error, unauthenticated.body)).toBeUndefined();
      expect(unauthenticated.headers['www-authenticate']).toBeDefined();
      expect(doc.components.responses.Error401.headers['WWW-Authenticate']).toBeDefined();
    }
  });

  it('the security scheme is our OAuth server: its endpoints and scopes, and each operation needs the scope it names', async () => {
    const metadata = (await request(context().app).get('/.well-known/oauth-authorization-server')).body;
    const flow = doc.components.securitySchemes.oauth2.flows.authorizationCode;
    expect(flow.authorizationUrl).toBe(metadata.authorization_endpoint);
    expect(flow.tokenUrl).toBe(metadata.token_endpoint);
    // The API's scopes, all advertised by the server (which also offers the OpenID ones).
    expect(Object.keys(flow.scopes).sort()).toEqual([...ALL_SCOPES].sort());
    expect(metadata.scopes_supported).toEqual(expect.arrayContaining([...ALL_SCOPES]));
    for (const { path, method, operation } of operations()) {
      const [scope] = operation.security[0].oauth2 as string[];
      expect(ALL_SCOPES).toContain(scope);
      const without = await issueTestToken(context().runtime, { userId: owner.userId, scope: ALL_SCOPES.filter((s) => s !== scope).join(' ') });
      const res = await exampleRequest(path, method, operation, without.authorization);
      expect(res.status, `${method} ${path} without ${scope}`).toBe(403);
      expect(res.headers['www-authenticate']).toContain(`scope="${scope}"`);
    }
  });

  it('documents DPoP as the other way to send the same tokens, and a request without one is offered both schemes', async () => {
    expect(doc.components.securitySchemes.dpop).toMatchObject({ type: 'http', scheme: 'DPoP' });
    for (const { path, method, operation } of operations()) {
      const [scope] = operation.security[0].oauth2 as string[];
      expect(operation.security, `${method} ${path}`).toEqual([{ oauth2: [scope] }, { dpop: [scope] }]);
      const res = await exampleRequest(path, method, operation, undefined);
      expect(res.status, `${method} ${path}`).toBe(401);
      const schemes = [...(res.headers['www-authenticate'] as string).matchAll(/(?:^|, )(Bearer|DPoP) realm=/g)].map((m) => m[1]);
      expect(schemes).toEqual(['Bearer', 'DPoP']);
    }
  });

  it('methods it does not document are 405, and Allow lists exactly the documented ones', async () => {
    for (const [path, method] of [['/products', 'post'], ['/products/1', 'delete'], ['/orders/1', 'delete'], ['/orders/1', 'put'], ['/orders', 'patch']] as const) {
      const res = await request(context().app)[method](path).set('Authorization', owner.authorization);
      expect(res.status, `${method} ${path}`).toBe(405);
      expect(conforms(doc.components.schemas.Error, res.body)).toBeUndefined();
      const template = path.replace(/\d+$/, '{id}');
      const documented = Object.keys(doc.paths[template]).map((m) => m.toUpperCase());
      const allow = (res.headers.allow as string).split(', ').filter((m) => m !== 'HEAD' && m !== 'OPTIONS');
      expect(allow.sort()).toEqual(documented.sort());
    }
  });

  it('a query parameter an operation does not document is 400 naming it', async () => {
    for (const { path, method, operation } of operations()) {
      const res = await exampleRequest(path, method, operation, owner.authorization).query({ undocumented: '1' });
      expect(res.status, `${method} ${path}`).toBe(400);
      expect(res.body.error.message).toContain("unknown query parameter 'undocumented'");
    }
  });
});

describe('OpenAPI fields and update_mask documentation', () => {
  it('describes the syntax it accepts', async () => {
    const { createTestRuntime } = await import('../support/runtime.js');
    const context = await createTestRuntime('pglite');
    try {
      const doc = (await request(context.app).get('/openapi.json')).body;
      expect(doc.components.parameters.fields.description).toMatch(/seller\(name,rating\)/);
      expect(doc.components.parameters.fields.description).toMatch(/seller\.name/);
      expect(doc.components.parameters.update_mask.description).toMatch(/AIP-161/);
      expect(doc.components.parameters.update_mask.required).toBe(true);
    } finally {
      await context.close();
    }
  });
});
