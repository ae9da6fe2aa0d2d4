import { afterEach, expect, it, vi } from 'vitest';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import request from 'supertest';
import { describeEachDatabase } from '../support/runtime.js';
import { issueTestToken } from '../support/tokens.js';
import { isSigningKeyReload } from '../support/sql.js';
import { desc, eq, isNull } from 'drizzle-orm';
import { ensureSigningKey, KeyStore, listSigningKeys, retireSigningKey, rotateSigningKey } from '../../src/tokens/signing-keys.js';
import { signingKeys } from '../../src/db/schema.js';
import { AccessTokens } from '../../src/tokens/access-token.js';
import { GrantOwners } from '../../src/tokens/grant-owners.js';
import { InvalidToken } from '../../src/oauth/errors.js';

describeEachDatabase('signing keys', (context) => {
  const grant = { userId: 1, clientId: 'c1', scope: 'products:read', grantId: 'g1' };

  it('publishes a current ES256 and RS256 key, and signs access tokens with the ES256 kid', async () => {
    const { runtime } = context();
    const jwks = await runtime.keys.jwks();
    expect(jwks.keys).toHaveLength(2);
    const es256 = jwks.keys.find((key) => key.alg === 'ES256')!;
    const rs256 = jwks.keys.find((key) => key.alg === 'RS256')!;
    expect(es256).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
    expect(rs256).toMatchObject({ kty: 'RSA', e: 'AQAB', alg: 'RS256', use: 'sig' });
    // 2048 bits: 256 bytes of modulus.
    expect(Buffer.from(rs256.n!, 'base64url')).toHaveLength(256);
    for (const key of jwks.keys) for (const member of ['d', 'p', 'q', 'dp', 'dq', 'qi']) expect(key).not.toHaveProperty(member);
    const issued = await runtime.accessTokens.issue(grant);
    expect(decodeProtectedHeader(issued.token)).toEqual({ alg: 'ES256', typ: 'at+jwt', kid: es256.kid });
    expect((await runtime.keys.signingKey('RS256')).kid).toBe(rs256.kid);
  });

  it('creates only the missing key at start, dated so that an instance of an earlier version keeps signing with ES256', async () => {
    const { runtime, config } = context();
    const rsa = (await runtime.keys.signingKey('RS256')).kid;
    const es256 = (await runtime.keys.signingKey('ES256')).kid;
    // A database from before RS256: only the ES256 key is current.
    await runtime.db.delete(signingKeys).where(eq(signingKeys.kid, rsa));
    await ensureSigningKey(runtime.db);
    await ensureSigningKey(runtime.db);
    const current = (await listSigningKeys(runtime.db, config.accessTokenTtl)).filter((key) => key.state === 'current');
    expect(current.map((key) => key.alg).sort()).toEqual(['ES256', 'RS256']);
    expect(current.find((key) => key.alg === 'ES256')?.kid).toBe(es256);
    expect(current.find((key) => key.alg === 'RS256')?.kid).not.toBe(rsa);
    // What such an instance picks: the newest current key.
    const [newest] = await runtime.db.select({ alg: signingKeys.alg }).from(signingKeys).where(isNull(signingKeys.retiredAt)).orderBy(desc(signingKeys.createdAt)).limit(1);
    expect(newest?.alg).toBe('ES256');
    await runtime.keys.invalidate();
  });

  it('refuses as invalid_token an access token signed with our RS256 key, or carrying its kid', async () => {
    const { runtime } = context();
    const { userId, clientId, grantId } = await issueTestToken(runtime);
    const { token } = await runtime.accessTokens.issue({ userId, clientId, scope: 'products:read', grantId });
    const claims = decodeJwt(token);
    const rsa = await runtime.keys.signingKey('RS256');
    expect(rsa.alg).toBe('RS256');
    // A well-formed RS256 token with every claim right: only the key's purpose is wrong.
    const rsaSigned = rsa.sign(claims, 'at+jwt');
    expect(decodeProtectedHeader(rsaSigned)).toMatchObject({ alg: 'RS256', kid: rsa.kid });
    // Our ES256 token with its header pointing at the RSA key.
    const [, payload, signature] = token.split('.');
    const header = Buffer.from(JSON.stringify({ ...decodeProtectedHeader(token), kid: rsa.kid })).toString('base64url');
    for (const forged of [rsaSigned, `${header}.${payload}.${signature}`]) {
      const error = await runtime.accessTokens.verify(forged).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(InvalidToken);
      expect((error as InvalidToken).code).toBe('invalid_token');
      expect(runtime.accessTokens.verifyFromCache(forged)).toBeUndefined();
    }
    // …and at a resource endpoint it is a 401 challenge, never a 500.
    const res = await request(context().app).get('/orders').set('Authorization', `Bearer ${rsaSigned}`);
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toMatch(/error="invalid_token"/);
  });

  it('rotates one algorithm without touching the other, and another instance signs with the new key after a reload', async () => {
    const { runtime, config } = context();
    const before = await runtime.keys.jwks();
    const es256 = (await runtime.keys.signingKey('ES256')).kid;
    const oldRsa = (await runtime.keys.signingKey('RS256')).kid;
    const rotated = await rotateSigningKey(runtime.db, config.accessTokenTtl, ['RS256']);
    expect(rotated.keys).toEqual([{ alg: 'RS256', kid: rotated.kid, retired: [oldRsa] }]);
    expect(rotated.retired).toEqual([oldRsa]);
    const current = (await listSigningKeys(runtime.db, config.accessTokenTtl)).filter((key) => key.state === 'current');
    expect(current.map((key) => [key.alg, key.kid]).sort()).toEqual([['ES256', es256], ['RS256', rotated.kid]]);

    // This instance meets the new kid (an ID Token hint, say) and reloads; the old RSA key stays published.
    expect((await runtime.keys.verificationKey(rotated.kid))?.alg).toBe('RS256');
    expect(runtime.keys.knows(rotated.kid)).toBe(true);
    expect(runtime.keys.knows(oldRsa)).toBe(true);
    expect((await runtime.keys.signingKey('RS256')).kid).toBe(rotated.kid);
    expect((await runtime.keys.signingKey('ES256')).kid).toBe(es256);
    expect((await runtime.keys.jwks()).keys.map((key) => key.kid)).toEqual(expect.arrayContaining([...before.keys.map((key) => key.kid!), rotated.kid]));

    // The default rotates both, and says which key replaced which.
    const both = await rotateSigningKey(runtime.db, config.accessTokenTtl);
    expect(both.keys.map((key) => key.alg)).toEqual(['ES256', 'RS256']);
    expect(both.keys.find((key) => key.alg === 'ES256')).toEqual({ alg: 'ES256', kid: both.kid, retired: [es256] });
    expect(both.keys.find((key) => key.alg === 'RS256')?.retired).toEqual([rotated.kid]);
    expect(both.retired.sort()).toEqual([es256, rotated.kid].sort());
    const other = new KeyStore(runtime.db, config.accessTokenTtl);
    expect((await other.signingKey()).kid).toBe(both.kid);
    expect((await other.signingKey('RS256')).kid).toBe(both.keys[1]!.kid);
  });

  it('retires, at the next full rotation, a current key of an algorithm it no longer makes (EdDSA from before ES256)', async () => {
    const { runtime, config } = context();
    const { generateKeyPair, exportJWK } = await import('jose');
    const { publicKey, privateKey } = await generateKeyPair('EdDSA', { extractable: true });
    await runtime.db.insert(signingKeys).values({ kid: 'legacy-eddsa', alg: 'EdDSA', publicJwk: { ...(await exportJWK(publicKey)), kid: 'legacy-eddsa' }, privateJwk: await exportJWK(privateKey) });
    // Rotating RS256 alone leaves it as it is; rotating the access-token key retires it (still published meanwhile).
    await rotateSigningKey(runtime.db, config.accessTokenTtl, ['RS256']);
    const state = async () => (await listSigningKeys(runtime.db, config.accessTokenTtl)).find((key) => key.kid === 'legacy-eddsa')?.state;
    expect(await state()).toBe('current');
    const rotated = await rotateSigningKey(runtime.db, config.accessTokenTtl);
    expect(rotated.retired).toContain('legacy-eddsa');
    expect(await state()).toBe('published');
  });

  it('replaces a withdrawn current key with a new one of the same algorithm (keys retire)', async () => {
    const { runtime, config } = context();
    const keys = new KeyStore(runtime.db, config.accessTokenTtl);
    const rsa = (await keys.signingKey('RS256')).kid;
    const es256 = (await keys.signingKey('ES256')).kid;
    const retired = await retireSigningKey(runtime.db, rsa, config.accessTokenTtl);
    expect(retired).toMatchObject({ retired: rsa, alg: 'RS256' });
    const listed = await listSigningKeys(runtime.db, config.accessTokenTtl);
    expect(listed.map((key) => key.kid)).not.toContain(rsa);
    const current = listed.filter((key) => key.state === 'current');
    expect(current.map((key) => [key.alg, key.kid]).sort()).toEqual([['ES256', es256], ['RS256', retired!.current]]);
    await keys.invalidate();
    expect(keys.knows(rsa)).toBe(false);
    expect((await keys.signingKey('RS256')).kid).toBe(retired!.current);
    expect((await keys.signingKey('ES256')).kid).toBe(es256);
  });

  it('after a rotation elsewhere, verifies new tokens at once and keeps verifying old ones', async () => {
    const { runtime, config } = context();
    // Verification checks that the grant still exists, so these tokens need a real one.
    const { userId, clientId, grantId } = await issueTestToken(runtime);
    const live = { userId, clientId, scope: 'products:read', grantId };
    const old = await runtime.accessTokens.issue(live);
    // This instance reloads its key set (its periodic reload, say) just before the rotation commits.
    await runtime.keys.invalidate();
    const { kid } = await rotateSigningKey(runtime.db, config.accessTokenTtl);

    // Another instance, which already knows the new key, signs with it.
    const otherKeys = new KeyStore(runtime.db, config.accessTokenTtl);
    const other = new AccessTokens(otherKeys, runtime.revocations, { issuer: config.issuer, audience: config.issuer, ttlSeconds: 60 }, new GrantOwners(runtime.db));
    const fresh = await other.issue(live);
    expect(decodeProtectedHeader(fresh.token).kid).toBe(kid);

    // Its key set is a moment old and lacks the new key: the unknown kid makes it load the set again, not refuse the token.
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

  it('answers an unknown kid after the next reload even when the wall clock is set back while it waits', async () => {
    const { runtime, config } = context();
    const keys = new KeyStore(runtime.db, config.accessTokenTtl);
    await keys.jwks();
    // Loaded a moment ago: the kid waits for the next reload, allowed a second after the last one.
    const pending = keys.verificationKey('no-such-kid');
    vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
    vi.setSystemTime(Date.now() - 3_600_000);
    const answer = await Promise.race([pending.then(() => 'answered'), new Promise((resolve) => setTimeout(resolve, 5_000, 'still waiting'))]);
    expect(answer).toBe('answered');
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
