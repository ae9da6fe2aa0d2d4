/**
 * private_key_jwt client authentication (RFC 7523 §2.2, §3; RFC 7521 §4.2) at /token,
 * /introspect and /revoke, over raw HTTP, with keys registered by value (jwks) and by reference
 * (jwks_uri, fetched from a local server: CLIENT_JWKS_ALLOW_PRIVATE is on for these specs).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { SignJWT } from 'jose';
import { desc, eq } from 'drizzle-orm';
import { usedJtis } from '../../src/db/schema.js';
import { describeEachDatabase, TEST_ISSUER } from '../support/runtime.js';
import { assertion, signingKey, type SigningKey } from '../support/client-assertions.js';
import { buildClient, buildUser, issueCode, type TestClient } from '../support/oauth.js';
import { CLIENT_ASSERTION_TYPE } from '../../src/oauth/client-assertion.js';
import { fetchJwks, JWKS_MAX_BYTES } from '../../src/oauth/jwks-fetch.js';

/** A local server publishing a JWK Set (or anything else) at /jwks. */
async function jwksServer(): Promise<{ url: string; body: { value: unknown }; status: { value: number }; requests: { count: number; delayMs: number }; close(): Promise<void> }> {
  const body = { value: {} as unknown };
  const status = { value: 200 };
  const requests = { count: 0, delayMs: 0 };
  const server = http.createServer(async (_req, res) => {
    requests.count++;
    if (requests.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, requests.delayMs));
    if (status.value !== 200) {
      res.writeHead(status.value, { location: 'http://127.0.0.1:1/elsewhere' }).end();
      return;
    }
    res.setHeader('content-type', 'application/json');
    res.end(typeof body.value === 'string' ? body.value : JSON.stringify(body.value));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/jwks`, body, status, requests, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describeEachDatabase(
  'private_key_jwt client authentication',
  (context) => {
    let key: SigningKey;
    let client: TestClient;

    beforeAll(async () => {
      key = await signingKey();
      client = await buildClient(context().runtime, { tokenEndpointAuthMethod: 'private_key_jwt', jwks: { keys: [key.publicJwk] } });
    });

    async function codeExchange(fields: Record<string, string>) {
      const { runtime, app } = context();
      const user = await buildUser(runtime);
      const { code, verifier } = await issueCode(runtime, client, user);
      return request(app)
        .post('/token')
        .type('form')
        .send({ grant_type: 'authorization_code', code, redirect_uri: client.redirectUri, code_verifier: verifier, ...fields });
    }

    const withAssertion = (jwt: string) => ({ client_assertion_type: CLIENT_ASSERTION_TYPE, client_assertion: jwt });

    it('registers no secret and says private_key_jwt', () => {
      expect(client.secret).toBeUndefined();
    });

    it('authenticates at /token with an assertion whose aud is the issuer, or the token endpoint URL', async () => {
      for (const aud of [TEST_ISSUER, `${TEST_ISSUER}/token`]) {
        const res = await codeExchange(withAssertion(await assertion(client.id, key, { aud })));
        expect(res.status, res.text).toBe(200);
        expect(res.body.token_type).toBe('Bearer');
      }
    });

    it('authenticates at /introspect and /revoke', async () => {
      const { app } = context();
      const tokens = (await codeExchange(withAssertion(await assertion(client.id, key)))).body as { access_token: string };
      const introspected = await request(app).post('/introspect').type('form').send({ token: tokens.access_token, ...withAssertion(await assertion(client.id, key)) });
      expect(introspected.status, introspected.text).toBe(200);
      expect(introspected.body).toMatchObject({ active: true, client_id: client.id });
      const revoked = await request(app).post('/revoke').type('form').send({ token: tokens.access_token, ...withAssertion(await assertion(client.id, key)) });
      expect(revoked.status, revoked.text).toBe(200);
    });

    const now = () => Math.floor(Date.now() / 1000);

    it('accepts an assertion signed for an hour (authlib) while its iat is under five minutes old, once', async () => {
      const jwt = await assertion(client.id, key, { exp: now() + 3600 });
      expect((await codeExchange(withAssertion(jwt))).status).toBe(200);
      const replayed = await codeExchange(withAssertion(jwt));
      expect(replayed.body.error).toBe('invalid_client');
      // Its jti is kept no longer than a five-minute assertion's: the five minutes from iat, plus the usual margins.
      const [row] = await context().runtime.db.select().from(usedJtis).where(eq(usedJtis.signer, `client:${client.id}`)).orderBy(desc(usedJtis.expiresAt)).limit(1);
      expect(row!.expiresAt.getTime() / 1000).toBeLessThan(now() + 3600 - 600);
    });

    const refusals: [string, () => Promise<Record<string, string>>][] = [
      ['a replayed assertion', async () => {
        const jwt = await assertion(client.id, key);
        expect((await codeExchange(withAssertion(jwt))).status).toBe(200);
        return withAssertion(jwt);
      }],
      ['an expired assertion', async () => withAssertion(await assertion(client.id, key, { exp: now() - 120 }))],
      ['an assertion valid for more than five minutes that carries no iat', async () => withAssertion(await assertion(client.id, key, { exp: now() + 3600, iat: null }))],
      ['an assertion valid for an hour issued more than five minutes ago', async () => withAssertion(await assertion(client.id, key, { iat: now() - 400, exp: now() + 3200 }))],
      ['an assertion issued in the future (iat)', async () => {
        const jwt = await new SignJWT({ jti: randomUUID() }).setProtectedHeader({ alg: key.alg, kid: key.publicJwk.kid! }).setIssuer(client.id)
          .setSubject(client.id).setAudience(TEST_ISSUER).setIssuedAt(now() + 120).setExpirationTime(now() + 240).sign(key.privateKey);
        return withAssertion(jwt);
      }],
      ['a wrong aud', async () => withAssertion(await assertion(client.id, key, { aud: 'https://other.example' }))],
      ['an iss other than the client', async () => withAssertion(await assertion(client.id, key, { iss: 'someone-else' }))],
      ['no jti', async () => withAssertion(await assertion(client.id, key, { jti: null }))],
      ['a signature by an unregistered key', async () => withAssertion(await assertion(client.id, await signingKey('ES256', key.publicJwk.kid)))],
      ['an HS256 assertion', async () => {
        const jwt = await new SignJWT({ jti: randomUUID() }).setProtectedHeader({ alg: 'HS256' }).setIssuer(client.id).setSubject(client.id)
          .setAudience(TEST_ISSUER).setExpirationTime('1m').sign(new Uint8Array(32));
        return withAssertion(jwt);
      }],
      ['an unsigned (alg none) assertion', async () => {
        const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
        return withAssertion(`${b64({ alg: 'none' })}.${b64({ iss: client.id, sub: client.id, aud: TEST_ISSUER, exp: now() + 60, jti: randomUUID() })}.`);
      }],
      ['a client secret instead of an assertion', async () => ({ client_id: client.id, client_secret: 'guess' })],
      ['no credentials but client_id', async () => ({ client_id: client.id })],
    ];
    for (const [title, build] of refusals) {
      it(`refuses ${title} with invalid_client`, async () => {
        const res = await codeExchange(await build());
        expect(res.status).toBeGreaterThanOrEqual(400);
        expect(res.body.error).toBe('invalid_client');
      });
    }

    it('refuses an assertion for a client registered with a secret', async () => {
      const { runtime, app } = context();
      const secretClient = await buildClient(runtime);
      const res = await request(app).post('/introspect').type('form').send({ token: 'x', ...withAssertion(await assertion(secretClient.id, key)) });
      expect(res.status).toBe(401);
      expect(res.body.error).toBe('invalid_client');
    });

    it('refuses a wrong client_assertion_type, and an assertion beside a secret', async () => {
      const wrongType = await codeExchange({ client_assertion_type: 'urn:example:saml', client_assertion: await assertion(client.id, key) });
      expect(wrongType.body.error).toBe('invalid_client');
      const both = await codeExchange({ ...withAssertion(await assertion(client.id, key)), client_secret: 'x' });
      expect(both.body.error).toBe('invalid_request');
    });

    it('accepts one of 10 concurrent uses of the same assertion (RFC 7523 §3 jti)', async () => {
      const jwt = await assertion(client.id, key);
      const results = await Promise.all(Array.from({ length: 10 }, () => codeExchange(withAssertion(jwt))));
      expect(results.filter((res) => res.status === 200)).toHaveLength(1);
      expect(results.filter((res) => res.body.error === 'invalid_client')).toHaveLength(9);
    });

    describe('assertions without kid (RFC 7515 §4.1.4: kid is optional)', () => {
      /** What authlib's PrivateKeyJWT sends for a PEM key: a header of `alg` and `typ` only, aud the token endpoint URL. */
      async function kidlessAssertion(clientId: string, signer: SigningKey): Promise<string> {
        const now = Math.floor(Date.now() / 1000);
        return new SignJWT({ jti: randomUUID() }).setProtectedHeader({ alg: signer.alg, typ: 'JWT' }).setIssuer(clientId).setSubject(clientId)
          .setAudience(`${TEST_ISSUER}/token`).setIssuedAt(now).setExpirationTime(now + 60).sign(signer.privateKey);
      }
      const withoutKid = ({ kid: _kid, ...jwk }: SigningKey['publicJwk']) => jwk;

      it('tries each key of the algorithm when the set holds several (the old and the new during a rotation)', async () => {
        const { runtime, app } = context();
        const [old, current] = [await signingKey('RS256'), await signingKey('RS256')];
        const rotating = await buildClient(runtime, { tokenEndpointAuthMethod: 'private_key_jwt', jwks: { keys: [withoutKid(old.publicJwk), withoutKid(current.publicJwk)] } });
        for (const signer of [current, old]) {
          const user = await buildUser(runtime);
          const { code, verifier } = await issueCode(runtime, rotating, user);
          const res = await request(app).post('/token').type('form').send({
            grant_type: 'authorization_code', code, redirect_uri: rotating.redirectUri, code_verifier: verifier,
            ...withAssertion(await kidlessAssertion(rotating.id, signer)),
          });
          expect(res.status, res.text).toBe(200);
        }
      });

      it('still refuses a kid-less assertion that none of the keys signed, or whose claims fail', async () => {
        const { runtime, app } = context();
        const [first, second, stranger] = [await signingKey('ES256'), await signingKey('ES256'), await signingKey('ES256')];
        const pair = await buildClient(runtime, { tokenEndpointAuthMethod: 'private_key_jwt', jwks: { keys: [withoutKid(first.publicJwk), withoutKid(second.publicJwk)] } });
        const introspect = async (jwt: string) => request(app).post('/introspect').type('form').send({ token: 'x', ...withAssertion(jwt) });
        const unsigned = await introspect(await kidlessAssertion(pair.id, stranger));
        expect(unsigned.status).toBe(401);
        expect(unsigned.body.error).toBe('invalid_client');
        const now = Math.floor(Date.now() / 1000);
        const expired = await new SignJWT({ jti: randomUUID() }).setProtectedHeader({ alg: 'ES256' }).setIssuer(pair.id).setSubject(pair.id)
          .setAudience(TEST_ISSUER).setIssuedAt(now - 600).setExpirationTime(now - 300).sign(second.privateKey);
        expect((await introspect(expired)).body.error).toBe('invalid_client');
      });
    });

    describe('keys by reference (jwks_uri)', () => {
      let jwks: Awaited<ReturnType<typeof jwksServer>>;
      let remote: TestClient;
      beforeAll(async () => {
        jwks = await jwksServer();
        jwks.body.value = { keys: [key.publicJwk] };
        remote = await buildClient(context().runtime, { tokenEndpointAuthMethod: 'private_key_jwt', jwksUri: jwks.url });
      });
      afterAll(async () => {
        await jwks.close();
      });

      it('fetches the key set, and again when an assertion names a new key (rotation)', async () => {
        const { runtime, app } = context();
        const user = await buildUser(runtime);
        const exchange = async (signer: SigningKey) => {
          const { code, verifier } = await issueCode(runtime, remote, user);
          return request(app).post('/token').type('form').send({
            grant_type: 'authorization_code', code, redirect_uri: remote.redirectUri, code_verifier: verifier,
            ...withAssertion(await assertion(remote.id, signer)),
          });
        };
        expect((await exchange(key)).status).toBe(200);
        const rotated = await signingKey('RS256');
        jwks.body.value = { keys: [key.publicJwk, rotated.publicJwk] };
        const res = await exchange(rotated);
        expect(res.status, res.text).toBe(200);
      });

      it('fetches the key set again for a kid-less assertion none of the cached keys checks (a rotation without kids)', async () => {
        const { runtime, app } = context();
        const server = await jwksServer();
        try {
          const [old, next] = [await signingKey('ES256'), await signingKey('ES256')];
          const { kid: _old, ...oldKey } = old.publicJwk;
          const { kid: _next, ...nextKey } = next.publicJwk;
          server.body.value = { keys: [oldKey] };
          const rotating = await buildClient(runtime, { tokenEndpointAuthMethod: 'private_key_jwt', jwksUri: server.url });
          const kidless = async (signer: SigningKey) => {
            const now = Math.floor(Date.now() / 1000);
            return new SignJWT({ jti: randomUUID() }).setProtectedHeader({ alg: signer.alg }).setIssuer(rotating.id).setSubject(rotating.id)
              .setAudience(TEST_ISSUER).setIssuedAt(now).setExpirationTime(now + 60).sign(signer.privateKey);
          };
          const introspect = async (signer: SigningKey) => request(app).post('/introspect').type('form').send({ token: 'x', ...withAssertion(await kidless(signer)) });
          expect((await introspect(old)).status).toBe(200);
          server.body.value = { keys: [nextKey] };
          const res = await introspect(next);
          expect(res.status, res.text).toBe(200);
          // A stranger's kid-less assertion costs at most that one refetch within the cooldown.
          const before = server.requests.count;
          for (let i = 0; i < 3; i++) expect((await introspect(await signingKey('ES256'))).body.error).toBe('invalid_client');
          expect(server.requests.count - before).toBeLessThanOrEqual(1);
        } finally {
          await server.close();
        }
      });

      it('fetches the key set once for a burst of concurrent assertions naming unknown keys (no amplification)', async () => {
        const { runtime, app } = context();
        const server = await jwksServer();
        try {
          server.body.value = { keys: [key.publicJwk] };
          server.requests.delayMs = 200;
          const target = await buildClient(runtime, { tokenEndpointAuthMethod: 'private_key_jwt', jwksUri: server.url });
          const strangers = await Promise.all(Array.from({ length: 20 }, () => signingKey()));
          const results = await Promise.all(
            strangers.map(async (stranger) =>
              request(app).post('/token').type('form').send({ grant_type: 'client_credentials', ...withAssertion(await assertion(target.id, stranger)) }),
            ),
          );
          for (const res of results) expect(res.body.error).toBe('invalid_client');
          // One fetch for the first assertions, at most one more to look for the unknown kids.
          expect(server.requests.count).toBeLessThanOrEqual(2);
        } finally {
          await server.close();
        }
      });
    });
  },
  { CLIENT_JWKS_ALLOW_PRIVATE: 'true' },
);

describe('jwks_uri fetching (SSRF guards)', () => {
  it('refuses plain http, loopback literals and names that resolve to loopback unless allowed', async () => {
    await expect(fetchJwks('http://example.com/jwks', { allowPrivate: false })).rejects.toThrow(/https/);
    await expect(fetchJwks('https://127.0.0.1/jwks', { allowPrivate: false })).rejects.toThrow(/non-public/);
    await expect(fetchJwks('https://[::1]/jwks', { allowPrivate: false })).rejects.toThrow(/non-public/);
    await expect(fetchJwks('https://localhost/jwks', { allowPrivate: false })).rejects.toThrow(/non-public/);
  });

  it('follows no redirect and refuses an oversized or non-JSON key set', async () => {
    const server = await jwksServer();
    try {
      server.status.value = 302;
      await expect(fetchJwks(server.url, { allowPrivate: true })).rejects.toThrow(/HTTP 302/);
      server.status.value = 200;
      server.body.value = 'x'.repeat(JWKS_MAX_BYTES + 1);
      await expect(fetchJwks(server.url, { allowPrivate: true })).rejects.toThrow(/larger than/);
      server.body.value = 'not json';
      await expect(fetchJwks(server.url, { allowPrivate: true })).rejects.toThrow(/not JSON/);
      server.body.value = { keys: [] };
      await expect(fetchJwks(server.url, { allowPrivate: true })).resolves.toEqual({ keys: [] });
    } finally {
      await server.close();
    }
  });
});
