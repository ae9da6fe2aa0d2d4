/**
 * grant_type=refresh_token: rotation, reuse detection
 * revoking the whole family (refresh and access tokens), client binding, scope narrowing,
 * lifetime, hashing, concurrency, and the optional REFRESH_TOKEN_REUSE_GRACE.
 */
import { beforeAll, expect, it } from 'vitest';
import { and, eq, isNull } from 'drizzle-orm';
import { grants, refreshTokens } from '../../../src/db/schema.js';
import { authenticateBearer } from '../../../src/tokens/bearer.js';
import { sha256 } from '../../../src/crypto/secrets.js';
import { describeEachDatabase } from '../../support/runtime.js';
import { buildClient, buildTokenCast, buildUser, obtainTokens, securityEvents, tokenRequest, type TestClient, type TestUser } from '../../support/oauth.js';

describeEachDatabase('refresh_token grant', (context) => {
  let client: TestClient;
  let other: TestClient;
  let publicClient: TestClient;
  let user: TestUser;

  beforeAll(async () => {
    ({ client, other, publicClient, user } = await buildTokenCast(context().runtime));
  });

  const refresh = (target: TestClient, refreshToken: string, scope?: string) =>
    tokenRequest(context().app, { grant_type: 'refresh_token', refresh_token: refreshToken, scope }, target);
  const tokens = (target = client) => obtainTokens(context().app, context().runtime, target, user);
  const accepts = (accessToken: string) => authenticateBearer(context().runtime.accessTokens, `Bearer ${accessToken}`);

  it('rotates: each use returns a new access token and a new refresh token', async () => {
    const first = await tokens();
    const res = await refresh(client, first.refresh_token);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ token_type: 'Bearer', scope: first.scope, expires_in: context().config.accessTokenTtl });
    expect(res.body.refresh_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(res.body.refresh_token).not.toBe(first.refresh_token);
    expect(res.body.access_token).not.toBe(first.access_token);
    const again = await refresh(client, res.body.refresh_token);
    expect(again.status).toBe(200);
  });

  it('stores refresh tokens only as hashes, with REFRESH_TOKEN_TTL', async () => {
    const { runtime, config } = context();
    const { refresh_token } = await tokens();
    const [row] = await runtime.db.select().from(refreshTokens).where(eq(refreshTokens.tokenHash, sha256(refresh_token)));
    expect(row).toBeDefined();
    expect(JSON.stringify(row)).not.toContain(refresh_token);
    expect((row!.expiresAt.getTime() - row!.createdAt.getTime()) / 1000).toBeCloseTo(config.refreshTokenTtl, 0);
  });

  it('reuse of a retired token is invalid_grant and revokes the whole family', async () => {
    const { runtime, logs } = context();
    const first = await tokens();
    const rotated = await refresh(client, first.refresh_token);
    await accepts(rotated.body.access_token);

    const reuse = await refresh(client, first.refresh_token);
    expect(reuse.status).toBe(400);
    expect(reuse.body.error).toBe('invalid_grant');

    // Every refresh token of the family is dead, and so is every access token (resource side).
    expect((await refresh(client, rotated.body.refresh_token)).body.error).toBe('invalid_grant');
    await expect(accepts(first.access_token)).rejects.toMatchObject({ code: 'invalid_token' });
    await expect(accepts(rotated.body.access_token)).rejects.toMatchObject({ code: 'invalid_token' });
    const [grant] = await runtime.db.select().from(grants).where(eq(grants.id, first.grantId));
    expect(grant!.revokedAt).not.toBeNull();
    expect(securityEvents(logs.lines, 'refresh_token_reuse_detected')).toContainEqual(
      expect.objectContaining({ clientId: client.id, userId: user.id, grantId: first.grantId }),
    );
    expect(logs.text).not.toContain(first.refresh_token);
  });

  it('is bound to its client: another client gets invalid_grant and the token stays usable', async () => {
    const { refresh_token } = await tokens();
    const stolen = await refresh(other, refresh_token);
    expect(stolen.status).toBe(400);
    expect(stolen.body.error).toBe('invalid_grant');
    expect((await refresh(client, refresh_token)).status).toBe(200);
  });

  it('an unknown refresh token is invalid_grant', async () => {
    expect((await refresh(client, 'x'.repeat(43))).body.error).toBe('invalid_grant');
  });

  it('a missing refresh_token is invalid_request', async () => {
    const res = await tokenRequest(context().app, { grant_type: 'refresh_token' }, client);
    expect(res.body.error).toBe('invalid_request');
  });

  it('an expired refresh token is invalid_grant', async () => {
    const { runtime } = context();
    const { refresh_token } = await tokens();
    await runtime.db
      .update(refreshTokens)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(refreshTokens.tokenHash, sha256(refresh_token)));
    const res = await refresh(client, refresh_token);
    expect(res.body.error).toBe('invalid_grant');
    expect(res.body.error_description).toMatch(/expired/);
  });

  it('may narrow the scope; the next refresh may ask for the original scope again', async () => {
    const { refresh_token, scope } = await tokens();
    expect(scope).toBe('products:read orders:read');
    const narrowed = await refresh(client, refresh_token, 'orders:read');
    expect(narrowed.status).toBe(200);
    expect(narrowed.body.scope).toBe('orders:read');
    const principal = await accepts(narrowed.body.access_token);
    expect([...principal.scopes]).toEqual(['orders:read']);
    const full = await refresh(client, narrowed.body.refresh_token);
    expect(full.body.scope).toBe('products:read orders:read');
  });

  it('a scope beyond the original grant is invalid_scope, and the token is not used up', async () => {
    const { refresh_token } = await tokens();
    const res = await refresh(client, refresh_token, 'orders:read orders:write');
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_scope');
    expect((await refresh(client, refresh_token)).status).toBe(200);
  });

  it('a retired token asking for a wider scope or an unknown resource is still reuse, and revokes the family (RFC 9700 §4.14.2)', async () => {
    for (const extra of [{ scope: 'orders:read orders:write' }, { resource: 'https://unknown.example/api' }]) {
      const first = await tokens();
      const rotated = await refresh(client, first.refresh_token);
      expect(rotated.status).toBe(200);
      const replay = await tokenRequest(context().app, { grant_type: 'refresh_token', refresh_token: first.refresh_token, ...extra }, client);
      expect(replay.body).toMatchObject({ error: 'invalid_grant', error_description: 'the refresh token has already been used; every token of its grant is now revoked' });
      expect((await refresh(client, rotated.body.refresh_token)).body.error).toBe('invalid_grant');
      await expect(accepts(rotated.body.access_token)).rejects.toMatchObject({ code: 'invalid_token' });
    }
  });

  it('works for public clients (client_id only), with rotation', async () => {
    const first = await tokens(publicClient);
    const res = await refresh(publicClient, first.refresh_token);
    expect(res.status).toBe(200);
    expect((await refresh(publicClient, first.refresh_token)).body.error).toBe('invalid_grant');
  });

  it('rotation is atomic: of concurrent uses of one token at most one succeeds', async () => {
    const { refresh_token } = await tokens();
    const results = await Promise.all(Array.from({ length: 8 }, () => refresh(client, refresh_token)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.status !== 200).every((r) => r.body.error === 'invalid_grant')).toBe(true);
  });

  it('a revoked grant refuses further refreshes', async () => {
    const { refresh_token, grantId } = await tokens();
    await context().runtime.revocations.revokeGrant(grantId);
    expect((await refresh(client, refresh_token)).body.error).toBe('invalid_grant');
  });
});

describeEachDatabase(
  'refresh_token grant with REFRESH_TOKEN_REUSE_GRACE',
  (context) => {
    let client: TestClient;
    let user: TestUser;

    beforeAll(async () => {
      client = await buildClient(context().runtime);
      user = await buildUser(context().runtime);
    });

    const refresh = (refreshToken: string) => tokenRequest(context().app, { grant_type: 'refresh_token', refresh_token: refreshToken }, client);

    const liveTokens = async (grantId: string) =>
      context()
        .runtime.db.select()
        .from(refreshTokens)
        .where(and(eq(refreshTokens.grantId, grantId), isNull(refreshTokens.consumedAt)));

    it('a retry with the just-retired token within the window gets the same successor, and the family survives', async () => {
      const { runtime, logs } = context();
      const first = await obtainTokens(context().app, runtime, client, user);
      const rotated = await refresh(first.refresh_token);
      expect(rotated.status).toBe(200);
      const retry = await refresh(first.refresh_token); // the lost-response retry
      expect(retry.status).toBe(200);
      expect(retry.body.refresh_token).toBe(rotated.body.refresh_token);
      expect(await liveTokens(first.grantId)).toHaveLength(1);
      await authenticateBearer(runtime.accessTokens, `Bearer ${rotated.body.access_token}`);
      await authenticateBearer(runtime.accessTokens, `Bearer ${retry.body.access_token}`);
      expect((await refresh(retry.body.refresh_token)).status).toBe(200);
      expect(securityEvents(logs.lines, 'refresh_token_reuse_within_grace')).toHaveLength(1);
    });

    it('a retry within the window that asks for more than the grant is refused as such, and the family survives', async () => {
      const first = await obtainTokens(context().app, context().runtime, client, user);
      const rotated = await refresh(first.refresh_token);
      const wider = await tokenRequest(context().app, { grant_type: 'refresh_token', refresh_token: first.refresh_token, scope: 'orders:read orders:write' }, client);
      expect(wider.body.error).toBe('invalid_scope');
      expect((await refresh(rotated.body.refresh_token)).status).toBe(200);
    });

    it('presenting a retired token again and again never opens a second live branch', async () => {
      const first = await obtainTokens(context().app, context().runtime, client, user);
      const rotated = await refresh(first.refresh_token);
      const retries = await Promise.all(Array.from({ length: 5 }, () => refresh(first.refresh_token)));
      for (const retry of retries) expect(retry.body.refresh_token).toBe(rotated.body.refresh_token);
      expect(await liveTokens(first.grantId)).toHaveLength(1);
      // Every retry's successor is the one family: using it retires the old token for good.
      const next = await refresh(rotated.body.refresh_token);
      expect(next.status).toBe(200);
      expect((await refresh(first.refresh_token)).body.error).toBe('invalid_grant');
      expect((await refresh(next.body.refresh_token)).body.error).toBe('invalid_grant');
    });

    it('parallel refreshes of one token all get the same successor; one live token remains', async () => {
      const first = await obtainTokens(context().app, context().runtime, client, user);
      const results = await Promise.all(Array.from({ length: 12 }, () => refresh(first.refresh_token)));
      const successors = new Set(results.filter((res) => res.status === 200).map((res) => res.body.refresh_token as string));
      expect(results.every((res) => res.status === 200)).toBe(true);
      expect(successors.size).toBe(1);
      const live = await liveTokens(first.grantId);
      expect(live).toHaveLength(1);
      expect(live[0]!.tokenHash).toBe(sha256([...successors][0]!));
    });

    it('once a later token of the family has been used, the old one is reuse again and revokes the family', async () => {
      const first = await obtainTokens(context().app, context().runtime, client, user);
      const second = await refresh(first.refresh_token);
      const third = await refresh(second.body.refresh_token);
      expect(third.status).toBe(200);
      const reuse = await refresh(first.refresh_token);
      expect(reuse.body.error).toBe('invalid_grant');
      expect((await refresh(third.body.refresh_token)).body.error).toBe('invalid_grant');
    });

    it('after the window the retired token is reuse and revokes the family', async () => {
      const { runtime } = context();
      const first = await obtainTokens(context().app, runtime, client, user);
      const rotated = await refresh(first.refresh_token);
      await runtime.db
        .update(refreshTokens)
        .set({ consumedAt: new Date(Date.now() - 10_000) })
        .where(eq(refreshTokens.tokenHash, sha256(first.refresh_token)));
      expect((await refresh(first.refresh_token)).body.error).toBe('invalid_grant');
      expect((await refresh(rotated.body.refresh_token)).body.error).toBe('invalid_grant');
    });
  },
  { REFRESH_TOKEN_REUSE_GRACE: '5' },
);
