/**
 * Access tokens: RFC 9068 JWTs — `typ: at+jwt`, ES256 by jose, `kid` of a key
 * published in the JWKS, and the claims iss, sub, aud, client_id, scope, jti, iat, exp.
 */
import { beforeAll, expect, it } from 'vitest';
import request from 'supertest';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { describeEachDatabase } from '../support/runtime.js';
import { buildClient, buildUser, obtainTokens, type TestClient, type TestUser } from '../support/oauth.js';
import { issueTestToken } from '../support/tokens.js';

describeEachDatabase('access tokens', (context) => {
  let client: TestClient;
  let user: TestUser;

  beforeAll(async () => {
    client = await buildClient(context().runtime);
    user = await buildUser(context().runtime);
  });

  it('are RFC 9068 JWTs signed ES256 with a published key id', async () => {
    const { access_token } = await obtainTokens(context().app, context().runtime, client, user);
    const header = decodeProtectedHeader(access_token);
    expect(header).toMatchObject({ typ: 'at+jwt', alg: 'ES256' });
    expect(typeof header.kid).toBe('string');

    const jwks = (await request(context().app).get('/.well-known/jwks.json')).body;
    expect(jwks.keys.map((k: { kid: string }) => k.kid)).toContain(header.kid);
    const issuer = context().config.issuer;
    const { payload, protectedHeader } = await jwtVerify(access_token, createLocalJWKSet(jwks), {
      issuer,
      audience: issuer,
      typ: 'at+jwt',
      algorithms: ['ES256'],
    });
    expect(protectedHeader.kid).toBe(header.kid);
    // RFC 8707: with no `resource` requested, the audience is both of Fieldgate's own resources.
    expect(payload).toMatchObject({ iss: issuer, sub: String(user.id), aud: [issuer, `${issuer}/graphql`], client_id: client.id, scope: 'products:read orders:read' });
    expect(typeof payload.jti).toBe('string');
    expect(payload.exp! - payload.iat!).toBe(context().config.accessTokenTtl);
    expect(Math.abs(payload.iat! - Date.now() / 1000)).toBeLessThan(10);
  });

  it('carry a unique jti per token', async () => {
    const a = await obtainTokens(context().app, context().runtime, client, user);
    const b = await obtainTokens(context().app, context().runtime, client, user);
    const jti = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).jti;
    expect(jti(a.access_token)).not.toBe(jti(b.access_token));
  });

  it('are answered from the caches only after a full check accepted them, and never once revoked or for another resource', async () => {
    const { runtime, config } = context();
    const { token, grantId } = await issueTestToken(runtime);
    const fresh = (await runtime.accessTokens.issue({ userId: user.id, clientId: client.id, scope: 'products:read', grantId })).token;
    expect(runtime.accessTokens.verifyFromCache(fresh)).toBeUndefined();
    await runtime.accessTokens.verify(fresh, config.issuer);
    expect(runtime.accessTokens.verifyFromCache(fresh, config.issuer)?.grantId).toBe(grantId);
    expect(runtime.accessTokens.verifyFromCache(fresh, 'https://elsewhere.example/api')).toBeUndefined();
    await runtime.revocations.revokeGrant(grantId);
    expect(runtime.accessTokens.verifyFromCache(token)).toBeUndefined();
    expect(runtime.accessTokens.verifyFromCache(fresh, config.issuer)).toBeUndefined();
    await expect(runtime.accessTokens.verify(fresh, config.issuer)).rejects.toThrow(/revoked/);
    expect(runtime.accessTokens.verifyFromCache(fresh, config.issuer)).toBeUndefined();
  });
});
