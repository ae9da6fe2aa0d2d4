import { afterEach, expect, it, vi } from 'vitest';
import { decodeProtectedHeader } from 'jose';
import { describeEachDatabase } from '../support/runtime.js';
import { issueTestToken } from '../support/tokens.js';
import { isSigningKeyReload } from '../support/sql.js';
import { KeyStore, retireSigningKey, rotateSigningKey } from '../../src/tokens/signing-keys.js';
import { AccessTokens } from '../../src/tokens/access-token.js';
import { GrantOwners } from '../../src/tokens/grant-owners.js';
import { InvalidToken } from '../../src/oauth/errors.js';

describeEachDatabase('signing keys', (context) => {
  const grant = { userId: 1, clientId: 'c1', scope: 'products:read', grantId: 'g1' };

  it('publishes the current key and signs access tokens with its kid', async () => {
    const { runtime } = context();
    const jwks = await runtime.keys.jwks();
    expect(jwks.keys).toHaveLength(1);
    expect(jwks.keys[0]).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
    expect(jwks.keys[0]).not.toHaveProperty('d');
    const issued = await runtime.accessTokens.issue(grant);
    expect(decodeProtectedHeader(issued.token)).toEqual({ alg: 'ES256', typ: 'at+jwt', kid: jwks.keys[0]!.kid });
  });

  it('after a rotation elsewhere, verifies new tokens at once and keeps verifying old ones', async () => {
    const { runtime, config } = context();
    // Verification checks that the grant still exists, so these tokens need a real one.
    const { userId, clientId, grantId } = await issueTestToken(runtime);
    const live = { userId, clientId, scope: 'products:read', grantId };
    const old = await runtime.accessTokens.issue(live);
    const { kid } = await rotateSigningKey(runtime.db, config.accessTokenTtl);

    // Another instance, which already knows the new key, signs with it.
    const otherKeys = new KeyStore(runtime.db, config.accessTokenTtl);
    const other = new AccessTokens(otherKeys, runtime.revocations, { issuer: config.issuer, audience: config.issuer, ttlSeconds: 60 }, new GrantOwners(runtime.db));
    const fresh = await other.issue(live);
    expect(decodeProtectedHeader(fresh.token).kid).toBe(kid);

    // This instance has the old key set cached: the unknown kid triggers a reload.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    await expect(runtime.accessTokens.verify(fresh.token)).resolves.toMatchObject({ userId });
    await expect(runtime.accessTokens.verify(old.token)).resolves.toMatchObject({ userId });
    const published = (await runtime.keys.jwks()).keys.map((k) => k.kid);
    expect(published).toContain(kid);
    expect(published).toContain(decodeProtectedHeader(old.token).kid);
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  it('stops answering from its caches for a token of a key withdrawn elsewhere (keys retire), within the reload interval', async () => {
    const { runtime, config } = context();
    const { userId, clientId, grantId } = await issueTestToken(runtime);
    const { token } = await runtime.accessTokens.issue({ userId, clientId, scope: 'products:read', grantId });
    const kid = decodeProtectedHeader(token).kid!;
    // Verified once: later requests are answered from the verified-token cache.
    await expect(runtime.accessTokens.verify(token)).resolves.toMatchObject({ userId });
    expect(runtime.accessTokens.verifyFromCache(token)).toMatchObject({ userId });

    // The key leaked: `fieldgate keys retire` (another process) deletes it.
    expect(await retireSigningKey(runtime.db, kid, config.accessTokenTtl)).toMatchObject({ retired: kid });
    vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
    vi.setSystemTime(Date.now() + 31_000);
    const answer = () => runtime.accessTokens.verify(token).then(() => 'accepted', (error: Error) => error.message);
    await expect.poll(answer, { timeout: 5_000 }).toMatch(/not signed by a key of this server/);
    expect(runtime.accessTokens.verifyFromCache(token)).toBeUndefined();
    // Tokens of the new current key are unaffected.
    const { token: fresh } = await runtime.accessTokens.issue({ userId, clientId, scope: 'products:read', grantId });
    expect(decodeProtectedHeader(fresh).kid).not.toBe(kid);
    await expect(runtime.accessTokens.verify(fresh)).resolves.toMatchObject({ userId });
  });

  it('reloads the key set in the background once it is older than the reload interval, in one statement', async () => {
    const { runtime, config } = context();
    const keys = new KeyStore(runtime.db, config.accessTokenTtl);
    const kid = (await keys.jwks()).keys[0]!.kid!;
    const statements: string[] = [];
    const stop = runtime.database.onQuery((query) => statements.push(query));
    try {
      expect(keys.knows(kid)).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(statements).toEqual([]);
      vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
      vi.setSystemTime(Date.now() + 31_000);
      expect(keys.knows(kid)).toBe(true);
      await expect.poll(() => statements.length).toBe(1);
    } finally {
      stop();
    }
    // The statement-counting tests leave exactly this statement out (test/support/sql.ts).
    expect(isSigningKeyReload(statements[0]!)).toBe(true);
    expect(isSigningKeyReload('update "signing_keys" set "retired_at" = now() where "signing_keys"."kid" = $1')).toBe(false);
    expect(isSigningKeyReload('select "d0"."id" as "id" from "products" as "d0" limit 51')).toBe(false);
  });

  it('refuses a token signed by a key it does not know', async () => {
    const { runtime, config } = context();
    const { generateKeyPair, SignJWT } = await import('jose');
    const { privateKey } = await generateKeyPair('ES256');
    const forged = await new SignJWT({ client_id: 'c1', scope: 'products:read', grant_id: 'g1' })
      .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: 'not-ours' })
      .setIssuer(config.issuer)
      .setAudience(config.issuer)
      .setSubject('1')
      .setJti('j')
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(privateKey);
    await expect(runtime.accessTokens.verify(forged)).rejects.toBeInstanceOf(InvalidToken);
  });
});
