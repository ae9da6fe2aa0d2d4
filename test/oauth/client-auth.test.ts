/**
 * Client authentication at the token endpoint: Basic with form-urlencoded halves,
 * body credentials, public clients with client_id only, two methods at once, and the 401/400
 * split of invalid_client.
 */
import { beforeAll, expect, it } from 'vitest';
import request from 'supertest';
import { eq } from 'drizzle-orm';
import { clients } from '../../src/db/schema.js';
import { describeEachDatabase } from '../support/runtime.js';
import { basic, buildClient, buildUser, issueCode, securityEvents, type TestClient, type TestUser } from '../support/oauth.js';

describeEachDatabase('client authentication', (context) => {
  let client: TestClient;
  let publicClient: TestClient;
  let user: TestUser;

  beforeAll(async () => {
    const { runtime } = context();
    client = await buildClient(runtime);
    publicClient = await buildClient(runtime, { isPublic: true });
    user = await buildUser(runtime);
  });

  async function codeRequest(target: TestClient) {
    const { code, verifier } = await issueCode(context().runtime, target, user);
    return { grant_type: 'authorization_code', code, redirect_uri: target.redirectUri, code_verifier: verifier };
  }

  const post = () => request(context().app).post('/token').type('form');

  it('accepts a secret rotated on another instance at once, though this one has the client cached', async () => {
    const { runtime } = context();
    const rotated = await buildClient(runtime);
    // This instance reads the client, and caches it, with its first secret.
    expect((await post().set('Authorization', basic(rotated.id, rotated.secret!)).send(await codeRequest(rotated))).status).toBe(200);
    // `fieldgate client rotate-secret` elsewhere: the database changes, this instance's cache does not hear of it.
    const { secret } = (await runtime.clients.rotateSecret(rotated.id, 0))!;
    const res = await post().set('Authorization', basic(rotated.id, secret)).send(await codeRequest(rotated));
    expect(res.status, res.text).toBe(200);
    // And the first secret, with no overlap, stops once the client is read again.
    const old = await post().set('Authorization', basic(rotated.id, rotated.secret!)).send(await codeRequest(rotated));
    expect(old.status).toBe(401);
  });

  it('accepts client_secret_basic', async () => {
    const res = await post().set('Authorization', basic(client.id, client.secret!)).send(await codeRequest(client));
    expect(res.status).toBe(200);
  });

  it('accepts client_secret_basic with a matching client_id in the body too', async () => {
    const res = await post()
      .set('Authorization', basic(client.id, client.secret!))
      .send({ ...(await codeRequest(client)), client_id: client.id });
    expect(res.status).toBe(200);
  });

  it('accepts client_secret_post', async () => {
    const res = await post().send({ ...(await codeRequest(client)), client_id: client.id, client_secret: client.secret! });
    expect(res.status).toBe(200);
  });

  it('decodes both halves of the Basic credentials as application/x-www-form-urlencoded (RFC 6749 §2.3.1)', async () => {
    const { runtime } = context();
    const odd = await buildClient(runtime);
    const secret = 'p@ss: wörd+/=%';
    await runtime.db.update(clients).set({ secretHash: runtime.clients.hashSecret(secret) }).where(eq(clients.id, odd.id));
    const res = await post().set('Authorization', basic(odd.id, secret)).send(await codeRequest(odd));
    expect(res.status).toBe(200);
    // Without the urlencoding, the raw secret is wrong credentials.
    const raw = `Basic ${Buffer.from(`${odd.id}:${secret}`).toString('base64')}`;
    const refused = await post().set('Authorization', raw).send(await codeRequest(odd));
    expect(refused.status).toBe(401);
  });

  it('accepts a public client with client_id alone (with PKCE)', async () => {
    const res = await post().send({ ...(await codeRequest(publicClient)), client_id: publicClient.id });
    expect(res.status).toBe(200);
  });

  it('refuses two authentication methods at once with invalid_request', async () => {
    const res = await post()
      .set('Authorization', basic(client.id, client.secret!))
      .send({ ...(await codeRequest(client)), client_secret: client.secret! });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
  });

  it('refuses a body client_id that differs from the Basic one with invalid_request', async () => {
    const res = await post()
      .set('Authorization', basic(client.id, client.secret!))
      .send({ ...(await codeRequest(client)), client_id: publicClient.id });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
  });

  it('answers a wrong secret in the Authorization header with 401 invalid_client and WWW-Authenticate: Basic', async () => {
    const res = await post().set('Authorization', basic(client.id, 'wrong')).send(await codeRequest(client));
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('invalid_client');
    expect(res.headers['www-authenticate']).toMatch(/^Basic /);
  });

  it('answers a wrong secret in the body with 400 invalid_client and no challenge', async () => {
    const res = await post().send({ ...(await codeRequest(client)), client_id: client.id, client_secret: 'wrong' });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_client');
    expect(res.headers['www-authenticate']).toBeUndefined();
  });

  it('answers an unknown client like a wrong secret', async () => {
    const body = await codeRequest(client);
    const unknown = await post().set('Authorization', basic('no-such-client', 'x')).send(body);
    const wrong = await post().set('Authorization', basic(client.id, 'x')).send(body);
    expect(unknown.status).toBe(401);
    expect(unknown.body).toEqual(wrong.body);
  });

  it('answers every failure the same whatever the client id (no enumeration)', async () => {
    const body = await codeRequest(client);
    const cases = {
      basicUnknown: post().set('Authorization', basic('no-such-client', 'x')).send(body),
      basicWrongSecret: post().set('Authorization', basic(client.id, 'x')).send(body),
      basicSecretForPublic: post().set('Authorization', basic(publicClient.id, 'x')).send(body),
      postUnknown: post().send({ ...body, client_id: 'no-such-client', client_secret: 'x' }),
      postWrongSecret: post().send({ ...body, client_id: client.id, client_secret: 'x' }),
      postSecretForPublic: post().send({ ...body, client_id: publicClient.id, client_secret: 'x' }),
      idOnlyUnknown: post().send({ ...body, client_id: 'no-such-client' }),
      idOnlyConfidential: post().send({ ...body, client_id: client.id }),
    };
    const results = Object.fromEntries(await Promise.all(Object.entries(cases).map(async ([name, res]) => [name, await res] as const)));
    const expected = { error: 'invalid_client', error_description: 'client authentication failed' };
    for (const [name, res] of Object.entries(results)) {
      expect({ name, body: res.body }).toEqual({ name, body: expected });
      expect({ name, status: res.status }).toEqual({ name, status: name.startsWith('basic') ? 401 : 400 });
    }
  });

  it.each([
    ['another scheme', 'Bearer abc'],
    ['bad base64', 'Basic %%%'],
    ['no colon', `Basic ${Buffer.from('just-an-id').toString('base64')}`],
    ['bad percent-encoding', `Basic ${Buffer.from('%E0%A4%A:x').toString('base64')}`],
    ['an empty client id', `Basic ${Buffer.from(':secret').toString('base64')}`],
  ])('answers a malformed Authorization header (%s) with 401 invalid_client', async (_name, header) => {
    const res = await post().set('Authorization', header).send(await codeRequest(client));
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('invalid_client');
    expect(res.headers['www-authenticate']).toMatch(/^Basic /);
  });

  it('refuses a confidential client that sends only its client_id', async () => {
    const res = await post().send({ ...(await codeRequest(client)), client_id: client.id });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_client');
  });

  it('refuses a request with no client identification at all', async () => {
    const res = await post().send(await codeRequest(client));
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_client');
  });

  it('refuses a secret presented for a public client', async () => {
    const res = await post().set('Authorization', basic(publicClient.id, 'anything')).send(await codeRequest(publicClient));
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('invalid_client');
  });

  it('refuses a repeated client_id with invalid_request', async () => {
    const body = new URLSearchParams(await codeRequest(publicClient));
    body.append('client_id', publicClient.id);
    body.append('client_id', publicClient.id);
    const res = await post().send(body.toString());
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
  });

  it('logs failed client authentication without the presented secret', async () => {
    await post().set('Authorization', basic(client.id, 'not-the-secret-xyz')).send(await codeRequest(client));
    const event = securityEvents(context().logs.lines, 'client_authentication_failed').at(-1);
    expect(event).toMatchObject({ clientId: client.id, reason: 'invalid_client' });
    expect(context().logs.text).not.toContain('not-the-secret-xyz');
    expect(context().logs.text).not.toContain(client.secret!);
  });

  it('costs microseconds, not a password KDF: 200 wrong-secret attempts finish quickly', async () => {
    const body = await codeRequest(client);
    const header = basic(client.id, 'wrong');
    const { clients: store } = context().runtime;
    const found = (await store.find(client.id))!;
    const started = performance.now();
    for (let i = 0; i < 2_000; i++) store.verifySecret(found, `wrong-${i}`);
    const perCheckMs = (performance.now() - started) / 2_000;
    expect(perCheckMs).toBeLessThan(0.5); // scrypt would be tens of milliseconds
    expect((await post().set('Authorization', header).send(body)).status).toBe(401);
  });
});
