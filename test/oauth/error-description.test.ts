/**
 * error_description never reflects request input (RFC 6749 §4.1.2.1, §5.2: only %x20-21 /
 * %x23-5B / %x5D-7E). Hostile values — a quote, a backslash, non-ASCII, markup — go into every
 * parameter of every endpoint; each description stays in the charset and never contains them.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { InvalidRequest, safeDescription } from '../../src/oauth/errors.js';
import { describeEachDatabase } from '../support/runtime.js';
import { authorizeParams, authorizePath, basic, buildClient, buildUser, obtainTokens, type TestClient, type TestUser } from '../support/oauth.js';

const HOSTILE = ['say "hi"', 'back\\slash', 'non-ASCII é☃', '<script>alert(1)</script>', 'new\nline'];
const CHARSET = /^[\x20\x21\x23-\x5B\x5D-\x7E]*$/;

function expectSafe(description: string | null | undefined, hostile: string): void {
  expect(description).toEqual(expect.any(String));
  expect(description).toMatch(CHARSET);
  expect(description).not.toContain(hostile);
  expect(description).not.toContain('<script');
}

describe('the error_description guard', () => {
  it('replaces every character outside the RFC charset', () => {
    for (const hostile of HOSTILE) expect(new InvalidRequest(`bad: ${hostile}`).toJSON().error_description).toMatch(CHARSET);
    expect(safeDescription('plain text, [ok] ~!')).toBe('plain text, [ok] ~!');
  });
});

describeEachDatabase('error_description never echoes input', (context) => {
  let client: TestClient;
  let user: TestUser;
  let tokens: { access_token: string; refresh_token: string };

  beforeAll(async () => {
    client = await buildClient(context().runtime, { scope: 'products:read orders:read' });
    user = await buildUser(context().runtime);
    tokens = await obtainTokens(context().app, context().runtime, client, user);
  });

  describe.each(HOSTILE)('with %j', (hostile) => {
    it.each(['response_type', 'scope', 'code_challenge', 'code_challenge_method'])('in %s at /authorize (redirect)', async (name) => {
      const res = await request(context().app).get(authorizePath(authorizeParams(client, { [name]: hostile }))).redirects(0);
      expect(res.status).toBe(302);
      const location = new URL(res.headers.location!);
      expect(location.searchParams.get('error')).toBeTruthy();
      expectSafe(location.searchParams.get('error_description'), hostile);
    });

    it.each(['client_id', 'redirect_uri'])('in %s at /authorize (our error page)', async (name) => {
      const res = await request(context().app).get(authorizePath(authorizeParams(client, { [name]: hostile }))).redirects(0);
      expect(res.status).toBe(400);
      expect(res.text).not.toContain(hostile);
      expect(res.text).not.toContain('<script>alert');
    });

    it.each([
      ['grant_type', { grant_type: 'HOSTILE' }],
      ['code', { grant_type: 'authorization_code', code: 'HOSTILE', redirect_uri: 'https://x.example/cb' }],
      ['redirect_uri', { grant_type: 'authorization_code', code: 'abc', redirect_uri: 'HOSTILE' }],
      ['code_verifier', { grant_type: 'authorization_code', code: 'abc', code_verifier: 'HOSTILE' }],
      ['refresh_token', { grant_type: 'refresh_token', refresh_token: 'HOSTILE' }],
      ['scope', { grant_type: 'refresh_token', refresh_token: 'REFRESH', scope: 'HOSTILE' }],
      ['scope (beyond the grant)', { grant_type: 'refresh_token', refresh_token: 'REFRESH', scope: 'orders:read HOSTILE' }],
    ])('in %s at /token', async (_name, fields) => {
      const body = Object.fromEntries(
        Object.entries(fields).map(([key, value]) => [key, value.replace('HOSTILE', hostile).replace('REFRESH', tokens.refresh_token)]),
      );
      const res = await request(context().app).post('/token').set('Authorization', basic(client.id, client.secret!)).type('form').send(body);
      expect(res.status).toBeGreaterThanOrEqual(400);
      expectSafe(res.body.error_description, hostile);
    });

    it.each(['/token', '/revoke', '/introspect'])('in the client credentials at %s', async (path) => {
      const fields = { grant_type: 'authorization_code', code: 'abc', token: 'abc' };
      for (const res of [
        await request(context().app).post(path).set('Authorization', basic(hostile, hostile)).type('form').send(fields),
        await request(context().app).post(path).type('form').send({ ...fields, client_id: hostile, client_secret: hostile }),
        await request(context().app).post(path).type('form').send({ ...fields, client_id: hostile }),
      ]) {
        expect(res.body.error).toBe('invalid_client');
        expectSafe(res.body.error_description, hostile);
      }
    });

    it.each(['/revoke', '/introspect'])('in token and token_type_hint at %s', async (path) => {
      for (const fields of [{ token: hostile }, { token: tokens.refresh_token, token_type_hint: hostile }, { token: [hostile, hostile] }]) {
        const res = await request(context().app).post(path).set('Authorization', basic(client.id, client.secret!)).type('form').send(fields);
        if (res.status >= 400) expectSafe(res.body.error_description, hostile);
        else expect(res.text).not.toContain(hostile);
      }
    });

    it('in the Content-Type charset at /token', async () => {
      const res = await request(context().app)
        .post('/token')
        .set('Content-Type', `application/x-www-form-urlencoded; charset=${encodeURIComponent(hostile)}`)
        .send('grant_type=refresh_token');
      expect(res.status).toBe(400);
      expectSafe(res.body.error_description, hostile);
    });
  });
});
