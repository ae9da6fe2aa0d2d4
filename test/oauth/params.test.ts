/**
 * Request bodies every OAuth endpoint and page reads (src/oauth/params.ts): a body whose
 * Content-Encoding body-parser cannot decode is the client's fault, answered in the endpoint's
 * own protocol — RFC 6749 §5.2 JSON or the error page — never a 500 and never an error log.
 */
import { beforeAll, expect, it } from 'vitest';
import request from 'supertest';
import type { Express } from 'express';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { describeEachDatabase } from '../support/runtime.js';
import { DEVICE_CODE_GRANT_TYPE } from '../../src/oauth/stores/clients.js';
import { basic, buildClient, type TestClient } from '../support/oauth.js';

const FORM = 'application/x-www-form-urlencoded';
const JSON_TYPE = 'application/json';

/** Endpoints answering in RFC 6749 §5.2 JSON, and the pages answering with the error page. */
const JSON_ENDPOINTS: [path: string, type: string][] = [
  ['/token', FORM],
  ['/revoke', FORM],
  ['/introspect', FORM],
  ['/device_authorization', FORM],
  ['/register', JSON_TYPE],
];
const PAGES = ['/authorize/login', '/authorize/consent', '/authorize/switch-account', '/logout', '/logout/confirm', '/account/login', '/device', '/device/login', '/device/consent'];

const CORRUPT: [coding: string][] = [['gzip'], ['br'], ['deflate'], ['GZIP']];

/** Sends `body` as is (supertest would serialize a Buffer by its Content-Type). */
function post(app: Express, path: string, type: string, coding: string, body: Buffer | string) {
  return request(app)
    .post(path)
    .set('Content-Type', type)
    .set('Content-Encoding', coding)
    .serialize((data: unknown) => data as string)
    .send(body)
    .redirects(0);
}

describeEachDatabase(
  'OAuth request bodies with a Content-Encoding',
  (context) => {
    let client: TestClient;

    beforeAll(async () => {
      client = await buildClient(context().runtime, { scope: 'products:read' });
    });

    const errorLogs = () => context().logs.records().filter((record) => (record.level as number) >= 50);

    it.each(CORRUPT)('answers a corrupt %s body with 400 invalid_request in JSON, logging no error', async (coding) => {
      const before = errorLogs().length;
      for (const [path, type] of JSON_ENDPOINTS) {
        const res = await post(context().app, path, type, coding, 'garbage');
        expect(res.status, path).toBe(400);
        expect(res.headers['content-type'], path).toBe('application/json;charset=UTF-8');
        expect(res.body, path).toEqual({ error: 'invalid_request', error_description: 'the request body could not be read' });
      }
      expect(errorLogs().slice(before)).toEqual([]);
    });

    it.each(CORRUPT)('answers a corrupt %s form with the 400 error page, logging no error', async (coding) => {
      const before = errorLogs().length;
      for (const path of PAGES) {
        const res = await post(context().app, path, FORM, coding, 'garbage');
        expect(res.status, path).toBe(400);
        expect(res.headers['content-type'], path).toMatch(/^text\/html/);
        expect(res.text, path).toContain('The form could not be read');
        expect(res.text, path).not.toMatch(/\bat .+:\d+:\d+|zlib|header check/);
      }
      expect(errorLogs().slice(before)).toEqual([]);
    });

    it('answers a Content-Encoding body-parser does not support with 415 invalid_request', async () => {
      for (const [path, type] of JSON_ENDPOINTS) {
        const res = await post(context().app, path, type, 'compress', 'garbage');
        expect(res.status, path).toBe(415);
        expect(res.body, path).toMatchObject({ error: 'invalid_request' });
      }
      for (const path of PAGES) {
        const res = await post(context().app, path, FORM, 'compress', 'garbage');
        expect(res.status, path).toBe(415);
        expect(res.text, path).toContain('The form could not be read');
      }
    });

    it('still reads a well-formed compressed body', async () => {
      const form = `token=not-a-token&client_id=${client.id}`;
      for (const [coding, body] of [
        ['gzip', gzipSync(form)],
        ['deflate', deflateSync(form)],
        ['br', brotliCompressSync(form)],
      ] as const) {
        const introspection = await post(context().app, '/introspect', FORM, coding, body).set('Authorization', basic(client.id, client.secret!));
        expect(introspection.status, coding).toBe(200);
        expect(introspection.body, coding).toEqual({ active: false });
      }
      const registration = await post(
        context().app,
        '/register',
        JSON_TYPE,
        'gzip',
        gzipSync(JSON.stringify({ redirect_uris: ['http://127.0.0.1/callback'], token_endpoint_auth_method: 'none', client_name: 'Zipped' })),
      );
      expect(registration.status).toBe(201);
      expect(registration.body.client_name).toBe('Zipped');
    });
  },
  { REGISTRATION: 'open', REGISTRATION_RATE_LIMIT: '10000' },
);

describeEachDatabase('OAuth request bodies without a Content-Type', (context) => {
  it('reads a POST with no body and no Content-Type as an empty form (a device request carrying only Basic credentials)', async () => {
    // What Python's requests sends for `requests.post(url, auth=(id, secret))`: no Content-Type, `Content-Length: 0`.
    // RFC 8628 §3.1 needs no parameter from a client that authenticates, so an empty form is a whole request.
    const tv = await buildClient(context().runtime, { redirectUris: [], grantTypes: [DEVICE_CODE_GRANT_TYPE], scope: 'products:read' });
    for (const headers of [{ 'Content-Length': '0' }, {}]) {
      let req = request(context().app).post('/device_authorization').set('Authorization', basic(tv.id, tv.secret!));
      for (const [name, value] of Object.entries(headers)) req = req.set(name, value);
      const res = await req;
      expect(res.status, res.text).toBe(200);
      expect(res.body).toMatchObject({ user_code: expect.any(String), device_code: expect.any(String), interval: 5 });
    }
  });

  it('still refuses an empty body declared as another media type, and a body sent without a Content-Type', async () => {
    const withType = await request(context().app).post('/token').set('Content-Type', JSON_TYPE).set('Content-Length', '0');
    expect(withType.status).toBe(400);
    expect(withType.body).toMatchObject({ error: 'invalid_request', error_description: `the request body must be ${FORM}` });
    const untyped = await request(context().app)
      .post('/token')
      .serialize((data: unknown) => data as string)
      .send('grant_type=client_credentials')
      .unset('Content-Type');
    expect(untyped.status).toBe(400);
    expect(untyped.body).toMatchObject({ error: 'invalid_request', error_description: `the request body must be ${FORM}` });
  });
});
