import { beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describeEachDatabase } from '../support/runtime.js';
import { issueTestToken, type TestToken } from '../support/tokens.js';
import { buildOrder, buildProduct } from '../support/factories.js';
import { ALL_SCOPES } from '../../src/oauth/scopes.js';
import { buildClient, tokenRequest } from '../support/oauth.js';

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

  it('every schema in it is valid JSON Schema 2020-12 (strict: no unknown keyword or format) and every $ref resolves', () => {
    const strict = new Ajv2020({ strict: true, allErrors: true })
      .addFormat('int32', { type: 'number', validate: () => true })
      .addFormat('date-time', () => true)
      .addFormat('uri', () => true);
    // The document as the base its `#/components/…` pointers resolve against (`components` is no schema keyword).
    strict.addKeyword('components').addSchema({ $id: 'doc', components: doc.components }, 'doc');
    const schemas: [string, unknown][] = [];
    const collect = (node: unknown, where: string): void => {
      if (typeof node !== 'object' || node === null) return;
      for (const [key, value] of Object.entries(node)) {
        if (key === 'schema') schemas.push([`${where}.schema`, value]);
        else collect(value, `${where}.${key}`);
      }
    };
    collect(doc.paths, 'paths');
    collect({ parameters: doc.components.parameters, responses: doc.components.responses }, 'components');
    for (const name of Object.keys(doc.components.schemas as Json)) schemas.push([`components.schemas.${name}`, { $ref: `#/components/schemas/${name}` }]);
    expect(schemas.length).toBeGreaterThan(20);
    for (const [where, schema] of schemas) {
      // `#/components/…` resolves within the document, as a client generator resolves it.
      const rebased = JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"doc#/components/'));
      expect(() => strict.compile(rebased), where).not.toThrow();
    }
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

  it('every documented length and range bound is where the server draws it: the bound is accepted, one past it is 400', async () => {
    const parameters = doc.components.parameters as Json;
    const send = (method: string, url: string, headers: Record<string, string> = {}) => {
      let test = request(context().app)[method as 'get'](url).set('Authorization', owner.authorization);
      for (const [name, value] of Object.entries(headers)) test = test.set(name, value);
      return method === 'get' ? test : test.send(method === 'post' ? { items: [{ productId: ids.product, quantity: 1 }] } : { memo: 'bounds' });
    };
    /** A valid value of exactly `n` characters for each length-bounded query parameter. */
    const filler: Record<string, (n: number) => string> = {
      fields: (n) => `id${','.repeat(n - 2)}`,
      filter: (n) => `id > 0${' '.repeat(n - 6)}`,
      order_by: (n) => `id${' '.repeat(n - 2)}`,
      update_mask: (n) => `memo${','.repeat(n - 4)}`,
    };
    // page_token: every token the server issues is accepted up to the longest URL it reads (414 past it), so its bound is the URL's.
    const bounded = Object.entries(parameters).filter(([, p]) => p.in === 'query' && p.schema.type === 'string' && p.schema.maxLength !== undefined && p.name !== 'page_token');
    expect(bounded.map(([name]) => name).sort()).toEqual(Object.keys(filler).sort());
    for (const [name, parameter] of bounded) {
      const { path, method } = operations().find(({ operation }) => (operation.parameters as Json[]).some((p) => p.$ref === `#/components/parameters/${name}`))!;
      const url = (value: string) => {
        // Commas go as they are and spaces as `+`: the URL stays within its own limit (414) while the value reaches its bound.
        const query = `${method === 'patch' && name !== 'update_mask' ? 'update_mask=memo&' : ''}${name}=${value.replace(/ /g, '+').replace(/>/g, '%3E')}`;
        return `${path.replace('{id}', String(method === 'get' && path.startsWith('/products') ? ids.product : ids.order))}?${query}`;
      };
      const max = parameter.schema.maxLength as number;
      expect(filler[name]!(max)).toHaveLength(max);
      const at = await send(method, url(filler[name]!(max)));
      expect(at.status, `${name} of ${max} characters: ${at.text.slice(0, 200)}`).toBeLessThan(300);
      const past = await send(method, url(filler[name]!(max + 1)));
      expect(past.status, `${name} of ${max + 1} characters`).toBe(400);
      expect(past.body.error.message, name).toContain(name);
    }
    for (const name of ['offset', 'page_size', 'limit']) {
      const { minimum, maximum } = parameters[name].schema;
      expect((await send('get', `/orders?${name}=${minimum}`)).status, `${name}=${minimum}`).toBe(200);
      expect((await send('get', `/orders?${name}=${minimum - 1}`)).status, `${name}=${minimum - 1}`).toBe(400);
      // page_size has no maximum: more than the largest page is that page.
      expect((await send('get', `/orders?${name}=${maximum ?? 2 ** 53}`)).status, `${name}=${maximum}`).toBe(200);
      if (maximum !== undefined) expect((await send('get', `/orders?${name}=${maximum + 1}`)).status, `${name}=${maximum + 1}`).toBe(400);
    }
    const id = parameters.id.schema;
    for (const path of ['/products', '/orders']) {
      expect((await send('get', `${path}/${id.maximum}`)).status, `${path}/${id.maximum}`).toBe(404);
      expect((await send('get', `${path}/${id.maximum + 1}`)).status, `${path}/${id.maximum + 1}`).toBe(400);
      expect((await send('get', `${path}/${id.minimum - 1}`)).status, `${path}/${id.minimum - 1}`).toBe(400);
    }
    // Idempotency-Key: 1 to 255 printable characters, bare or as a quoted string (whose escapes make it longer).
    const key = parameters['Idempotency-Key'].schema;
    const longest = `"${'\\"'.repeat(255)}"`;
    expect(longest.length).toBeLessThanOrEqual(key.maxLength);
    expect((await send('post', '/orders?fields=id', { 'Idempotency-Key': longest })).status, 'a quoted key of 255 escaped characters').toBe(201);
    expect((await send('post', '/orders?fields=id', { 'Idempotency-Key': 'k'.repeat(255) })).status).toBe(201);
    expect((await send('post', '/orders?fields=id', { 'Idempotency-Key': 'k'.repeat(256) })).status).toBe(400);
    expect((await send('post', '/orders?fields=id', { 'Idempotency-Key': `"${'k'.repeat(256)}"` })).status).toBe(400);
    expect(key.minLength).toBe(1);
    expect((await send('post', '/orders?fields=id', { 'Idempotency-Key': '""' })).status).toBe(400);
  });

  it('order_by and filter name every field the server sorts and filters each collection by, and no other', async () => {
    for (const [parameter, probe, listed] of [
      ['order_by', 'order_by=nope', /sortable fields: (.*)$/],
      ['filter', 'filter=nope%3D1', /filterable fields: (.*) at position/],
    ] as const) {
      const description = doc.components.parameters[parameter].description as string;
      // The document's own lists: `Products …` up to `orders`/`Orders`, then the orders' part.
      const [, products, orders] = /Products[^:]*?(?::| by)(.*?)(?:;|\.) *[Oo]rders(?::| by)(.*?)\.(?: |$)/.exec(description) ?? [];
      for (const [path, documented] of [['/products', products], ['/orders', orders]] as const) {
        const res = await request(context().app).get(`${path}?${probe}`).set('Authorization', owner.authorization);
        expect(res.status).toBe(400);
        const served = listed.exec(res.body.error.message)![1]!.split(', ');
        const named = [...(documented ?? '').matchAll(/[A-Za-z]+(?:\.[A-Za-z]+)?/g)].map(([word]) => word).filter((word) => !['or', 'asc', 'desc'].includes(word));
        expect(named.sort(), `${parameter} on ${path}`).toEqual([...served].sort());
      }
    }
  });

  it('the request bodies’ documented bounds are where the server draws them: the bound is accepted, one past it is 400', async () => {
    const { runtime, app } = context();
    const schemas = doc.components.schemas as Json;
    const post = (body: Json) => request(app).post('/orders?fields=id').set('Authorization', owner.authorization).send(body);
    const item = (quantity = 1, productId = ids.product) => ({ productId, quantity });
    const { minimum, maximum } = schemas.OrderItemInput.properties.quantity;
    expect([minimum, maximum].every(Number.isInteger), 'OrderItemInput.quantity bounds').toBe(true);
    expect((await post({ items: [item(minimum)] })).status).toBe(201);
    expect((await post({ items: [item(maximum)] })).status).toBe(201);
    expect((await post({ items: [item(minimum - 1)] })).body.error.details[1].fieldViolations[0].field).toBe('items.quantity');
    expect((await post({ items: [item(maximum + 1)] })).status).toBe(400);
    const { minItems, maxItems } = schemas.CreateOrderInput.properties.items;
    expect([minItems, maxItems].every(Number.isInteger), 'CreateOrderInput.items bounds').toBe(true);
    const more: number[] = [];
    while (more.length <= maxItems) more.push((await buildProduct(runtime)).id);
    expect((await post({ items: more.slice(0, minItems).map((id) => item(1, id)) })).status).toBe(201);
    expect((await post({ items: more.slice(0, maxItems).map((id) => item(1, id)) })).status).toBe(201);
    expect((await post({ items: more.slice(0, minItems - 1).map((id) => item(1, id)) })).status).toBe(400);
    expect((await post({ items: more.slice(0, maxItems + 1).map((id) => item(1, id)) })).status).toBe(400);
    // Characters, as JSON Schema counts them (code points): one emoji is one.
    for (const [input, send] of [
      ['CreateOrderInput', (memo: string) => post({ items: [item()], memo })],
      ['UpdateOrderInput', (memo: string) => request(app).patch(`/orders/${ids.order}?update_mask=memo&fields=id`).set('Authorization', owner.authorization).send({ memo })],
    ] as const) {
      const { maxLength } = schemas[input].properties.memo;
      expect(Number.isInteger(maxLength), `${input}.memo maxLength`).toBe(true);
      expect((await send('😀'.repeat(maxLength))).status, `${input}.memo of ${maxLength}`).toBeLessThan(300);
      const past = await send('😀'.repeat(maxLength + 1));
      expect(past.status, `${input}.memo of ${maxLength + 1}`).toBe(400);
      expect(past.body.error.message).toContain('memo');
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

  it('offers every OAuth flow the server advertises that OpenAPI can describe: a client_credentials token reads products', async () => {
    const metadata = (await request(context().app).get('/.well-known/oauth-authorization-server')).body;
    const flows = doc.components.securitySchemes.oauth2.flows;
    const described: Record<string, string> = { authorization_code: 'authorizationCode', client_credentials: 'clientCredentials' };
    const advertised = (metadata.grant_types_supported as string[]).filter((grant) => Object.hasOwn(described, grant)).map((grant) => described[grant]);
    expect(Object.keys(flows).sort()).toEqual(advertised.sort());
    expect(flows.authorizationCode.refreshUrl).toBe(metadata.grant_types_supported.includes('refresh_token') ? metadata.token_endpoint : undefined);
    const flow = flows.clientCredentials;
    expect(flow.tokenUrl).toBe(metadata.token_endpoint);
    // Every scope the flow lists is granted to it, and no other: as Swagger UI or Postman would ask for them.
    const service = await buildClient(context().runtime, { redirectUris: [], grantTypes: ['client_credentials'] });
    for (const scope of Object.keys(flows.authorizationCode.scopes as Json)) {
      const token = await tokenRequest(context().app, { grant_type: 'client_credentials', scope }, service);
      expect(token.status, `${scope}: ${token.text}`).toBe(Object.hasOwn(flow.scopes, scope) ? 200 : 400);
    }
    const token = await tokenRequest(context().app, { grant_type: 'client_credentials', scope: Object.keys(flow.scopes as Json).join(' ') }, service);
    for (const { path, method, operation } of operations()) {
      const [scope] = operation.security[0].oauth2 as string[];
      const res = await exampleRequest(path, method, operation, `Bearer ${token.body.access_token}`);
      expect(res.status, `${method} ${path} with a client_credentials token`).toBe(Object.hasOwn(flow.scopes, scope!) ? Number(Object.keys(operation.responses).find((s) => s.startsWith('2'))) : 403);
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
