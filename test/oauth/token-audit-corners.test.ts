/**
 * An outside audit of /token, /revoke (RFC 7009) and /introspect (RFC 7662) as a hostile client and a busy
 * multi-instance deployment would use them: client authentication corners (RFC 6749 §2.3, RFC 7523), parameter
 * corners, concurrency on one and on two instances of one PostgreSQL database. Every refusal is RFC 6749 §5.2 JSON.
 */
import { beforeAll, expect, it } from 'vitest';
import request from 'supertest';
import type { Express } from 'express';
import { eq } from 'drizzle-orm';
import { randomUUID } from 'node:crypto';
import { generateKeyPair, SignJWT, base64url } from 'jose';
import { createApp } from '../../src/app.js';
import { createLogger } from '../../src/logger.js';
import { openRuntime, type Runtime } from '../../src/runtime.js';
import { clients } from '../../src/db/schema.js';
import { CLIENT_ASSERTION_TYPE } from '../../src/oauth/client-assertion.js';
import { describeEachDatabase, TEST_ISSUER, type TestRuntime } from '../support/runtime.js';
import { assertion, signingKey, type SigningKey } from '../support/client-assertions.js';
import { basic, buildClient, buildUser, issueCode, obtainTokens, tokenRequest, type TestClient, type TestUser } from '../support/oauth.js';

/** RFC 6749 §5.2: an error object with a registered code, never a 5xx. */
function expectOAuthError(res: request.Response, status: number, error: string): void {
  expect(res.status, res.text).toBe(status);
  expect(res.headers['content-type']).toBe('application/json;charset=UTF-8');
  expect(res.headers['cache-control']).toBe('no-store');
  expect(res.body.error).toBe(error);
}

describeEachDatabase('token, revocation and introspection audit', (context) => {
  let client: TestClient;
  let other: TestClient;
  let publicClient: TestClient;
  let user: TestUser;
  let jwtClient: TestClient;
  let jwtKey: SigningKey;
  let service: TestClient;

  beforeAll(async () => {
    const { runtime } = context();
    jwtKey = await signingKey('ES256');
    [client, other, publicClient, user, jwtClient] = await Promise.all([
      buildClient(runtime),
      buildClient(runtime),
      buildClient(runtime, { isPublic: true }),
      buildUser(runtime),
      buildClient(runtime, { tokenEndpointAuthMethod: 'private_key_jwt', jwks: { keys: [jwtKey.publicJwk] } }),
    ]);
    service = await buildClient(runtime, { redirectUris: [], grantTypes: ['client_credentials'] });
  });

  const app = () => context().app;
  const revoke = (token: string, as: TestClient = client, extra: Record<string, string> = {}) =>
    request(app()).post('/revoke').set('Authorization', basic(as.id, as.secret!)).type('form').send({ token, ...extra });
  const introspect = (token: string, as: TestClient = client, target: Express = app()) =>
    request(target).post('/introspect').set('Authorization', basic(as.id, as.secret!)).type('form').send({ token });
  const refresh = (refreshToken: string, as: TestClient = client, target: Express = app(), extra: Record<string, string> = {}) =>
    tokenRequest(target, { grant_type: 'refresh_token', refresh_token: refreshToken, ...extra }, as);

  // RFC 6749 §2.3.1: both halves of Basic credentials are form-encoded first.
  it('accepts client_secret_basic whose id and secret hold "+", "%", ":" and spaces, form-encoded', async () => {
    const { runtime } = context();
    const id = `svc:a+b%c d${randomUUID().slice(0, 6)}`;
    const secret = 'p+a%s:s w/rd=';
    await buildClient(runtime, { id, redirectUris: [], grantTypes: ['client_credentials'] });
    await runtime.db.update(clients).set({ secretHash: runtime.clients.hashSecret(secret) }).where(eq(clients.id, id));
    const ok = await request(app()).post('/token').set('Authorization', basic(id, secret)).type('form').send({ grant_type: 'client_credentials' });
    expect(ok.status, ok.text).toBe(200);
    // The raw secret, not form-encoded: "+" reads as a space, so it is another secret.
    const raw = `Basic ${Buffer.from(`${encodeURIComponent(id)}:${secret}`).toString('base64')}`;
    const refused = await request(app()).post('/token').set('Authorization', raw).type('form').send({ grant_type: 'client_credentials' });
    expectOAuthError(refused, 401, 'invalid_client');
    expect(refused.headers['www-authenticate']).toMatch(/^Basic /);
  });

  it('refuses two client authentication methods at once with invalid_request', async () => {
    const both = await request(app())
      .post('/token')
      .set('Authorization', basic(client.id, client.secret!))
      .type('form')
      .send({ grant_type: 'client_credentials', client_secret: client.secret! });
    expectOAuthError(both, 400, 'invalid_request');
    const withAssertion = await request(app())
      .post('/token')
      .set('Authorization', basic(client.id, client.secret!))
      .type('form')
      .send({ grant_type: 'client_credentials', client_assertion_type: CLIENT_ASSERTION_TYPE, client_assertion: await assertion(jwtClient.id, jwtKey) });
    expectOAuthError(withAssertion, 400, 'invalid_request');
  });

  it('answers a public client sending a secret, and a confidential one sending none, with invalid_client', async () => {
    const { code, verifier } = await issueCode(context().runtime, publicClient, user);
    const withSecret = await request(app())
      .post('/token')
      .type('form')
      .send({ grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: publicClient.redirectUri, client_id: publicClient.id, client_secret: 'guess' });
    expectOAuthError(withSecret, 400, 'invalid_client');
    const withoutSecret = await request(app()).post('/token').type('form').send({ grant_type: 'client_credentials', client_id: client.id });
    expectOAuthError(withoutSecret, 400, 'invalid_client');
    const emptyBasic = await request(app()).post('/token').set('Authorization', basic(client.id, '')).type('form').send({ grant_type: 'client_credentials' });
    expectOAuthError(emptyBasic, 401, 'invalid_client');
    expect(emptyBasic.headers['www-authenticate']).toMatch(/^Basic /);
  });

  it('refuses private_key_jwt assertions that are replayed, expired, for another audience, iss≠sub, alg none or HS256 with the public key', async () => {
    const send = (clientAssertion: string) =>
      request(app()).post('/token').type('form').send({ grant_type: 'client_credentials', client_assertion_type: CLIENT_ASSERTION_TYPE, client_assertion: clientAssertion });
    const good = await assertion(jwtClient.id, jwtKey);
    // The client's grant types: client_credentials is not among them, so a valid assertion gets unauthorized_client.
    expect((await send(good)).body.error).not.toBe('invalid_client');
    expectOAuthError(await send(good), 400, 'invalid_client');
    const now = Math.floor(Date.now() / 1000);
    expectOAuthError(await send(await assertion(jwtClient.id, jwtKey, { exp: now - 120, iat: now - 180 })), 400, 'invalid_client');
    expectOAuthError(await send(await assertion(jwtClient.id, jwtKey, { aud: 'https://elsewhere.example' })), 400, 'invalid_client');
    expectOAuthError(await send(await assertion(jwtClient.id, jwtKey, { iss: other.id })), 400, 'invalid_client');
    const claims = { iss: jwtClient.id, sub: jwtClient.id, aud: TEST_ISSUER, jti: randomUUID(), exp: now + 60, iat: now };
    const unsigned = `${base64url.encode(JSON.stringify({ alg: 'none' }))}.${base64url.encode(JSON.stringify(claims))}.`;
    expectOAuthError(await send(unsigned), 400, 'invalid_client');
    const hmacKey = new TextEncoder().encode(JSON.stringify(jwtKey.publicJwk));
    const hs256 = await new SignJWT({ jti: randomUUID() }).setProtectedHeader({ alg: 'HS256', kid: jwtKey.publicJwk.kid! }).setIssuer(jwtClient.id).setSubject(jwtClient.id).setAudience(TEST_ISSUER).setExpirationTime(now + 60).sign(hmacKey);
    expectOAuthError(await send(hs256), 400, 'invalid_client');
    // A private_key_jwt client cannot fall back to client_id alone, and a secret client cannot send an assertion.
    expectOAuthError(await request(app()).post('/token').type('form').send({ grant_type: 'client_credentials', client_id: jwtClient.id }), 400, 'invalid_client');
    const { privateKey } = await generateKeyPair('ES256');
    const foreign = await new SignJWT({ jti: randomUUID() }).setProtectedHeader({ alg: 'ES256' }).setIssuer(client.id).setSubject(client.id).setAudience(TEST_ISSUER).setExpirationTime(now + 60).sign(privateKey);
    expectOAuthError(await send(foreign), 400, 'invalid_client');
  });

  it('refuses repeated parameters, unknown grant types, parameters in the query, other content types and huge bodies', async () => {
    const { code, verifier } = await issueCode(context().runtime, client, user);
    const repeated = await request(app())
      .post('/token')
      .set('Authorization', basic(client.id, client.secret!))
      .type('form')
      .send(`grant_type=authorization_code&code=${code}&code=${code}&code_verifier=${verifier}`);
    expectOAuthError(repeated, 400, 'invalid_request');
    const repeatedGrant = await request(app()).post('/token').set('Authorization', basic(client.id, client.secret!)).type('form').send('grant_type=client_credentials&grant_type=client_credentials');
    expectOAuthError(repeatedGrant, 400, 'invalid_request');
    // The code is still usable: a refused request did not consume it.
    const redeemed = await tokenRequest(app(), { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: client.redirectUri }, client);
    expect(redeemed.status, redeemed.text).toBe(200);
    expectOAuthError(await tokenRequest(app(), { grant_type: 'urn:example:unknown' }, client), 400, 'unsupported_grant_type');
    const inQuery = await request(app()).post('/token?grant_type=client_credentials').set('Authorization', basic(client.id, client.secret!)).type('form').send('');
    expectOAuthError(inQuery, 400, 'invalid_request');
    const json = await request(app()).post('/token').set('Authorization', basic(client.id, client.secret!)).send({ grant_type: 'client_credentials' });
    expectOAuthError(json, 400, 'invalid_request');
    const huge = await request(app()).post('/token').set('Authorization', basic(client.id, client.secret!)).type('form').send(`grant_type=client_credentials&pad=${'x'.repeat(100_000)}`);
    expect(huge.status).toBe(413);
    expect(huge.body.error).toBe('invalid_request');
    for (const path of ['/revoke', '/introspect']) {
      const noToken = await request(app()).post(path).set('Authorization', basic(client.id, client.secret!)).type('form').send('');
      expectOAuthError(noToken, 400, 'invalid_request');
      const twoTokens = await request(app()).post(path).set('Authorization', basic(client.id, client.secret!)).type('form').send('token=a&token=b');
      expectOAuthError(twoTokens, 400, 'invalid_request');
    }
  });

  it('refuses a wrong redirect_uri, another client\'s code and bad PKCE verifiers with invalid_grant', async () => {
    const { runtime } = context();
    const redeem = (fields: Record<string, string>, as: TestClient = client) => tokenRequest(app(), { grant_type: 'authorization_code', ...fields }, as);
    const a = await issueCode(runtime, client, user);
    expectOAuthError(await redeem({ code: a.code, code_verifier: a.verifier, redirect_uri: `${client.redirectUri}x` }), 400, 'invalid_grant');
    const b = await issueCode(runtime, client, user);
    expectOAuthError(await redeem({ code: b.code, code_verifier: b.verifier, redirect_uri: client.redirectUri }, other), 400, 'invalid_grant');
    expect((await redeem({ code: b.code, code_verifier: b.verifier, redirect_uri: client.redirectUri })).status).toBe(200);
    for (const verifier of ['a'.repeat(42), 'a'.repeat(129), `${'a'.repeat(42)}+`, `${'a'.repeat(42)}é`]) {
      const c = await issueCode(runtime, client, user);
      expectOAuthError(await redeem({ code: c.code, code_verifier: verifier, redirect_uri: client.redirectUri }), 400, 'invalid_grant');
    }
  });

  it('refuses scope widening on refresh with invalid_scope and keeps the token', async () => {
    const tokens = await obtainTokens(app(), context().runtime, client, user, { scope: 'products:read' });
    expectOAuthError(await refresh(tokens.refresh_token, client, app(), { scope: 'products:read orders:read' }), 400, 'invalid_scope');
    expect((await refresh(tokens.refresh_token)).status).toBe(200);
  });

  it('revokes whatever token_type_hint says, wrong or unknown (RFC 7009 §2.1)', async () => {
    const tokens = await obtainTokens(app(), context().runtime, client, user);
    const first = await revoke(tokens.access_token, client, { token_type_hint: 'refresh_token' });
    expect(first.status).toBe(200);
    expect((await introspect(tokens.access_token)).body).toEqual({ active: false });
    // The access token alone: its refresh token still works.
    expect((await introspect(tokens.refresh_token)).body.active).toBe(true);
    const second = await revoke(tokens.refresh_token, client, { token_type_hint: 'urn:example:unknown' });
    expect(second.status).toBe(200);
    expect((await introspect(tokens.refresh_token)).body).toEqual({ active: false });
    expect((await refresh(tokens.refresh_token)).body.error).toBe('invalid_grant');
    // Junk that looks like a JWT or not: 200, nothing to revoke.
    for (const junk of ['a.b.c', '..', 'x'.repeat(5000), `${base64url.encode('{"alg":"none"}')}.e30.`]) {
      expect((await revoke(junk)).status).toBe(200);
      expect((await introspect(junk)).body).toEqual({ active: false });
    }
  });

  it('gives exactly one success to concurrent redemptions of one code, and then revokes what it issued', async () => {
    const { code, verifier } = await issueCode(context().runtime, client, user);
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => tokenRequest(app(), { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: client.redirectUri }, client)),
    );
    const won = answers.filter((res) => res.status === 200);
    expect(won).toHaveLength(1);
    expect(answers.filter((res) => res.status !== 200).every((res) => res.body.error === 'invalid_grant')).toBe(true);
    expect((await introspect(won[0]!.body.access_token)).body).toEqual({ active: false });
    expect((await introspect(won[0]!.body.refresh_token)).body).toEqual({ active: false });
  });

  it('leaves nothing usable when revocation races a refresh', async () => {
    for (let round = 0; round < 5; round++) {
      const tokens = await obtainTokens(app(), context().runtime, client, user);
      const [revoked, refreshed] = await Promise.all([revoke(tokens.refresh_token), refresh(tokens.refresh_token)]);
      expect(revoked.status).toBe(200);
      if (refreshed.status === 200) {
        expect((await introspect(refreshed.body.access_token)).body).toEqual({ active: false });
        expect((await introspect(refreshed.body.refresh_token)).body).toEqual({ active: false });
        expect((await refresh(refreshed.body.refresh_token)).body.error).toBe('invalid_grant');
      } else {
        expect(refreshed.body.error).toBe('invalid_grant');
      }
    }
  });

  it('issues client_credentials tokens under concurrent load, each distinct and active', async () => {
    const answers = await Promise.all(Array.from({ length: 20 }, () => tokenRequest(app(), { grant_type: 'client_credentials' }, service)));
    expect(answers.map((res) => res.status)).toEqual(Array(20).fill(200));
    expect(new Set(answers.map((res) => res.body.access_token)).size).toBe(20);
    const introspections = await Promise.all(answers.map((res) => introspect(res.body.access_token, service)));
    expect(introspections.every((res) => res.body.active === true && res.body.sub === service.id)).toBe(true);
  });

  it('answers tokens of the wrong kind and unknown codes with invalid_grant', async () => {
    const tokens = await obtainTokens(app(), context().runtime, client, user);
    expectOAuthError(await refresh(tokens.access_token), 400, 'invalid_grant');
    expectOAuthError(await tokenRequest(app(), { grant_type: 'authorization_code', code: tokens.refresh_token, redirect_uri: client.redirectUri, code_verifier: 'a'.repeat(43) }, client), 400, 'invalid_grant');
    // The refresh token was not touched by being offered as a code.
    const refreshed = await refresh(tokens.refresh_token);
    expect(refreshed.status).toBe(200);
    expectOAuthError(await refresh('not-a-token'), 400, 'invalid_grant');
    // RFC 6749 §3.3: scopes are separated by spaces only; a tab makes one unknown scope.
    expectOAuthError(await refresh(refreshed.body.refresh_token, client, app(), { scope: 'products:read\torders:read' }), 400, 'invalid_scope');
  });

  it('keeps the refresh token working after revoking only its access token, and ends both after revoking the refresh token', async () => {
    const tokens = await obtainTokens(app(), context().runtime, client, user);
    expect((await revoke(tokens.access_token, client, { token_type_hint: 'access_token' })).status).toBe(200);
    const refreshed = await refresh(tokens.refresh_token);
    expect(refreshed.status).toBe(200);
    expect((await introspect(refreshed.body.access_token)).body.active).toBe(true);
    expect((await revoke(refreshed.body.refresh_token, client, { token_type_hint: 'refresh_token' })).status).toBe(200);
    expect((await introspect(refreshed.body.access_token)).body).toEqual({ active: false });
    // Revoking again, or a token already revoked, is still 200 (RFC 7009 §2.2).
    expect((await revoke(refreshed.body.refresh_token)).status).toBe(200);
    expect((await revoke(tokens.access_token)).status).toBe(200);
  });

  it('answers /revoke and /introspect failures of client authentication with invalid_client, 401 and a challenge when Basic was tried', async () => {
    for (const path of ['/revoke', '/introspect']) {
      const wrong = await request(app()).post(path).set('Authorization', basic(client.id, 'wrong')).type('form').send({ token: 'x' });
      expectOAuthError(wrong, 401, 'invalid_client');
      expect(wrong.headers['www-authenticate']).toMatch(/^Basic /);
      const twoMethods = await request(app()).post(path).set('Authorization', basic(client.id, client.secret!)).type('form').send({ token: 'x', client_secret: client.secret! });
      expectOAuthError(twoMethods, 400, 'invalid_request');
    }
    const none = await request(app()).post('/revoke').type('form').send({ token: 'x' });
    expect(none.status).toBeGreaterThanOrEqual(400);
    expect(none.status).toBeLessThan(500);
    expect(none.body.error).toBe('invalid_client');
  });

  it('refuses resources with a fragment or that are not absolute with invalid_target, and treats spellings of one resource as one', async () => {
    const issuer = context().config.issuer;
    const send = (resources: string[]) =>
      request(app()).post('/token').set('Authorization', basic(service.id, service.secret!)).type('form').send(
        ['grant_type=client_credentials', ...resources.map((resource) => `resource=${encodeURIComponent(resource)}`)].join('&'),
      );
    for (const bad of [`${issuer}/graphql#x`, `${issuer}#`, '/graphql', 'graphql', 'urn:example:unknown']) {
      expectOAuthError(await send([bad]), 400, 'invalid_target');
    }
    const one = await send([`${issuer}/graphql`, `${issuer.toUpperCase().replace('HTTP://', 'http://')}/graphql`]);
    expect(one.status, one.text).toBe(200);
    expect((await introspect(one.body.access_token, service)).body.aud).toBe(`${issuer}/graphql`);
    // A refresh narrows its audience to one resource; the next may ask for the whole grant again.
    const tokens = await obtainTokens(app(), context().runtime, client, user);
    const narrowed = await refresh(tokens.refresh_token, client, app(), { resource: `${issuer}/graphql` });
    expect(narrowed.status, narrowed.text).toBe(200);
    expect((await introspect(narrowed.body.access_token)).body.aud).toBe(`${issuer}/graphql`);
    const whole = await refresh(narrowed.body.refresh_token);
    expect((await introspect(whole.body.access_token)).body.aud).toEqual([issuer, `${issuer}/graphql`]);
  });

  onTwoInstances(context, () => ({ client, user }));
});

/** Two runtimes on one PostgreSQL database, as two instances behind a load balancer. */
function onTwoInstances(context: () => TestRuntime, cast: () => { client: TestClient; user: TestUser }): void {
  const withSecond = async (run: (second: Runtime, apps: [Express, Express]) => Promise<void>) => {
    const { kind, testDatabase, config } = context();
    if (kind !== 'postgres') return; // PGlite is one process's database; a second instance needs PostgreSQL
    const second = await openRuntime(config, createLogger('silent'), await testDatabase.open());
    try {
      await run(second, [context().app, createApp(second)]);
    } finally {
      await second.close();
    }
  };
  const introspectAt = (target: Express, token: string, as: TestClient) =>
    request(target).post('/introspect').set('Authorization', basic(as.id, as.secret!)).type('form').send({ token });

  it('on two instances: an access token revoked at one is inactive at the other at once', async () => {
    await withSecond(async (_second, [a, b]) => {
      const { client, user } = cast();
      const tokens = await obtainTokens(a, context().runtime, client, user);
      const other = await obtainTokens(a, context().runtime, client, user);
      // B has answered for both tokens before they are revoked at A.
      expect((await introspectAt(b, tokens.access_token, client)).body.active).toBe(true);
      expect((await introspectAt(b, other.access_token, client)).body.active).toBe(true);
      expect((await request(a).post('/revoke').set('Authorization', basic(client.id, client.secret!)).type('form').send({ token: tokens.access_token })).status).toBe(200);
      expect((await request(a).post('/revoke').set('Authorization', basic(client.id, client.secret!)).type('form').send({ token: other.refresh_token })).status).toBe(200);
      expect((await introspectAt(b, tokens.access_token, client)).body).toEqual({ active: false });
      expect((await introspectAt(b, other.access_token, client)).body).toEqual({ active: false });
    });
  });

  it('on two instances: of concurrent redemptions of one code one wins, and the replay ends its tokens on both', async () => {
    await withSecond(async (_second, apps) => {
      const { client, user } = cast();
      const { code, verifier } = await issueCode(context().runtime, client, user);
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) => tokenRequest(apps[i % 2]!, { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: client.redirectUri }, client)),
      );
      const won = answers.filter((res) => res.status === 200);
      expect(won).toHaveLength(1);
      expect(answers.filter((res) => res.status !== 200).every((res) => res.body.error === 'invalid_grant')).toBe(true);
      for (const target of apps) {
        expect((await introspectAt(target, won[0]!.body.access_token, client)).body).toEqual({ active: false });
        expect((await tokenRequest(target, { grant_type: 'refresh_token', refresh_token: won[0]!.body.refresh_token }, client)).body.error).toBe('invalid_grant');
      }
    });
  });

  it('on two instances: a revocation racing a refresh leaves nothing usable', async () => {
    await withSecond(async (_second, [a, b]) => {
      const { client, user } = cast();
      for (let round = 0; round < 5; round++) {
        const tokens = await obtainTokens(a, context().runtime, client, user);
        const [revoked, refreshed] = await Promise.all([
          request(a).post('/revoke').set('Authorization', basic(client.id, client.secret!)).type('form').send({ token: tokens.refresh_token }),
          tokenRequest(b, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, client),
        ]);
        expect(revoked.status).toBe(200);
        if (refreshed.status !== 200) {
          expect(refreshed.body.error).toBe('invalid_grant');
          continue;
        }
        for (const target of [a, b]) {
          expect((await introspectAt(target, refreshed.body.access_token, client)).body).toEqual({ active: false });
          expect((await introspectAt(target, refreshed.body.refresh_token, client)).body).toEqual({ active: false });
        }
      }
    });
  });

  it('on two instances: of concurrent rotations of one refresh token one wins, and the reuse revokes the family', async () => {
    await withSecond(async (_second, apps) => {
      const { client, user } = cast();
      const tokens = await obtainTokens(apps[0], context().runtime, client, user);
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => tokenRequest(apps[i % 2]!, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, client)));
      const won = answers.filter((res) => res.status === 200);
      expect(won).toHaveLength(1);
      expect(answers.filter((res) => res.status !== 200).every((res) => res.body.error === 'invalid_grant')).toBe(true);
      for (const target of apps) {
        expect((await introspectAt(target, won[0]!.body.access_token, client)).body).toEqual({ active: false });
        expect((await introspectAt(target, won[0]!.body.refresh_token, client)).body).toEqual({ active: false });
      }
    });
  });
}
