/**
 * Single use across instances (RFC 9449 §11.1, RFC 7523 §3): two runtimes — each with its own
 * caches and its own app, as two processes behind a load balancer — on one PostgreSQL database
 * and one ISSUER. A DPoP proof or a client assertion used on one instance is refused on the
 * other, and a nonce handed out by one is accepted by the other.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { randomUUID } from 'node:crypto';
import type { Express } from 'express';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { openDatabase } from '../../src/db/database.js';
import { openRuntime, type Runtime } from '../../src/runtime.js';
import { createApp } from '../../src/app.js';
import { CLIENT_ASSERTION_TYPE } from '../../src/oauth/client-assertion.js';
import { createPostgresDatabase, TEST_DATABASE_URL } from '../support/databases.js';
import { LogCapture } from '../support/runtime.js';
import { basic, buildClient, buildUser, issueCode, type TestClient, type TestUser } from '../support/oauth.js';
import { dpopKey, dpopProof } from '../support/dpop.js';

const ISSUER = 'http://fieldgate.test';
const TOKEN_URL = `${ISSUER}/token`;

interface Instance {
  runtime: Runtime;
  app: Express;
}

describe.runIf(TEST_DATABASE_URL)('DPoP and client assertion jtis on two instances of one PostgreSQL database', () => {
  let database: { url: string; drop(): Promise<void> };
  let a: Instance;
  let b: Instance;
  let user: TestUser;

  async function instance(url: string): Promise<Instance> {
    const config = loadConfig({ ISSUER, DATABASE_URL: url, LOG_LEVEL: 'warn', DEMO: 'false', JANITOR_INTERVAL: '0' });
    const runtime = await openRuntime(config, createLogger(config.logLevel, new LogCapture()), await openDatabase({ databaseUrl: url, poolSize: 5 }));
    return { runtime, app: createApp(runtime) };
  }

  beforeAll(async () => {
    database = await createPostgresDatabase();
    a = await instance(database.url);
    b = await instance(database.url);
    user = await buildUser(a.runtime);
  });

  afterAll(async () => {
    await a?.runtime.close();
    await b?.runtime.close();
    await database?.drop();
  });

  async function codeFields(client: TestClient) {
    const { code, verifier } = await issueCode(a.runtime, client, user);
    return { grant_type: 'authorization_code', code, redirect_uri: client.redirectUri, code_verifier: verifier };
  }

  const exchange = async (on: Instance, client: TestClient, proof: string) =>
    request(on.app).post('/token').type('form').set('Authorization', basic(client.id, client.secret!)).set('DPoP', proof).send(await codeFields(client));

  it('accepts on one instance the nonce the other handed out', async () => {
    const [client, key] = await Promise.all([buildClient(a.runtime), dpopKey()]);
    const res = await exchange(b, client, await dpopProof(key, { htu: TOKEN_URL, nonce: a.runtime.dpop.currentNonce() }));
    expect(res.status, res.text).toBe(200);
    expect(res.body.token_type).toBe('DPoP');
  });

  it('refuses on the second instance a DPoP proof used on the first', async () => {
    const [client, key] = await Promise.all([buildClient(a.runtime), dpopKey()]);
    const proof = await dpopProof(key, { htu: TOKEN_URL, nonce: a.runtime.dpop.currentNonce() });
    expect((await exchange(a, client, proof)).status).toBe(200);
    const replay = await exchange(b, client, proof);
    expect(replay.status).toBe(400);
    expect(replay.body).toMatchObject({ error: 'invalid_dpop_proof', error_description: 'this DPoP proof has already been used' });
  });

  it('accepts one proof once when both instances get it 10 times at once', async () => {
    const [client, key] = await Promise.all([buildClient(a.runtime), dpopKey()]);
    const proof = await dpopProof(key, { htu: TOKEN_URL, nonce: a.runtime.dpop.currentNonce() });
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => exchange(i % 2 ? a : b, client, proof)));
    expect(results.filter((res) => res.status === 200)).toHaveLength(1);
    expect(results.filter((res) => res.body.error === 'invalid_dpop_proof')).toHaveLength(19);
  });

  it('refuses on the second instance a client assertion used on the first', async () => {
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    const client = await buildClient(a.runtime, { tokenEndpointAuthMethod: 'private_key_jwt', jwks: { keys: [{ ...(await exportJWK(publicKey)), kid: 'k' }] } });
    const assertion = await new SignJWT({ jti: randomUUID() })
      .setProtectedHeader({ alg: 'ES256', kid: 'k' })
      .setIssuer(client.id)
      .setSubject(client.id)
      .setAudience(ISSUER)
      .setIssuedAt()
      .setExpirationTime('1m')
      .sign(privateKey);
    const send = async (on: Instance) =>
      request(on.app)
        .post('/token')
        .type('form')
        .send({ ...(await codeFields(client)), client_assertion_type: CLIENT_ASSERTION_TYPE, client_assertion: assertion });
    expect((await send(a)).status).toBe(200);
    const replay = await send(b);
    expect(replay.status).toBe(400);
    expect(replay.body.error).toBe('invalid_client');
  });
});
