/**
 * The token endpoint as an endpoint: the response shape and its three headers on
 * success and on every error, grant type dispatch, repeated and unknown parameters, non-form
 * and oversized bodies — and never a 500 for bad input.
 */
import { beforeAll, expect, it } from 'vitest';
import request from 'supertest';
import fc from 'fast-check';
import { eq } from 'drizzle-orm';
import { clients } from '../../../src/db/schema.js';
import { describeEachDatabase } from '../../support/runtime.js';
import { basic, buildClient, buildUser, issueCode, obtainTokens, tokenRequest, type TestClient, type TestUser } from '../../support/oauth.js';

function expectTokenHeaders(res: request.Response): void {
  expect(res.headers['content-type']).toBe('application/json;charset=UTF-8');
  expect(res.headers['cache-control']).toBe('no-store');
  expect(res.headers.pragma).toBe('no-cache');
}

function expectError(res: request.Response, status: number, error: string): void {
  expect(res.status).toBe(status);
  expectTokenHeaders(res);
  expect(res.body.error).toBe(error);
  expect(typeof res.body.error_description).toBe('string');
  expect(Object.keys(res.body).sort()).toEqual(['error', 'error_description']);
}

describeEachDatabase('POST /token', (context) => {
  let client: TestClient;
  let user: TestUser;

  beforeAll(async () => {
    client = await buildClient(context().runtime);
    user = await buildUser(context().runtime);
  });

  const post = () => request(context().app).post('/token').set('Authorization', basic(client.id, client.secret!));

  it('answers success with 200, the RFC 6749 §5.1 body and the three headers', async () => {
    const { code, verifier } = await issueCode(context().runtime, client, user);
    const res = await tokenRequest(context().app, { grant_type: 'authorization_code', code, redirect_uri: client.redirectUri, code_verifier: verifier }, client);
    expect(res.status).toBe(200);
    expectTokenHeaders(res);
    expect(res.body).toEqual({
      access_token: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/),
      token_type: 'Bearer',
      expires_in: context().config.accessTokenTtl,
      refresh_token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      scope: 'products:read orders:read',
    });
  });

  it('missing grant_type is invalid_request', async () => {
    expectError(await post().type('form').send({ code: 'x' }), 400, 'invalid_request');
  });

  it.each(['password', 'implicit', 'urn:ietf:params:oauth:grant-type:jwt-bearer', 'urn:ietf:params:oauth:grant-type:saml2-bearer'])(
    'grant_type=%s is unsupported_grant_type',
    async (grantType) => {
      expectError(await post().type('form').send({ grant_type: grantType }), 400, 'unsupported_grant_type');
    },
  );

  it('a grant the client is not registered for is unauthorized_client', async () => {
    const { runtime, app } = context();
    const codeOnly = await buildClient(runtime);
    await runtime.db.update(clients).set({ grantTypes: ['authorization_code'] }).where(eq(clients.id, codeOnly.id));
    const { code, verifier } = await issueCode(runtime, codeOnly, user);
    const tokens = await tokenRequest(app, { grant_type: 'authorization_code', code, redirect_uri: codeOnly.redirectUri, code_verifier: verifier }, codeOnly);
    expect(tokens.status).toBe(200);
    expect(tokens.body.refresh_token).toBeUndefined(); // not registered for refresh tokens: none issued
    const res = await tokenRequest(app, { grant_type: 'refresh_token', refresh_token: 'x'.repeat(43) }, codeOnly);
    expectError(res, 400, 'unauthorized_client');
  });

  it('a repeated parameter is invalid_request', async () => {
    const { code, verifier } = await issueCode(context().runtime, client, user);
    const body = `grant_type=authorization_code&code=${code}&code=${code}&redirect_uri=${encodeURIComponent(client.redirectUri)}&code_verifier=${verifier}`;
    const res = await post().type('form').send(body);
    expectError(res, 400, 'invalid_request');
    expect(res.body.error_description).toMatch(/code parameter is repeated/);
  });

  it('a repeated grant_type is invalid_request', async () => {
    expectError(await post().type('form').send('grant_type=authorization_code&grant_type=refresh_token'), 400, 'invalid_request');
  });

  it('unknown parameters are ignored, even repeated ones', async () => {
    const { code, verifier } = await issueCode(context().runtime, client, user);
    const body = new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: client.redirectUri, code_verifier: verifier });
    body.append('foo', '1');
    body.append('foo', '2');
    body.append('audience_hint', 'https://x.example');
    const res = await post().type('form').send(body.toString());
    expect(res.status).toBe(200);
  });

  it('a parameter sent without a value counts as omitted (RFC 6749 §3.1)', async () => {
    expectError(await post().type('form').send('grant_type='), 400, 'invalid_request');
  });

  it.each([
    ['JSON', 'application/json', JSON.stringify({ grant_type: 'authorization_code' })],
    ['text', 'text/plain', 'grant_type=authorization_code'],
    ['multipart', 'multipart/form-data; boundary=x', '--x\r\nContent-Disposition: form-data; name="grant_type"\r\n\r\nrefresh_token\r\n--x--'],
    ['Latin-1 form', 'application/x-www-form-urlencoded; charset=ISO-8859-1', 'grant_type=refresh_token'],
  ])('a %s body is invalid_request', async (_name, type, body) => {
    expectError(await post().set('Content-Type', type).send(body), 400, 'invalid_request');
  });

  it('no body at all is invalid_request', async () => {
    expectError(await post(), 400, 'invalid_request');
  });

  it('a form body that is not UTF-8 is invalid_request', async () => {
    const res = await post().set('Content-Type', 'application/x-www-form-urlencoded').send(Buffer.from([0x67, 0x3d, 0xff, 0xfe]));
    expectError(res, 400, 'invalid_request');
  });

  it('a body over 16 KB is refused with 413 invalid_request', async () => {
    const res = await post().type('form').send(`grant_type=refresh_token&refresh_token=${'a'.repeat(17 * 1024)}`);
    expectError(res, 413, 'invalid_request');
  });

  it('GET is refused with 405 in the same JSON format', async () => {
    const res = await request(context().app).get('/token');
    expectError(res, 405, 'invalid_request');
    expect(res.headers.allow).toBe('POST');
  });

  it('invalid_client, invalid_grant and invalid_scope carry the three headers too', async () => {
    expectError(await request(context().app).post('/token').set('Authorization', basic(client.id, 'x')).type('form').send({ grant_type: 'refresh_token', refresh_token: 'x' }), 401, 'invalid_client');
    expectError(await post().type('form').send({ grant_type: 'authorization_code', code: 'nope', redirect_uri: client.redirectUri }), 400, 'invalid_grant');
    const { refresh_token } = await obtainTokens(context().app, context().runtime, client, user);
    expectError(await post().type('form').send({ grant_type: 'refresh_token', refresh_token, scope: 'orders:write' }), 400, 'invalid_scope');
  });

  it('never answers arbitrary form bodies with a 5xx or a stack trace', async () => {
    const names = fc.constantFrom('grant_type', 'code', 'redirect_uri', 'code_verifier', 'refresh_token', 'scope', 'client_id', 'client_secret', 'x');
    const values = fc.oneof(fc.constantFrom('authorization_code', 'refresh_token', '', '%', '%zz', '+', client.id), fc.string({ maxLength: 60 }));
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(names, values), { maxLength: 8 }), fc.boolean(), async (pairs, withBasic) => {
        const body = pairs.map(([n, v]) => `${n}=${encodeURIComponent(v).replace(/%25/g, () => (Math.random() < 0.5 ? '%' : '%25'))}`).join('&');
        const req = request(context().app).post('/token').type('form');
        if (withBasic) req.set('Authorization', basic(client.id, client.secret!));
        const res = await req.send(body);
        expect(res.status).toBeGreaterThanOrEqual(200);
        expect(res.status).toBeLessThan(500);
        expectTokenHeaders(res);
        if (res.status !== 200) expect(typeof res.body.error).toBe('string');
      }),
      { numRuns: 60 },
    );
  });
});
