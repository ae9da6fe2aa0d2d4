/**
 * Bad input always gets a protocol-format answer, never a 500 or a stack trace: random
 * queries at /authorize, random form bodies at the pages, /revoke and /introspect.
 */
import { beforeAll, expect, it } from 'vitest';
import request from 'supertest';
import fc from 'fast-check';
import { describeEachDatabase } from '../support/runtime.js';
import { basic, buildClient, type TestClient } from '../support/oauth.js';

const NAMES = ['response_type', 'client_id', 'redirect_uri', 'scope', 'state', 'code_challenge', 'code_challenge_method', 'token', 'token_type_hint', 'csrf_token', 'authorization_request', 'username', 'password', 'decision', 'x'];

function pairs(values: fc.Arbitrary<string>) {
  return fc.array(fc.tuple(fc.constantFrom(...NAMES), values), { maxLength: 9 });
}

function encode(list: [string, string][]): string {
  // Sometimes leave a raw '%' so that malformed escapes arrive too.
  return list.map(([n, v]) => `${n}=${encodeURIComponent(v).replace(/%25/g, '%')}`).join('&');
}

describeEachDatabase('robustness', (context) => {
  let client: TestClient;

  beforeAll(async () => {
    client = await buildClient(context().runtime, { scope: 'products:read' });
  });

  const values = () =>
    fc.oneof(
      fc.constantFrom('code', 'token', 'S256', 'plain', 'products:read', 'orders:write', 'allow', 'deny', '', '%', '%zz', '\u0000', 'é'),
      fc.constant(client.id),
      fc.constant(client.redirectUri),
      fc.string({ maxLength: 50 }),
    );

  it('answers NUL characters (which PostgreSQL text cannot hold) as bad input, not 500', async () => {
    const { app } = context();
    const authorize = await request(app).get('/authorize?response_type=code&client_id=%00').redirects(0);
    expect(authorize.status).toBe(400);
    const withState = await request(app)
      .get(`/authorize?response_type=code&client_id=${client.id}&state=a%00b&scope=products:read`)
      .redirects(0);
    expect(withState.status).toBe(302);
    expect(new URL(withState.headers.location!).searchParams.get('error')).toBe('invalid_request');
    const token = await request(app).post('/token').type('form').send('grant_type=refresh_token&refresh_token=x&client_id=%00');
    expect(token.status).toBe(400);
    expect(token.body.error).toBe('invalid_request');
    const basicNul = await request(app)
      .post('/token')
      .set('Authorization', `Basic ${Buffer.from('%00:x').toString('base64')}`)
      .type('form')
      .send('grant_type=refresh_token&refresh_token=x');
    expect(basicNul.status).toBe(401);
    expect(basicNul.body.error).toBe('invalid_client');
  });

  it('answers percent-encoded bytes that are not UTF-8 as bad input, not as U+FFFD; ignores them in unknown parameters', async () => {
    const { app } = context();
    const authorize = (extra: string) =>
      request(app)
        .get(`/authorize?response_type=code&client_id=${client.id}&scope=products:read&${extra}`)
        .redirects(0);
    for (const state of ['%FF', '%C3%28', 'ok%E2%82']) {
      const res = await authorize(`state=${state}`);
      expect(res.status, state).toBe(302);
      const location = new URL(res.headers.location!);
      expect(location.searchParams.get('error'), state).toBe('invalid_request');
      expect(location.searchParams.get('error_description'), state).toBe('the state parameter is not valid percent-encoded UTF-8');
    }
    // Well-formed: a two-byte character, a malformed escape left as text, and a bad byte in a parameter nobody reads.
    for (const extra of ['state=%C3%A9', 'state=%zz', 'state=a&unknown=%FF']) {
      const res = await authorize(extra);
      expect(res.status, extra).toBe(200);
      expect(res.headers['content-type'], extra).toMatch(/^text\/html/);
    }
    const token = await request(app).post('/token').type('form').send(`grant_type=%C3%28&client_id=${client.id}`);
    expect(token.status).toBe(400);
    expect(token.body).toEqual({ error: 'invalid_request', error_description: 'the grant_type parameter is not valid percent-encoded UTF-8' });
  });

  it('GET /authorize answers any query with a page (200/400) or a redirect (302), never 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(pairs(values()), async (list) => {
        const res = await request(context().app).get(`/authorize?${encode(list)}`).redirects(0);
        expect([200, 302, 400]).toContain(res.status);
        if (res.status === 302) expect(res.headers.location!.startsWith(`${client.redirectUri}?`)).toBe(true);
        else expect(res.headers['content-type']).toMatch(/^text\/html/);
      }),
      { numRuns: 80 },
    );
  });

  it.each(['/authorize/login', '/authorize/consent'])('POST %s answers any form with a page or a redirect, never 5xx', async (path) => {
    await fc.assert(
      fc.asyncProperty(pairs(values()), async (list) => {
        const res = await request(context().app).post(path).type('form').send(encode(list)).redirects(0);
        expect(res.status).toBeLessThan(500);
        expect(res.text).not.toMatch(/\bat .+:\d+:\d+/);
      }),
      { numRuns: 40 },
    );
  });

  it.each(['/revoke', '/introspect'])('POST %s answers any form in OAuth JSON, never 5xx', async (path) => {
    await fc.assert(
      fc.asyncProperty(pairs(values()), fc.boolean(), async (list, authenticated) => {
        const req = request(context().app).post(path).type('form');
        if (authenticated) req.set('Authorization', basic(client.id, client.secret!));
        const res = await req.send(encode(list));
        expect(res.status).toBeLessThan(500);
        expect(res.headers['cache-control']).toBe('no-store');
        if (res.status !== 200) expect(res.body.error).toMatch(/^invalid_/);
      }),
      { numRuns: 40 },
    );
  });
});
