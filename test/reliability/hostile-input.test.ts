/**
 * Hostile input never gets a 5xx and never stops the process. A corpus of nasty
 * requests and fast-check properties run against a real `fieldgate serve` process, and every
 * answer must be a well-formed 4xx in the protocol of the endpoint that gave it:
 *
 * - /authorize: our HTML error page (400, never a redirect) while the client or redirect URI is
 *   untrusted; after that a 302 to the registered redirect URI with `error` and `iss`
 *   (RFC 6749 §4.1.2.1, RFC 9207) — or the login page, when the request is in fact valid;
 * - /token: the RFC 6749 §5.2 JSON error object, `no-store`, 401 + `WWW-Authenticate: Basic`
 *   when the Authorization header was tried;
 * - REST: Google's `{"error": {"code", "status", "message"}}`;
 * - GraphQL: `{"errors": [...]}`, each error with `extensions.code`.
 *
 * What Node's own HTTP parser refuses before the app sees it (a request line or header over
 * its 16 KiB limit, bytes no HTTP/1.1 message may hold) is answered by Node with a bare
 * 400/431 and the connection closed; those cases check exactly that. After every test the
 * process still answers /healthz, and at the end it has logged no error at all.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ALL_SCOPES } from '../../src/oauth/scopes.js';
import { DATABASE_KINDS } from '../support/databases.js';
import { buildOrder } from '../support/factories.js';
import { startServerProcess, type ServerProcess } from '../support/processes.js';
import { issueTestToken } from '../support/tokens.js';
import { announceBody, parseJson, rawExchange, rawStatus, send, type Reply, type SendOptions } from '../support/reliability/http.js';
import { basicAuthorization, pkcePair, type FlowClient } from '../support/reliability/oauth.js';
import { createStorage, registerClient, seedProducts, withSetupRuntime, type Storage } from '../support/reliability/setup.js';

const ISSUER = 'http://fieldgate.test';
/** Runs per property: enough to wander, small enough for two cores (each run is one request). */
const RUNS = 100;

const OAUTH_ERRORS = ['invalid_request', 'invalid_client', 'invalid_grant', 'unauthorized_client', 'unsupported_grant_type', 'invalid_scope'];
const AUTHORIZE_ERRORS = ['invalid_request', 'unauthorized_client', 'access_denied', 'unsupported_response_type', 'invalid_scope'];
const GOOGLE_STATUSES = ['INVALID_ARGUMENT', 'UNAUTHENTICATED', 'PERMISSION_DENIED', 'NOT_FOUND', 'FAILED_PRECONDITION', 'ABORTED', 'RESOURCE_EXHAUSTED'];

// ---------------------------------------------------------------- encodings

/** Percent-encodes every byte: any byte sequence, valid UTF-8 or not, as it goes on the wire. */
const pct = (bytes: Uint8Array): string => [...bytes].map((byte) => `%${byte.toString(16).padStart(2, '0').toUpperCase()}`).join('');
/** Percent-encodes the UTF-8 of a string (lone surrogates become U+FFFD, as on any wire). */
const utf8 = (text: string): string => pct(Buffer.from(text, 'utf8'));
/** A query string or form body from name/value pairs that are already encoded (or deliberately not). */
const raw = (pairs: [string, string][]): string => pairs.map(([name, value]) => `${name}=${value}`).join('&');

/** Values no parameter should be afraid of: arbitrary text and bytes, broken escapes, NULs, bulk. */
function hostileValue(valid: string[]): fc.Arbitrary<string> {
  return fc.oneof(
    fc.constantFrom(...valid.map(utf8)),
    fc.string({ maxLength: 40 }).map(utf8),
    fc.string({ unit: 'binary', maxLength: 20 }).map(utf8),
    fc.uint8Array({ maxLength: 12 }).map(pct),
    fc.constantFrom('', '%', '%zz', '%C3', '%C3%28', '%FF', '%FE%FF', '%00', 'a%00b', '%ED%A0%80', '%F4%90%80%80', '+', '%2B', '%26%3D', '%E2%80%AE', '%EF%BB%BF'),
    fc.integer({ min: 500, max: 1500 }).map((n) => 'x'.repeat(n)),
  );
}

// ---------------------------------------------------------------- what a well-formed answer is

function expectNoStackTrace(reply: Reply): void {
  expect(reply.body).not.toMatch(/\n\s+at [^\n]+:\d+:\d+/);
  expect(reply.body).not.toMatch(/node_modules|\/src\/[a-z]/);
}

function expectOAuthError(reply: Reply, status?: number, error?: string): void {
  expect(reply.status, reply.body).toBeGreaterThanOrEqual(400);
  expect(reply.status, reply.body).toBeLessThan(500);
  if (status !== undefined) expect(reply.status, reply.body).toBe(status);
  expect(reply.headers['content-type']).toBe('application/json;charset=UTF-8');
  expect(reply.headers['cache-control']).toBe('no-store');
  const body = parseJson<Record<string, unknown>>(reply);
  expect(Object.keys(body).sort()).toEqual(['error', 'error_description']);
  expect(OAUTH_ERRORS).toContain(body.error);
  expect(typeof body.error_description).toBe('string');
  if (error !== undefined) expect(body.error).toBe(error);
  if (reply.status === 401) expect(reply.headers['www-authenticate']).toMatch(/^Basic /);
  expectNoStackTrace(reply);
}

function expectHtmlPage(reply: Reply, status: number): void {
  expect(reply.status, reply.body.slice(0, 500)).toBe(status);
  expect(reply.headers['content-type']).toMatch(/^text\/html/);
  expect(reply.headers.location).toBeUndefined();
  expect(reply.headers['x-frame-options']).toBe('DENY');
  expect(reply.body).toMatch(/^<!doctype html>/);
  expectNoStackTrace(reply);
}

function expectAuthorizeRedirect(reply: Reply, client: FlowClient, error?: string): URLSearchParams {
  expect(reply.status, reply.body.slice(0, 500)).toBe(302);
  const location = reply.headers.location ?? '';
  expect(location.startsWith(`${client.redirectUri}?`), location).toBe(true);
  const params = new URL(location).searchParams;
  expect(AUTHORIZE_ERRORS).toContain(params.get('error'));
  if (error !== undefined) expect(params.get('error')).toBe(error);
  expect(params.get('iss')).toBe(ISSUER);
  expect(params.get('code')).toBeNull();
  return params;
}

function expectLoginPage(reply: Reply): void {
  expectHtmlPage(reply, 200);
  expect(reply.body).toContain('name="password"');
}

/** Whatever /authorize answers must be one of its three legitimate shapes. */
function expectAuthorizeAnswer(reply: Reply, client: FlowClient): void {
  if (reply.status === 302) expectAuthorizeRedirect(reply, client);
  else if (reply.status === 200) expectLoginPage(reply);
  else expectHtmlPage(reply, 400);
}

function expectGoogleError(reply: Reply, status?: number): void {
  expect(reply.status, reply.body).toBeGreaterThanOrEqual(400);
  expect(reply.status, reply.body).toBeLessThan(500);
  if (status !== undefined) expect(reply.status, reply.body).toBe(status);
  expect(reply.headers['content-type']).toMatch(/^application\/json/);
  const body = parseJson<{ error: Record<string, unknown> }>(reply);
  expect(Object.keys(body)).toEqual(['error']);
  expect(Object.keys(body.error).sort()).toEqual(['code', 'details', 'message', 'status']);
  // AIP-193: every error carries an ErrorInfo first, with a machine-readable reason.
  const [info] = body.error.details as { '@type': string; reason: string; domain: string; metadata: unknown }[];
  expect(info).toMatchObject({ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', domain: 'fieldgate.dev' });
  expect(info!.reason).toMatch(/^[A-Z][A-Z0-9_]*[A-Z0-9]$/);
  expect(body.error.code).toBe(reply.status);
  expect(GOOGLE_STATUSES).toContain(body.error.status);
  expect(typeof body.error.message).toBe('string');
  expectNoStackTrace(reply);
}

function expectGraphQLErrors(reply: Reply, status?: number): void {
  expect(reply.status, reply.body).toBeGreaterThanOrEqual(400);
  expect(reply.status, reply.body).toBeLessThan(500);
  if (status !== undefined) expect(reply.status, reply.body).toBe(status);
  expect(reply.headers['content-type']).toMatch(/^application\/(graphql-response\+)?json/);
  const body = parseJson<{ errors?: { message?: unknown; extensions?: { code?: unknown } }[] }>(reply);
  expect(Array.isArray(body.errors) && body.errors.length > 0, reply.body).toBe(true);
  for (const error of body.errors!) {
    expect(typeof error.message).toBe('string');
    expect(typeof error.extensions?.code, reply.body).toBe('string');
    expect(error.extensions?.code).not.toBe('INTERNAL_SERVER_ERROR');
  }
  expectNoStackTrace(reply);
}

/** Any GraphQL answer: data, or errors that are never masked internal errors; never 5xx. */
function expectGraphQLAnswer(reply: Reply): void {
  if (reply.status >= 400) {
    expectGraphQLErrors(reply);
    return;
  }
  expect(reply.status, reply.body).toBe(200);
  const body = parseJson<{ data?: unknown; errors?: { extensions?: { code?: unknown } }[] }>(reply);
  expect('data' in body || 'errors' in body).toBe(true);
  for (const error of body.errors ?? []) {
    expect(typeof error.extensions?.code, reply.body).toBe('string');
    expect(error.extensions?.code, reply.body).not.toBe('INTERNAL_SERVER_ERROR');
  }
  expectNoStackTrace(reply);
}

/**
 * A request whose head is over Node's 16 KiB limit: the server's `clientError` listener answers
 * 431 with the Google error body and closes. Because the client is still writing when that
 * happens, the kernel may reset the connection before the client reads the 431 — either outcome
 * is the HTTP layer refusing it.
 */
async function expectHeaderOverflow(request: () => Promise<{ status: number; body: string }>): Promise<void> {
  let answer: { status: number; body: string };
  try {
    answer = await request();
  } catch (error) {
    expect((error as NodeJS.ErrnoException).code).toBe('ECONNRESET');
    return;
  }
  expect(answer.status).toBe(431);
  expect(JSON.parse(answer.body)).toMatchObject({ error: { code: 431, message: expect.any(String) } });
}

// ---------------------------------------------------------------- the suites

for (const kind of DATABASE_KINDS) {
  describe(`hostile input against a running server [${kind}]`, () => {
    let storage: Storage;
    let server: ServerProcess;
    let client: FlowClient;
    let token: string;
    let orderId: number;
    let base: string;
    const challenge = pkcePair().challenge;

    beforeAll(async () => {
      storage = await createStorage(kind);
      const env = { ...storage.env, ISSUER, DEMO: 'false' };
      await withSetupRuntime(env, async (runtime) => {
        const productIds = await seedProducts(runtime, 3);
        client = await registerClient(runtime, { name: 'Hostile <b>&amp; "quoted"</b>' });
        const issued = await issueTestToken(runtime, { scope: ALL_SCOPES.join(' ') });
        token = issued.token;
        orderId = (await buildOrder(runtime, { userId: issued.userId, items: [{ productId: productIds[0]! }] })).id;
      });
      server = await startServerProcess(env);
      base = raw([
        ['response_type', 'code'],
        ['client_id', client.id],
        ['redirect_uri', encodeURIComponent(client.redirectUri)],
        ['code_challenge', challenge],
        ['code_challenge_method', 'S256'],
      ]);
    });

    afterEach(async () => {
      if (!server) return;
      expect(server.child.exitCode).toBeNull();
      expect((await send(`${server.url}/healthz`)).status).toBe(200);
    });

    afterAll(async () => {
      await server?.stop('SIGKILL');
      await storage?.destroy();
    });

    const get = (path: string, options: SendOptions = {}) => send(`${server.url}${path}`, options);
    const bearer = () => ({ authorization: `Bearer ${token}` });

    describe('GET /authorize', () => {
      const cases: [string, () => string, 'page' | 'login' | { redirect: string } | 431][] = [
        ['no parameters at all', () => '', 'page'],
        ['every parameter empty', () => 'response_type=&client_id=&redirect_uri=&scope=&state=', 'page'],
        ['client_id repeated', () => raw([['client_id', client.id], ['client_id', client.id]]), 'page'],
        ['redirect_uri repeated', () => `${base}&redirect_uri=${encodeURIComponent(client.redirectUri)}`, 'page'],
        ['a 100 KB client_id (over Node’s header limit)', () => `client_id=${'a'.repeat(100_000)}`, 431],
        ['a 12 KB client_id', () => `client_id=${'a'.repeat(12_000)}`, 'page'],
        ['client_id as invalid UTF-8 (%C3%28)', () => 'response_type=code&client_id=%C3%28', 'page'],
        ['client_id as a lone %FF byte', () => 'client_id=%FF', 'page'],
        ['client_id as a broken escape', () => 'client_id=%&redirect_uri=%zz', 'page'],
        ['client_id as a truncated sequence', () => 'client_id=%C3', 'page'],
        ['client_id with a NUL', () => 'client_id=%00', 'page'],
        ['client_id in emoji and RTL override', () => `client_id=${utf8('💥\u202Eevil')}`, 'page'],
        ['client_id with array syntax', () => `client_id[]=${client.id}&client_id[x]=y`, 'page'],
        ['redirect_uri with a path suffix', () => base.replace(encodeURIComponent(client.redirectUri), encodeURIComponent(`${client.redirectUri}/../evil`)), 'page'],
        ['redirect_uri with a host suffix', () => base.replace(encodeURIComponent(client.redirectUri), encodeURIComponent(`${client.redirectUri}.evil.example`)), 'page'],
        ['redirect_uri with a NUL', () => base.replace(encodeURIComponent(client.redirectUri), `${encodeURIComponent(client.redirectUri)}%00`), 'page'],
        ['redirect_uri as invalid UTF-8', () => base.replace(encodeURIComponent(client.redirectUri), '%FF%FE'), 'page'],
        ['response_type=token', () => base.replace('response_type=code', 'response_type=token'), { redirect: 'unsupported_response_type' }],
        ['response_type repeated', () => `${base}&response_type=code`, { redirect: 'invalid_request' }],
        ['state with a NUL', () => `${base}&state=a%00b`, { redirect: 'invalid_request' }],
        ['scope repeated', () => `${base}&scope=products%3Aread&scope=orders%3Aread`, { redirect: 'invalid_request' }],
        ['scope with a zero-width space', () => `${base}&scope=${utf8('products:read\u200B')}`, { redirect: 'invalid_scope' }],
        ['an 8 KB scope', () => `${base}&scope=${'s'.repeat(8000)}`, { redirect: 'invalid_scope' }],
        ['code_challenge_method=plain', () => base.replace('code_challenge_method=S256', 'code_challenge_method=plain'), { redirect: 'invalid_request' }],
        ['code_challenge with a NUL', () => base.replace(challenge, `${challenge.slice(0, 20)}%00${challenge.slice(21)}`), { redirect: 'invalid_request' }],
        ['state as invalid UTF-8 (a valid request otherwise)', () => `${base}&state=%FF%C3%28`, { redirect: 'invalid_request' }],
        ['an 8 KB state', () => `${base}&state=${'s'.repeat(8000)}`, 'login'],
        ['prototype-polluting parameter names', () => `${base}&__proto__=x&constructor=y&toString=z&hasOwnProperty=1`, 'login'],
      ];

      it.each(cases)('%s', async (_name, query, expected) => {
        if (expected === 431) return expectHeaderOverflow(() => get(`/authorize?${query()}`));
        const reply = await get(`/authorize?${query()}`);
        if (expected === 'page') expectHtmlPage(reply, 400);
        else if (expected === 'login') expectLoginPage(reply);
        else expectAuthorizeRedirect(reply, client, expected.redirect);
      });

      it('answers an escaped state unchanged in the error redirect', async () => {
        const state = `<script>"&'\u202E💥`;
        const params = expectAuthorizeRedirect(await get(`/authorize?${base.replace('response_type=code', 'response_type=token')}&state=${utf8(state)}`), client);
        expect(params.get('state')).toBe(state);
      });

      it('answers a form POST with a 303 to the same request as a GET (OIDC Core 3.1.2.1), and another method with a 405 page', async () => {
        const posted = await get('/authorize', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: base });
        expect(posted.status).toBe(303);
        expect(new URLSearchParams(posted.headers.location!.split('?')[1]).toString()).toBe(new URLSearchParams(base).toString());
        expectHtmlPage(await get('/authorize', { method: 'PUT', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: base }), 405);
      });

      it('answers any query (property) with a page, the login page or an error redirect', async () => {
        const names = fc.oneof(
          fc.constantFrom('response_type', 'client_id', 'redirect_uri', 'scope', 'state', 'code_challenge', 'code_challenge_method', '__proto__', 'x'),
          fc.string({ maxLength: 10 }).map(utf8),
        );
        const values = hostileValue(['code', 'token', 'S256', 'plain', 'products:read', client.id, client.redirectUri, challenge]);
        await fc.assert(
          fc.asyncProperty(fc.boolean(), fc.array(fc.tuple(names, values), { maxLength: 8 }), async (withBase, pairs) => {
            const query = [...(withBase ? [base] : []), raw(pairs)].filter(Boolean).join('&');
            expectAuthorizeAnswer(await get(`/authorize?${query}`), client);
          }),
          { numRuns: RUNS },
        );
      });
    });

    describe('POST /token', () => {
      const FORM = 'application/x-www-form-urlencoded';
      const post = (body: string | Buffer | undefined, headers: Record<string, string> = { 'content-type': FORM }, options: SendOptions = {}) =>
        get('/token', { method: 'POST', headers, ...(body === undefined ? {} : { body }), ...options });
      const basic = () => basicAuthorization(client.id, client.secret!);
      const refresh = 'grant_type=refresh_token&refresh_token=nope';

      const cases: [string, () => Promise<Reply>, number, string][] = [
        ['no body and no content type', () => post(undefined, {}), 400, 'invalid_request'],
        ['a JSON body', () => post('{"grant_type":"authorization_code"}', { 'content-type': 'application/json' }), 400, 'invalid_request'],
        ['text/plain', () => post(refresh, { 'content-type': 'text/plain' }), 400, 'invalid_request'],
        ['multipart/form-data', () => post('--x\r\n\r\n--x--', { 'content-type': 'multipart/form-data; boundary=x' }), 400, 'invalid_request'],
        ['a form declared as latin1', () => post(refresh, { 'content-type': `${FORM}; charset=iso-8859-1` }), 400, 'invalid_request'],
        ['raw bytes that are not UTF-8', () => post(Buffer.from([0x67, 0x72, 0x61, 0x6e, 0x74, 0x3d, 0xff, 0xfe, 0xc3, 0x28])), 400, 'invalid_request'],
        ['a code that is percent-encoded invalid UTF-8', () => post('grant_type=authorization_code&code=%C3%28&code_verifier=%FF', { 'content-type': FORM, authorization: basic() }), 400, 'invalid_request'],
        ['grant_type as a lone %FF byte', () => post(`grant_type=%FF&client_id=${client.id}`), 400, 'invalid_request'],
        ['grant_type repeated', () => post(`grant_type=refresh_token&grant_type=refresh_token&refresh_token=x&client_id=${client.id}`), 400, 'invalid_request'],
        ['every parameter empty', () => post('grant_type=&code=&client_id=&client_secret='), 400, 'invalid_request'],
        ['nothing but separators and broken escapes', () => post('&&&===&%%%zz%'), 400, 'invalid_request'],
        ['a 100 KB code', () => post(`grant_type=authorization_code&code=${'a'.repeat(100_000)}`), 413, 'invalid_request'],
        ['a 10 MB body', () => post(`code=${'a'.repeat(10_000_000)}`), 413, 'invalid_request'],
        ['a 10 MB chunked body', () => post(`code=${'a'.repeat(10_000_000)}`, { 'content-type': FORM }, { chunked: true }), 413, 'invalid_request'],
        ['4000 unknown parameters', () => post(Array.from({ length: 4000 }, (_, i) => `p${i}=1`).join('&').slice(0, 16_000)), 400, 'invalid_request'],
        ['a NUL in the code', () => post('grant_type=authorization_code&code=a%00b', { 'content-type': FORM, authorization: basic() }), 400, 'invalid_request'],
        ['a NUL in client_id', () => post(`${refresh}&client_id=%00`), 400, 'invalid_request'],
        ['a unicode client_id', () => post(`${refresh}&client_id=${utf8('клиент💥')}`), 400, 'invalid_client'],
        ['Basic with nothing after it', () => post(refresh, { 'content-type': FORM, authorization: 'Basic' }), 401, 'invalid_client'],
        ['Basic that is not base64', () => post(refresh, { 'content-type': FORM, authorization: 'Basic !!!not*base64' }), 401, 'invalid_client'],
        ['Basic without a colon', () => post(refresh, { 'content-type': FORM, authorization: `Basic ${Buffer.from(client.id).toString('base64')}` }), 401, 'invalid_client'],
        ['Basic with only a colon', () => post(refresh, { 'content-type': FORM, authorization: `Basic ${Buffer.from(':').toString('base64')}` }), 401, 'invalid_client'],
        ['Basic with broken form-encoding', () => post(refresh, { 'content-type': FORM, authorization: `Basic ${Buffer.from('%zz:%').toString('base64')}` }), 401, 'invalid_client'],
        ['Basic over bytes that are not UTF-8', () => post(refresh, { 'content-type': FORM, authorization: `Basic ${Buffer.from([0xff, 0x3a, 0xfe, 0x00]).toString('base64')}` }), 401, 'invalid_client'],
        ['Basic with a NUL in the id', () => post(refresh, { 'content-type': FORM, authorization: `Basic ${Buffer.from('%00:x').toString('base64')}` }), 401, 'invalid_client'],
        ['Basic with the right id and a wrong secret', () => post(refresh, { 'content-type': FORM, authorization: basicAuthorization(client.id, 'wrong') }), 401, 'invalid_client'],
        ['a Bearer header instead of Basic', () => post(refresh, { 'content-type': FORM, authorization: `Bearer ${token}` }), 401, 'invalid_client'],
        ['Basic and client_secret in the body', () => post(`${refresh}&client_secret=${client.secret}`, { 'content-type': FORM, authorization: basic() }), 400, 'invalid_request'],
        ['Basic and a different client_id in the body', () => post(`${refresh}&client_id=other`, { 'content-type': FORM, authorization: basic() }), 400, 'invalid_request'],
        ['valid credentials and an unknown refresh token', () => post(refresh, { 'content-type': FORM, authorization: basic() }), 400, 'invalid_grant'],
        ['GET', () => get(`/token?${refresh}`), 405, 'invalid_request'],
        ['PUT', () => get('/token', { method: 'PUT', headers: { 'content-type': FORM }, body: refresh }), 405, 'invalid_request'],
      ];

      it.each(cases)('%s', async (_name, request, status, error) => {
        expectOAuthError(await request(), status, error);
      });

      it('answers a 20 KB Authorization header at the HTTP layer with 431', async () => {
        await expectHeaderOverflow(() => post(refresh, { 'content-type': FORM, authorization: `Basic ${'A'.repeat(20_000)}` }));
      });

      it('answers any form, content type and Authorization header (property) with an OAuth JSON error', async () => {
        const names = fc.oneof(
          fc.constantFrom('grant_type', 'code', 'redirect_uri', 'code_verifier', 'refresh_token', 'scope', 'client_id', 'client_secret', 'x'),
          fc.string({ maxLength: 10 }).map(utf8),
        );
        const values = hostileValue(['authorization_code', 'refresh_token', 'password', 'client_credentials', client.id, client.secret!, client.redirectUri, 'products:read']);
        const contentType = fc.constantFrom(FORM, FORM, FORM, `${FORM}; charset=UTF-8`, `${FORM}; charset=latin1`, `${FORM};;;`, 'application/json', 'text/plain', '*/*', undefined);
        const authorization = fc.oneof(
          fc.constant(undefined),
          fc.constant(undefined),
          fc.constantFrom('Basic', 'Basic ', 'basic   ', 'Bearer x', 'Digest a=b', basicAuthorization(client.id, client.secret!), basicAuthorization(client.id, 'wrong')),
          fc.uint8Array({ maxLength: 40 }).map((bytes) => `Basic ${Buffer.from(bytes).toString('base64')}`),
          fc.string({ maxLength: 30 }).map((text) => `Basic ${Buffer.from(text).toString('base64')}`),
        );
        const trailing = fc.option(fc.uint8Array({ minLength: 1, maxLength: 20 }), { nil: undefined });
        await fc.assert(
          fc.asyncProperty(fc.array(fc.tuple(names, values), { maxLength: 8 }), contentType, authorization, trailing, async (pairs, type, auth, bytes) => {
            const headers: Record<string, string> = {};
            if (type) headers['content-type'] = type;
            if (auth) headers.authorization = auth;
            const body = bytes ? Buffer.concat([Buffer.from(raw(pairs)), Buffer.from(bytes)]) : raw(pairs);
            expectOAuthError(await post(body, headers));
          }),
          { numRuns: RUNS },
        );
      });
    });

    describe('REST fields and update_mask', () => {
      const products = (fields: string) => get(`/products?fields=${fields}&limit=5`, { headers: bearer() });
      const patchMask = (mask: string, body = '{"memo":"masked"}') =>
        get(`/orders/${orderId}?update_mask=${mask}`, { method: 'PATCH', headers: { ...bearer(), 'content-type': 'application/json' }, body });

      const invalidFields: [string, string][] = [
        ['nesting 1000 deep (and over the length limit)', `${'seller('.repeat(1000)}name${')'.repeat(1000)}`],
        ['nesting 40 deep', `${'seller('.repeat(40)}name${')'.repeat(40)}`],
        ['a path 40 deep', `${'seller.'.repeat(40)}name`],
        ['thousands of distinct unknown names', Array.from({ length: 700 }, (_, i) => `f${i}`).join(',')],
        ['1000 names, over the length limit', Array.from({ length: 1000 }, (_, i) => `n${i}`).join(',')],
        ['an unclosed parenthesis', 'seller(name'],
        ['an unopened parenthesis', 'seller(name))'],
        ['parentheses the wrong way round', ')('],
        ['only opening parentheses', '(((('],
        ['empty parentheses on a scalar', 'id()'],
        ['a list without a name', '(name)'],
        ['a semicolon', 'id;name'],
        ['a NUL', 'id%00'],
        ['invalid UTF-8', '%FF%C3%28'],
        ['a list index', 'reviews[0].rating'],
        ['a field of the wrong level', 'rating'],
        ['an empty path segment', 'seller..name'],
      ];

      it.each(invalidFields)('GET /products refuses fields with %s as INVALID_ARGUMENT', async (_name, fields) => {
        const reply = await products(fields);
        expectGoogleError(reply, 400);
        expect(parseJson<{ error: { status: string } }>(reply).error.status).toBe('INVALID_ARGUMENT');
      });

      it('reads thousands of repeated valid names as one', async () => {
        const reply = await products(Array.from({ length: 1300 }, () => 'id').join(','));
        expect(reply.status, reply.body).toBe(200);
        for (const product of parseJson<Record<string, unknown>[]>(reply)) expect(Object.keys(product)).toEqual(['id']);
      });

      it('refuses a repeated fields parameter', async () => {
        expectGoogleError(await get('/products?fields=id&fields=name', { headers: bearer() }), 400);
      });

      const invalidMasks: [string, string][] = [
        ['nesting 1000 deep', `${'memo('.repeat(1000)}${')'.repeat(1000)}`],
        ['a path 2000 deep', `${'a.'.repeat(2000)}b`],
        ['thousands of unknown names', Array.from({ length: 700 }, (_, i) => `f${i}`).join(',')],
        ['unbalanced parentheses', 'memo)('],
        ['a NUL', 'memo%00'],
        ['invalid UTF-8', 'memo%C3%28'],
        ['nothing', ''],
      ];

      it.each(invalidMasks)('PATCH /orders/{id} refuses update_mask with %s', async (_name, mask) => {
        expectGoogleError(await patchMask(mask), 400);
      });

      it('reads an update_mask of thousands of repeated valid names as one', async () => {
        // 800 names are 3999 characters, just inside the 4096 limit of the parameter.
        const reply = await patchMask(Array.from({ length: 800 }, () => 'memo').join(','), '{"memo":"many"}');
        expect(reply.status, reply.body).toBe(200);
        expect(parseJson<{ memo: string }>(reply).memo).toBe('many');
      });

      const fieldsText = fc.oneof(
        fc.stringMatching(/^[a-zA-Z_.,()* \t0-9![\]]{0,80}$/).map(encodeURIComponent),
        fc
          .array(
            fc.constantFrom('id', 'name', 'seller', 'reviews', 'rating', 'author', 'priceCents', 'memo', 'status', 'items', 'product', '(', ')', '.', ',', '*', ' ', '%00', '%FF', '%C3%28', '%E2%80%8B'),
            { maxLength: 40 },
          )
          .map((parts) => parts.map((part) => (part.startsWith('%') ? part : encodeURIComponent(part))).join('')),
      );

      it('answers any fields (property) with 200 or a Google-style 400', async () => {
        await fc.assert(
          fc.asyncProperty(fieldsText, fc.constantFrom('/products', `/products/1`, '/orders', `/orders/${orderId}`), async (fields, path) => {
            const reply = await get(`${path}?fields=${fields}`, { headers: bearer() });
            if (reply.status === 200) parseJson(reply);
            else expectGoogleError(reply, 400);
          }),
          { numRuns: RUNS },
        );
      });

      it('answers any update_mask (property) with 200 or a Google-style 400', async () => {
        await fc.assert(
          fc.asyncProperty(fieldsText, async (mask) => {
            const reply = await patchMask(mask);
            if (reply.status === 200) expect(parseJson<{ id: number }>(reply).id).toBe(orderId);
            else expectGoogleError(reply, 400);
          }),
          { numRuns: RUNS },
        );
      });
    });

    describe('REST request bodies', () => {
      const patch = (body: string | Buffer, contentType: string | null = 'application/json', options: SendOptions = {}) =>
        get(`/orders/${orderId}?update_mask=memo,status`, {
          method: 'PATCH',
          headers: { ...bearer(), ...(contentType ? { 'content-type': contentType } : {}) },
          body,
          ...options,
        });

      const cases: [string, () => Promise<Reply>, number][] = [
        ['an empty array', () => patch('[]'), 400],
        ['an array of objects', () => patch('[{"memo":"x"}]'), 400],
        ['a string', () => patch('"memo"'), 400],
        ['a number', () => patch('42'), 400],
        ['null', () => patch('null'), 400],
        ['true', () => patch('true'), 400],
        ['arrays nested 30 000 deep', () => patch(`${'['.repeat(30_000)}${']'.repeat(30_000)}`), 400],
        ['objects nested 5 000 deep', () => patch(`{"memo":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}`), 400],
        ['10 MB', () => patch(`{"memo":"${'a'.repeat(10_000_000)}"}`), 413],
        ['10 MB, chunked', () => patch(`{"memo":"${'a'.repeat(10_000_000)}"}`, 'application/json', { chunked: true }), 413],
        ['truncated JSON', () => patch('{"memo":'), 400],
        ['an empty body', () => patch(''), 400],
        ['text/plain', () => patch('{"memo":"x"}', 'text/plain'), 415],
        ['JSON declared as latin1', () => patch('{"memo":"x"}', 'application/json; charset=latin1'), 415],
        ['a body with no content type', () => patch('{"memo":"x"}', null), 415],
        ['memo of the wrong type', () => patch('{"memo":1}'), 400],
        ['memo as an operator object', () => patch('{"memo":{"$gt":""}}'), 400],
        ['memo over its length', () => patch(JSON.stringify({ memo: 'm'.repeat(1001) })), 400],
        ['an unknown status', () => patch('{"status":"teleported"}'), 400],
        ['a memo with a NUL (PostgreSQL text cannot hold one)', () => patch('{"memo":"a\\u0000b"}'), 400],
        [
          'a new order whose memo has a NUL',
          () => get('/orders', { method: 'POST', headers: { ...bearer(), 'content-type': 'application/json' }, body: '{"items":[{"productId":1,"quantity":1}],"memo":"\\u0000"}' }),
          400,
        ],
        [
          'a new order of 101 items',
          () =>
            get('/orders', {
              method: 'POST',
              headers: { ...bearer(), 'content-type': 'application/json' },
              body: JSON.stringify({ items: Array.from({ length: 101 }, (_, i) => ({ productId: i + 1, quantity: 1 })) }),
            }),
          400,
        ],
        ['an id past 2^31', () => get('/orders/99999999999', { headers: bearer() }), 400],
        ['an id that is invalid UTF-8', () => get('/orders/%C3%28', { headers: bearer() }), 400],
        ['an offset past 2^64', () => get('/orders?offset=99999999999999999999', { headers: bearer() }), 400],
      ];

      it.each(cases)('answers %s with a Google-style error', async (_name, request, status) => {
        expectGoogleError(await request(), status);
      });

      it('keeps prototype-polluting keys inert', async () => {
        const reply = await patch('{"__proto__":{"status":"delivered"},"constructor":{"prototype":{"x":1}},"memo":"inert"}');
        expect(reply.status, reply.body).toBe(200);
        expect(parseJson<{ memo: string; status: string }>(reply)).toMatchObject({ memo: 'inert', status: 'pending' });
      });

      it('answers invalid UTF-8 inside a JSON string without a 5xx', async () => {
        const reply = await patch(Buffer.concat([Buffer.from('{"memo":"'), Buffer.from([0xff, 0xfe, 0xc3, 0x28]), Buffer.from('"}')]));
        if (reply.status !== 200) expectGoogleError(reply, 400);
      });

      it('answers any JSON body (property) with the order or a Google-style error', async () => {
        const body = fc.oneof(
          fc.jsonValue({ maxDepth: 6 }),
          fc.record(
            {
              memo: fc.oneof(fc.string({ maxLength: 30 }), fc.string({ unit: 'binary', maxLength: 10 }), fc.jsonValue({ maxDepth: 2 })),
              status: fc.oneof(fc.constantFrom('pending', 'paid', 'cancelled', 'PAID', 'Paid', ''), fc.jsonValue({ maxDepth: 2 })),
            },
            { requiredKeys: [] },
          ),
        );
        const mask = fc.constantFrom('memo', 'status', 'memo,status', 'id,memo', 'items', 'memo,memo');
        await fc.assert(
          fc.asyncProperty(body, mask, async (value, updateMask) => {
            const reply = await get(`/orders/${orderId}?update_mask=${updateMask}`, {
              method: 'PATCH',
              headers: { ...bearer(), 'content-type': 'application/json' },
              body: JSON.stringify(value),
            });
            if (reply.status === 200) expect(parseJson<{ id: number }>(reply).id).toBe(orderId);
            else expectGoogleError(reply);
          }),
          { numRuns: RUNS },
        );
      });
    });

    describe('POST /graphql', () => {
      const graphql = (body: string | Buffer, headers: Record<string, string> = { ...bearer(), 'content-type': 'application/json' }, options: SendOptions = {}) =>
        get('/graphql', { method: 'POST', headers, body, ...options });
      const query = (source: string, extra: Record<string, unknown> = {}) => graphql(JSON.stringify({ query: source, ...extra }));

      const cases: [string, () => Promise<Reply>, number][] = [
        ['a document 300 levels deep', () => query(`{ products ${'{ seller '.repeat(300)}${'}'.repeat(301)}`), 400],
        ['a document 3000 fields wide', () => query(`{ products { ${'id '.repeat(3000)}} }`), 400],
        ['an alias bomb', () => query(`{ ${Array.from({ length: 50 }, (_, i) => `a${i}: products(limit: 200) { id name reviews { rating } }`).join(' ')} }`), 400],
        ['a directive bomb', () => query(`{ products ${'@include(if: true) '.repeat(30)}{ id } }`), 400],
        ['a fragment cycle', () => query('fragment A on Query { ...B } fragment B on Query { ...A } { ...A }'), 400],
        ['an unclosed selection', () => query('{ products { id '), 400],
        ['a stray closing brace', () => query('}'), 400],
        ['an argument without a value', () => query('{ products(limit: ) { id } }'), 400],
        ['an unterminated string', () => query('{ product(id: "1) { id } }'), 400],
        ['a NUL in the document', () => query('{ products { id } }\u0000'), 400],
        ['an empty document', () => query(''), 400],
        ['no query at all', () => graphql('{}', { ...bearer(), 'content-type': 'application/json', accept: 'application/graphql-response+json' }), 400],
        ['a query that is a number', () => graphql('{"query":42}'), 400],
        ['variables that are a string', () => query('query($l: Int) { products(limit: $l) { id } }', { variables: 'x' }), 400],
        ['an Int past 32 bits', () => query('{ products(limit: 99999999999) { id } }'), 400],
        ['an unknown operation name', () => query('query A { products { id } }', { operationName: 'B' }), 400],
        ['two anonymous operations', () => query('{ products { id } } { orders { id } }'), 400],
        ['a body that is not JSON', () => graphql('{not json'), 400],
        ['a batch', () => graphql('[{"query":"{ products { id } }"}]'), 400],
        [
          'a 10 MB body announced by Content-Length (answered before the body is read)',
          () => announceBody(`${server.url}/graphql`, { method: 'POST', headers: { ...bearer(), 'content-type': 'application/json' }, declaredLength: 10_000_000, prefix: '{"query":"#aaaa' }),
          413,
        ],
        ['bytes that are not UTF-8', () => graphql(Buffer.concat([Buffer.from('{"query":"{ products { id } }'), Buffer.from([0xff, 0xc3, 0x28]), Buffer.from('"}')])), 400],
        ['text/plain', () => graphql('{ products { id } }', { ...bearer(), 'content-type': 'text/plain' }), 415],
        ['no token', () => graphql(JSON.stringify({ query: '{ products { id } }' }), { 'content-type': 'application/json' }), 401],
        ['a mutation over GET', () => get(`/graphql?query=${encodeURIComponent('mutation { updateOrder(id: 1, input: { memo: "x" }) { id } }')}`, { headers: bearer() }), 405],
        ['GET variables that are not JSON', () => get(`/graphql?query=${encodeURIComponent('{ products { id } }')}&variables=%7Bbad`, { headers: bearer() }), 400],
        ['GET extensions that are not JSON, without a token', () => get(`/graphql?query=${encodeURIComponent('{ products { id } }')}&extensions=%5B1`), 400],
        ['form-encoded variables that are not JSON', () => graphql(`query=${encodeURIComponent('{ products { id } }')}&variables=%7Bbad`, { ...bearer(), 'content-type': 'application/x-www-form-urlencoded' }), 400],
        ['a subscription', () => query('subscription { products { id } }'), 400],
        ['a costed variable nested 20,000 deep', () => graphql(`{"query":"query ($l: Int) { products(limit: $l) { id } }","variables":{"l":${'['.repeat(20_000)}${']'.repeat(20_000)}}}`), 400],
      ];

      it.each(cases)('answers %s with GraphQL errors', async (_name, request, status) => {
        expectGraphQLErrors(await request(), status);
      });

      it.each([false, true])('answers a 10 MB body sent in full (chunked: %s) with 413, or drops the connection while it is sent', async (chunked) => {
        // The server answers 413 at once (a declared length) or at the limit (chunked). Node then
        // closes a connection whose request body was not read to the end, so a client still
        // uploading may see EPIPE/ECONNRESET instead of the answer; either way nothing else happens.
        let reply: Reply;
        try {
          reply = await graphql(JSON.stringify({ query: `#${'a'.repeat(10_000_000)}\n{ products { id } }` }), undefined, { chunked });
        } catch (error) {
          expect(['EPIPE', 'ECONNRESET']).toContain((error as NodeJS.ErrnoException).code);
          return;
        }
        expectGraphQLErrors(reply, 413);
      });

      it('answers no query at all, asked for application/json, with 400 as any request refused before execution', async () => {
        const reply = await graphql('{}');
        expect(reply.status).toBe(400);
        expect(parseJson<{ errors: { extensions: Record<string, unknown> }[] }>(reply).errors[0]!.extensions).toEqual({
          code: 'INVALID_ARGUMENT',
          reason: 'INVALID_PARAMETER',
          field: 'query',
          http: { status: 400 },
        });
      });

      it('answers an Accept it cannot satisfy with 406 and a GraphQL error', async () => {
        const reply = await graphql(JSON.stringify({ query: '{ products { id } }' }), { ...bearer(), 'content-type': 'application/json', accept: 'text/html' });
        expectGraphQLErrors(reply, 406);
        expect(parseJson<{ errors: { extensions: Record<string, unknown> }[] }>(reply).errors[0]!.extensions).toEqual({
          code: 'INVALID_ARGUMENT',
          reason: 'NOT_ACCEPTABLE',
          http: { status: 406 },
        });
      });

      it('answers a memo with a NUL as a client error, not an internal one', async () => {
        const reply = await query('mutation($m: String) { updateOrder(id: ' + orderId + ', input: { memo: $m }) { id } }', { variables: { m: 'a\u0000b' } });
        expectGraphQLAnswer(reply);
        expect(parseJson<{ errors?: { extensions: { code: string } }[] }>(reply).errors?.[0]?.extensions.code).toBe('INVALID_ARGUMENT');
      });

      const words = [
        '{', '}', '(', ')', '[', ']', ':', '...', '$v', '=', '!', '|', '&', '@include(if: true)', '@skip(if: $v)',
        'query', 'mutation', 'subscription', 'fragment', 'on', 'Query', 'Product',
        'products', 'product', 'orders', 'order', 'createOrder', 'updateOrder', 'id', 'name', 'seller', 'reviews', 'rating', 'items', 'memo', 'status',
        '__typename', '__schema', 'types', 'limit: 200', 'offset: -1', 'id: 1', 'input: {}', 'a:', '"str"', '"""block"""', '1.5e3', 'null', 'true', '#c\n', ',',
      ];
      const document = fc.oneof(
        fc.array(fc.oneof(fc.constantFrom(...words), fc.string({ maxLength: 6 })), { maxLength: 60 }).map((parts) => parts.join(' ')),
        // Structurally sound selections of real and unreal fields, aliases and arguments, up to 12 deep.
        fc
          .letrec<{ selection: string }>((tie) => ({
            selection: fc
              .array(
                fc.tuple(
                  fc.option(fc.constantFrom('a', 'b', 'c', 'd'), { nil: undefined }),
                  fc.constantFrom('products', 'product', 'orders', 'id', 'name', 'seller', 'reviews', 'items', 'memo', 'nope', '__typename'),
                  fc.option(fc.constantFrom('(limit: 200)', '(id: 1)', '(limit: 0)', '(offset: 2147483647)', '(x: "y")'), { nil: undefined }),
                  fc.option(tie('selection'), { nil: undefined, depthSize: 'small' }),
                ),
                { minLength: 1, maxLength: 4 },
              )
              .map((fields) => `{ ${fields.map(([alias, name, args, sub]) => `${alias ? `${alias}: ` : ''}${name}${args ?? ''} ${sub ?? ''}`).join(' ')} }`),
          }))
          .selection.chain((selection) => fc.constantFrom(selection, `query Q ${selection}`)),
      );

      it('answers any document (property) with data or GraphQL errors, never a 5xx or a masked internal error', async () => {
        await fc.assert(
          fc.asyncProperty(document, fc.option(fc.jsonValue({ maxDepth: 2 }), { nil: undefined }), async (source, variables) => {
            expectGraphQLAnswer(await query(source, variables === undefined ? {} : { variables: { v: variables } }));
          }),
          { numRuns: RUNS },
        );
      });
    });

    describe('access tokens outside the Authorization header (RFC 9700 §4.3.2)', () => {
      it('refuses a valid token in the query string of a REST request', async () => {
        const reply = await get(`/products?fields=id&access_token=${token}`);
        expectGoogleError(reply, 401);
        expect(reply.headers['www-authenticate']).toMatch(/^Bearer /);
      });

      it('refuses a valid token in the query string of a GraphQL request', async () => {
        expectGraphQLErrors(await get(`/graphql?query=${encodeURIComponent('{ products { id } }')}&access_token=${token}`), 401);
      });
    });

    describe('the HTTP layer below the app', () => {
      const exchanges: [string, string | Buffer, number][] = [
        ['a garbage request line', 'GARBAGE\r\n\r\n', 400],
        ['raw non-UTF-8 bytes in the request target', Buffer.concat([Buffer.from('GET /authorize?client_id='), Buffer.from([0xff, 0xfe]), Buffer.from(' HTTP/1.1\r\nHost: x\r\n\r\n')]), 400],
        ['a NUL in a header value', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\n\r\n', 400],
        ['a 100 KB header', `GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: ${'a'.repeat(100_000)}\r\n\r\n`, 431],
        ['both Content-Length and Transfer-Encoding', 'POST /token HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 400],
        ['a broken chunk size', 'POST /token HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Type: application/x-www-form-urlencoded\r\n\r\nZZ\r\nabc\r\n0\r\n\r\n', 400],
      ];

      it.each(exchanges)('answers %s with a 4xx and closes', async (_name, bytes, status) => {
        if (status === 431) {
          await expectHeaderOverflow(async () => {
            const response = await rawExchange(server.port, bytes);
            return { status: rawStatus(response), body: response.split('\r\n\r\n')[1] ?? '' };
          });
          return;
        }
        expect(rawStatus(await rawExchange(server.port, bytes))).toBe(status);
      });
    });

    it('answered everything above without logging a single error, and is still up', async () => {
      expect(server.child.exitCode).toBeNull();
      const errors = server
        .stdout()
        .split('\n')
        .filter((line) => /"level":(50|60)/.test(line))
        .map((line) => line.slice(0, 400));
      expect(errors).toEqual([]);
      // stderr carries the start banner and nothing else.
      expect(server.stderr().replace(/^Fieldgate is listening on .*\n/, '')).toBe('');
    });
  });
}
