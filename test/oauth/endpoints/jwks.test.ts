/** The JWKS: the current keys (ES256 and RS256) and retired keys whose tokens may still be live. */
import { beforeAll, expect, it } from 'vitest';
import request from 'supertest';
import { decodeProtectedHeader } from 'jose';
import { rotateSigningKey } from '../../../src/tokens/signing-keys.js';
import { describeEachDatabase } from '../../support/runtime.js';
import { buildClient, buildUser, obtainTokens, type TestClient, type TestUser } from '../../support/oauth.js';

describeEachDatabase('GET /.well-known/jwks.json', (context) => {
  let client: TestClient;
  let user: TestUser;

  beforeAll(async () => {
    client = await buildClient(context().runtime);
    user = await buildUser(context().runtime);
  });

  it('publishes public keys only: an ES256 and an RS256 one', async () => {
    const res = await request(context().app).get('/.well-known/jwks.json');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/(jwk-set\+)?json/);
    expect(res.body.keys.map((key: { alg: string }) => key.alg).sort()).toEqual(['ES256', 'RS256']);
    for (const key of res.body.keys) {
      expect(key).toMatchObject(key.alg === 'ES256' ? { kty: 'EC', crv: 'P-256', use: 'sig' } : { kty: 'RSA', alg: 'RS256', use: 'sig' });
      expect(typeof key.kid).toBe('string');
      for (const member of ['d', 'p', 'q', 'dp', 'dq', 'qi']) expect(key[member]).toBeUndefined();
    }
  });

  it('keeps publishing the retired key after a rotation, next to the new one', async () => {
    const { runtime, app } = context();
    const before = await obtainTokens(app, runtime, client, user);
    const oldKid = decodeProtectedHeader(before.access_token).kid;
    const { kid: newKid } = await rotateSigningKey(runtime.db, runtime.config.accessTokenTtl);
    await runtime.keys.invalidate();
    const kids = (await request(app).get('/.well-known/jwks.json')).body.keys.map((k: { kid: string }) => k.kid);
    expect(kids).toEqual(expect.arrayContaining([oldKid, newKid]));
    const after = await obtainTokens(app, runtime, client, user);
    expect(decodeProtectedHeader(after.access_token).kid).toBe(newKid);
  });
});
