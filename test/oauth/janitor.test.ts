/**
 * The janitor: deletes exactly the rows that are due (and keeps those replay and reuse detection
 * still need), in bounded batches, once across concurrent sweeps, and keeps table sizes flat
 * under a steady flow of authorizations.
 */
import { expect, it } from 'vitest';
import { count, eq, inArray, sql } from 'drizzle-orm';
import { grants, loginThrottle, refreshTokens, revokedAccessTokens, usedJtis, idempotencyKeys, deviceCodes, endedSessions } from '../../src/db/schema.js';
import { DeviceCodeStore } from '../../src/oauth/stores/device-codes.js';
import { DEVICE_CODE_GRANT_TYPE } from '../../src/oauth/stores/clients.js';
import { sweep, sweptRows, type JanitorPolicy } from '../../src/oauth/janitor.js';
import { randomToken, sha256 } from '../../src/crypto/secrets.js';
import type { Db } from '../../src/db/database.js';
import type { Runtime } from '../../src/runtime.js';
import { TEST_DATABASE_URL } from '../support/databases.js';
import { openDatabase } from '../../src/db/database.js';
import { describeEachDatabase } from '../support/runtime.js';
import { buildClient, buildUser, codeStore, issueCode, obtainTokens, tokenRequest, type TestClient, type TestUser } from '../support/oauth.js';

const rows = async (db: Db, table: typeof grants | typeof refreshTokens, clientId?: string) =>
  (await db.select({ n: count() }).from(table).where(clientId === undefined ? undefined : eq(table.clientId, clientId)))[0]!.n;

/** A code redeemed through the store without a refresh token: its grant row is all it leaves in the database. */
async function redeemWithoutRefreshToken(runtime: Runtime, client: TestClient, user: TestUser) {
  const issued = await issueCode(runtime, client, user);
  expect((await codeStore(runtime).redeem(issued.code, client.id))?.grantId).toBe(issued.grantId);
  return issued;
}

describeEachDatabase('janitor', (context) => {
  const policy: JanitorPolicy = { retentionSeconds: 3600, accessTokenTtl: 60, authCodeTtl: 600, batchSize: 2 };

  it('deletes what is due and keeps what replay and reuse detection still need', async () => {
    const { runtime, app } = context();
    const db = runtime.db;
    const client = await buildClient(runtime);
    const user = await buildUser(runtime);
    const ago = (seconds: number) => sql`now() - make_interval(secs => ${seconds})`;

    // Grants of codes redeemed without a refresh token: three created long ago (due), one past the code's lifetime but
    // within the retention (kept), and a code just redeemed at /token (kept: presented again, it must read as a replay).
    const expired = await Promise.all([1, 2, 3].map(() => redeemWithoutRefreshToken(runtime, client, user)));
    await db.update(grants).set({ createdAt: ago(2 * 86_400) }).where(inArray(grants.id, expired.map((c) => c.grantId)));
    const recent = await redeemWithoutRefreshToken(runtime, client, user);
    await db.update(grants).set({ createdAt: ago(1800) }).where(eq(grants.id, recent.grantId));
    const used = await issueCode(runtime, client, user);
    const redeemed = await tokenRequest(app, { grant_type: 'authorization_code', code: used.code, redirect_uri: client.redirectUri, code_verifier: used.verifier }, client);
    expect(redeemed.status).toBe(200);

    // Refresh tokens: a rotated one (kept: reuse must still be detected), one long expired (due).
    const rotatedFamily = await obtainTokens(app, runtime, client, user);
    const rotation = await tokenRequest(app, { grant_type: 'refresh_token', refresh_token: rotatedFamily.refresh_token }, client);
    expect(rotation.status).toBe(200);
    const deadFamily = await obtainTokens(app, runtime, client, user);
    await db.update(refreshTokens).set({ expiresAt: ago(2 * 86_400) }).where(eq(refreshTokens.grantId, deadFamily.grantId));
    await db.update(grants).set({ createdAt: ago(2 * 86_400) }).where(eq(grants.id, deadFamily.grantId));

    // Grants: one revoked long ago (due, with its tokens), one revoked just now (kept: its access tokens must keep failing).
    const oldRevoked = await obtainTokens(app, runtime, client, user);
    await db.update(grants).set({ createdAt: ago(3 * 86_400), revokedAt: ago(2 * 86_400) }).where(eq(grants.id, oldRevoked.grantId));
    const newRevoked = await obtainTokens(app, runtime, client, user);
    await runtime.revocations.revokeGrant(newRevoked.grantId);

    // Revoked access tokens and throttle counters.
    await db.insert(revokedAccessTokens).values([
      { jti: 'gone', expiresAt: ago(1) },
      { jti: 'live', expiresAt: sql`now() + interval '1 hour'` },
    ]);
    await db.insert(loginThrottle).values([
      { key: 'ip:stale', failures: 3, windowStartedAt: ago(2 * 86_400) },
      { key: 'ip:locked', failures: 30, windowStartedAt: ago(2 * 86_400), lockedUntil: sql`now() + interval '1 hour'` },
      { key: 'ip:fresh', failures: 1 },
    ]);
    // RFC 9449 §11.1, RFC 7523 §3: a jti is remembered only while its JWT could still be accepted.
    await db.insert(usedJtis).values([
      { signer: 'dpop:stale', jtiHash: 'a', expiresAt: ago(1) },
      { signer: 'dpop:live', jtiHash: 'b', expiresAt: sql`now() + interval '1 minute'` },
    ]);
    // Idempotency keys: one past its 24 hours (due), one live.
    await db.insert(idempotencyKeys).values([
      { userId: user.id, clientId: client.id, key: 'expired', requestHash: 'h', expiresAt: ago(1) },
      { userId: user.id, clientId: client.id, key: 'live', requestHash: 'h', expiresAt: sql`now() + interval '1 hour'` },
    ]);

    // Ended sessions: kept while a copy of the cookie could still be presented, and for the retention after (clock skew).
    await db.insert(endedSessions).values([
      { sid: 'ended-expired', expiresAt: ago(1) },
      { sid: 'ended-long-ago', expiresAt: ago(2 * 86_400) },
      { sid: 'ended-live', expiresAt: sql`now() + interval '1 hour'` },
    ]);

    const result = await sweep(db, policy);
    expect(result).toEqual({
      deviceCodes: 0,
      refreshTokens: 1,
      grants: 3 /* old codes' */ + 1 /* dead family */ + 1 /* revoked long ago */,
      revokedAccessTokens: 1,
      loginThrottle: 1,
      usedJtis: 1,
      endedSessions: 1,
      idempotencyKeys: 1,
      unusedClients: 0,
      skipped: false,
    });
    expect(sweptRows(await sweep(db, policy))).toBe(0);

    const grantIds = (await db.select({ id: grants.id }).from(grants)).map((g) => g.id).sort();
    expect(grantIds).toEqual([recent.grantId, used.grantId, rotatedFamily.grantId, newRevoked.grantId].sort());
    expect((await db.select({ key: loginThrottle.key }).from(loginThrottle)).map((r) => r.key).sort()).toEqual(['ip:fresh', 'ip:locked']);
    expect((await db.select({ signer: usedJtis.signer }).from(usedJtis)).map((r) => r.signer)).toEqual(['dpop:live']);
    expect((await db.select({ jti: revokedAccessTokens.jti }).from(revokedAccessTokens)).map((r) => r.jti)).toEqual(['live']);
    expect((await db.select({ sid: endedSessions.sid }).from(endedSessions)).map((r) => r.sid).sort()).toEqual(['ended-expired', 'ended-live']);
    expect((await db.select({ key: idempotencyKeys.key }).from(idempotencyKeys).where(eq(idempotencyKeys.clientId, client.id))).map((r) => r.key)).toEqual(['live']);

    // The used codes still read as replayed, and the rotated refresh token's reuse still revokes its family.
    const codes = codeStore(runtime);
    expect((await codes.diagnose(used.code, client.id)).reason).toBe('replayed');
    expect((await codes.diagnose(recent.code, client.id)).reason).toBe('replayed');
    const reuse = await tokenRequest(app, { grant_type: 'refresh_token', refresh_token: rotatedFamily.refresh_token }, client);
    expect(reuse.body.error_description).toMatch(/already been used/);
    // The recently revoked grant still revokes its access token.
    const [revoked] = await db.select().from(grants).where(eq(grants.id, newRevoked.grantId));
    expect(revoked?.revokedAt).not.toBeNull();
    expect(await db.select().from(refreshTokens).where(eq(refreshTokens.tokenHash, sha256(deadFamily.refresh_token)))).toEqual([]);
  });

  it('deletes expired device codes after the retention, and client_credentials grants once their tokens have expired', async () => {
    const { runtime, app } = context();
    const db = runtime.db;
    const ago = (seconds: number) => sql`now() - make_interval(secs => ${seconds})`;
    const tv = await buildClient(runtime, { redirectUris: [], isPublic: true, grantTypes: [DEVICE_CODE_GRANT_TYPE] });
    const store = new DeviceCodeStore(db, runtime.config.deviceCodeTtl);
    const [old, recent, live] = await Promise.all([1, 2, 3].map(() => store.issue(tv.id, 'products:read')));
    await db.update(deviceCodes).set({ expiresAt: ago(2 * 86_400) }).where(eq(deviceCodes.deviceCodeHash, sha256(old!.deviceCode)));
    await db.update(deviceCodes).set({ expiresAt: ago(60) }).where(eq(deviceCodes.deviceCodeHash, sha256(recent!.deviceCode)));

    const service = await buildClient(runtime, { redirectUris: [], grantTypes: ['client_credentials'] });
    const machine = async () => (await runtime.accessTokens.verify((await tokenRequest(app, { grant_type: 'client_credentials' }, service)).body.access_token)).grantId;
    const [stale, fresh] = [await machine(), await machine()];
    await db.update(grants).set({ createdAt: ago(2 * 86_400) }).where(eq(grants.id, stale));

    const result = await sweep(db, policy);
    expect(result.deviceCodes).toBe(1);
    const left = (await db.select({ hash: deviceCodes.deviceCodeHash }).from(deviceCodes).where(eq(deviceCodes.clientId, tv.id))).map((r) => r.hash).sort();
    expect(left).toEqual([sha256(recent!.deviceCode), sha256(live!.deviceCode)].sort());
    const machineGrants = (await db.select({ id: grants.id }).from(grants).where(eq(grants.clientId, service.id))).map((g) => g.id);
    expect(machineGrants).toEqual([fresh]);
  });

  it('keeps table sizes flat under a steady flow of authorizations at short lifetimes', async () => {
    const { runtime, app } = context();
    const db = runtime.db;
    const client = await buildClient(runtime);
    const user = await buildUser(runtime);
    const shortLived: JanitorPolicy = { retentionSeconds: 0, accessTokenTtl: 1, authCodeTtl: 1, batchSize: 7 };
    const short = sql`now() + interval '1 second'`;
    const size = async () => (await rows(db, grants, client.id)) + (await rows(db, refreshTokens, client.id));
    const perRound = 10;
    const sizes: number[] = [];
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < perRound; i++) {
        const family = await obtainTokens(app, runtime, client, user);
        const refreshed = await tokenRequest(app, { grant_type: 'refresh_token', refresh_token: family.refresh_token }, client);
        expect(refreshed.status).toBe(200);
        await db.update(refreshTokens).set({ expiresAt: short }).where(eq(refreshTokens.grantId, family.grantId));
      }
      // A grant and its two refresh tokens (the first and the rotated one) per authorization.
      expect(await size()).toBe(3 * perRound);
      // Everything of this round has expired and passed the one-second retention and code lifetime.
      await new Promise((resolve) => setTimeout(resolve, 2_200));
      const result = await sweep(db, shortLived);
      expect(result.grants).toBeGreaterThanOrEqual(perRound);
      sizes.push(await size());
    }
    expect(sizes).toEqual([0, 0, 0]);
  });

  it('keeps a redeemed code’s grant, revoked or not, as long as the code lives, even with no retention', async () => {
    const { runtime, app } = context();
    const db = runtime.db;
    const client = await buildClient(runtime);
    const user = await buildUser(runtime);
    const ago = (seconds: number) => sql`now() - make_interval(secs => ${seconds})`;
    const codeTtl = 600;
    const noRetention: JanitorPolicy = { retentionSeconds: 0, accessTokenTtl: 0, authCodeTtl: codeTtl, batchSize: 10 };
    const left = async () => (await db.select({ id: grants.id }).from(grants).where(eq(grants.clientId, client.id))).map((g) => g.id).sort();

    // Two redeemed codes, neither grant holding a refresh token: nothing but the code's lifetime keeps them. Both were
    // created within it; one was also revoked, well past the (zero) retention.
    const live = await redeemWithoutRefreshToken(runtime, client, user);
    const revoked = await redeemWithoutRefreshToken(runtime, client, user);
    await runtime.revocations.revokeGrant(revoked.grantId);
    await db.update(grants).set({ createdAt: ago(codeTtl - 60) }).where(inArray(grants.id, [live.grantId, revoked.grantId]));
    await db.update(grants).set({ revokedAt: ago(codeTtl - 120) }).where(eq(grants.id, revoked.grantId));

    await sweep(db, noRetention);
    expect(await left()).toEqual([live.grantId, revoked.grantId].sort());
    const codes = codeStore(runtime);
    expect((await codes.diagnose(revoked.code, client.id)).reason).toBe('replayed');
    // Presented again at /token, the code is still seen as a replay, and revokes its grant.
    const replay = await tokenRequest(app, { grant_type: 'authorization_code', code: live.code, redirect_uri: client.redirectUri, code_verifier: live.verifier }, client);
    expect(replay.status).toBe(400);
    expect(replay.body.error_description).toMatch(/already been used/);
    const [replayed] = await db.select({ revokedAt: grants.revokedAt }).from(grants).where(eq(grants.id, live.grantId));
    expect(replayed?.revokedAt).not.toBeNull();

    // Once created longer ago than a code lives (and revoked past the retention), both go.
    await db.update(grants).set({ createdAt: ago(codeTtl + 60), revokedAt: ago(30) }).where(inArray(grants.id, [live.grantId, revoked.grantId]));
    await sweep(db, noRetention);
    expect(await left()).toEqual([]);
  });
});

it.runIf(TEST_DATABASE_URL)('two concurrent sweeps on PostgreSQL delete each row once and both succeed', async () => {
  const { createTestRuntime } = await import('../support/runtime.js');
  const context = await createTestRuntime('postgres');
  const second = await openDatabase({ databaseUrl: context.testDatabase.url!, poolSize: 3 });
  try {
    const { runtime } = context;
    const client = await buildClient(runtime);
    const user = await buildUser(runtime);
    // 60 redeemed codes, each grant with a refresh token; both long expired.
    const codes = codeStore(runtime);
    await Promise.all(
      Array.from({ length: 60 }, async () => {
        const { code } = await issueCode(runtime, client, user);
        const refreshToken = { tokenHash: sha256(randomToken()), ttlSeconds: 3600, dpopJkt: null };
        expect(await codes.redeem(code, client.id, refreshToken)).toBeDefined();
      }),
    );
    expect(await rows(runtime.db, refreshTokens)).toBe(60);
    await runtime.db.update(refreshTokens).set({ expiresAt: sql`now() - interval '2 days'` });
    await runtime.db.update(grants).set({ createdAt: sql`now() - interval '2 days'` });
    const policy: JanitorPolicy = { retentionSeconds: 3600, accessTokenTtl: 60, authCodeTtl: 600, batchSize: 5 };
    const results = await Promise.all([sweep(runtime.db, policy), sweep(second.db, policy), sweep(runtime.db, policy), sweep(second.db, policy)]);
    const left = await sweep(runtime.db, policy);
    const total = (key: 'refreshTokens' | 'grants') => [...results, left].reduce((sum, r) => sum + r[key], 0);
    expect(total('refreshTokens')).toBe(60);
    expect(total('grants')).toBe(60);
    expect(await rows(runtime.db, refreshTokens)).toBe(0);
    expect(await rows(runtime.db, grants)).toBe(0);
  } finally {
    await second.close();
    await context.close();
  }
});
