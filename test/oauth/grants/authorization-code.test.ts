/**
 * grant_type=authorization_code (RFC 9700 hardening): redirect URI and
 * PKCE checks, single use with atomic redemption, replay revoking the family, codes bound to
 * their client, expiry — including the attacks: replay, client A's code redeemed by client B,
 * redirect URI tricks and the PKCE downgrade.
 */
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { UserStore } from '../../../src/oauth/stores/users.js';
import { eq } from 'drizzle-orm';
import { grants, refreshTokens } from '../../../src/db/schema.js';
import { Sealer } from '../../../src/crypto/sealed.js';
import { ConsentStore } from '../../../src/oauth/stores/consents.js';
import { authenticateBearer } from '../../../src/tokens/bearer.js';
import { describeEachDatabase } from '../../support/runtime.js';
import {
  authorizeParams,
  Browser,
  buildTokenCast,
  buildUser,
  issueCode,
  redirectParams,
  securityEvents,
  tokenRequest,
  type TestClient,
  type TestUser,
} from '../../support/oauth.js';

describeEachDatabase('authorization_code grant', (context) => {
  let clientA: TestClient;
  let clientB: TestClient;
  let publicClient: TestClient;
  let user: TestUser;

  beforeAll(async () => {
    ({ client: clientA, other: clientB, publicClient, user } = await buildTokenCast(context().runtime));
  });

  const redeem = (client: TestClient, fields: Record<string, string | undefined>) =>
    tokenRequest(context().app, { grant_type: 'authorization_code', ...fields }, client);

  it('redeems a code obtained through the pages for tokens of the consented scope', async () => {
    const params = authorizeParams(clientA, { scope: 'orders:read' });
    const res = await new Browser(context().app).authorize(params, user);
    const code = redirectParams(res).get('code')!;
    const tokens = await redeem(clientA, { code, redirect_uri: clientA.redirectUri, code_verifier: params.verifier });
    expect(tokens.status).toBe(200);
    expect(tokens.body.scope).toBe('orders:read');
    const principal = await authenticateBearer(context().runtime.accessTokens, `Bearer ${tokens.body.access_token}`);
    expect(principal).toMatchObject({ userId: user.id, clientId: clientA.id });
  });

  it('a missing code is invalid_request', async () => {
    const res = await redeem(clientA, { redirect_uri: clientA.redirectUri });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
  });

  it('an unknown code is invalid_grant', async () => {
    const res = await redeem(clientA, { code: 'not-a-code', redirect_uri: clientA.redirectUri });
    expect(res.body.error).toBe('invalid_grant');
  });

  describe('redirect_uri', () => {
    it('is required when the authorization request sent it', async () => {
      const { code, verifier } = await issueCode(context().runtime, clientA, user);
      const res = await redeem(clientA, { code, code_verifier: verifier });
      expect(res.body.error).toBe('invalid_grant');
    });

    it.each([
      ['a different URI', 'https://attacker.example/callback'],
      ['a prefix', 'PREFIX'],
      ['a suffix', 'SUFFIX'],
      ['a trailing slash', 'SLASH'],
    ])('must equal the earlier value: %s is invalid_grant', async (_name, kind) => {
      const { code, verifier } = await issueCode(context().runtime, clientA, user);
      const registered = clientA.redirectUri;
      const redirectUri = { PREFIX: registered.slice(0, -2), SUFFIX: `${registered}x`, SLASH: `${registered}/` }[kind] ?? kind;
      const res = await redeem(clientA, { code, redirect_uri: redirectUri, code_verifier: verifier });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_grant');
    });

    it('may be omitted when the authorization request did not send it', async () => {
      const { code, verifier } = await issueCode(context().runtime, clientA, user, { redirectUri: null });
      expect((await redeem(clientA, { code, code_verifier: verifier })).status).toBe(200);
    });

    it('if sent anyway after being omitted, must be the registered one', async () => {
      const first = await issueCode(context().runtime, clientA, user, { redirectUri: null });
      expect((await redeem(clientA, { code: first.code, redirect_uri: clientA.redirectUri, code_verifier: first.verifier })).status).toBe(200);
      const second = await issueCode(context().runtime, clientA, user, { redirectUri: null });
      const res = await redeem(clientA, { code: second.code, redirect_uri: 'https://attacker.example/', code_verifier: second.verifier });
      expect(res.body.error).toBe('invalid_grant');
    });
  });

  describe('PKCE', () => {
    it('verifies S256', async () => {
      const { code, verifier } = await issueCode(context().runtime, clientA, user);
      expect((await redeem(clientA, { code, redirect_uri: clientA.redirectUri, code_verifier: verifier })).status).toBe(200);
    });

    it('a wrong verifier is invalid_grant, and the code is used up', async () => {
      const { code, verifier } = await issueCode(context().runtime, clientA, user);
      const wrong = await redeem(clientA, { code, redirect_uri: clientA.redirectUri, code_verifier: `${verifier.slice(0, -1)}${verifier.endsWith('A') ? 'B' : 'A'}` });
      expect(wrong.body.error).toBe('invalid_grant');
      const retry = await redeem(clientA, { code, redirect_uri: clientA.redirectUri, code_verifier: verifier });
      expect(retry.body.error).toBe('invalid_grant');
      // No token was issued from it: the answer must not say there were some.
      expect(retry.body.error_description).toBe('the authorization code has already been used; any tokens issued from it are revoked');
    });

    it('a failed check stores no refresh token: the one minted with the redemption is discarded', async () => {
      const { db } = context().runtime;
      const before = await db.$count(refreshTokens);
      const { code, verifier } = await issueCode(context().runtime, clientA, user);
      const wrong = await redeem(clientA, { code, redirect_uri: `${clientA.redirectUri}x`, code_verifier: verifier });
      expect(wrong.body.error).toBe('invalid_grant');
      expect(await db.$count(refreshTokens)).toBe(before);
      const { code: good, verifier: goodVerifier } = await issueCode(context().runtime, clientA, user);
      const ok = await redeem(clientA, { code: good, redirect_uri: clientA.redirectUri, code_verifier: goodVerifier });
      expect(ok.status).toBe(200);
      expect(await db.$count(refreshTokens)).toBe(before + 1);
    });

    it('downgrade attack: a challenge was sent but the verifier is omitted → invalid_grant', async () => {
      const { code } = await issueCode(context().runtime, clientA, user);
      const res = await redeem(clientA, { code, redirect_uri: clientA.redirectUri });
      expect(res.body.error).toBe('invalid_grant');
      expect(res.body.error_description).toMatch(/code_verifier is required/);
    });

    it('downgrade attack: a verifier for a code issued without a challenge → invalid_grant', async () => {
      const { code, verifier } = await issueCode(context().runtime, clientA, user, { codeChallenge: null, codeChallengeMethod: null });
      const res = await redeem(clientA, { code, redirect_uri: clientA.redirectUri, code_verifier: verifier });
      expect(res.body.error).toBe('invalid_grant');
    });

    it('is optional for a confidential client that sent no challenge', async () => {
      const { code } = await issueCode(context().runtime, clientA, user, { codeChallenge: null, codeChallengeMethod: null });
      expect((await redeem(clientA, { code, redirect_uri: clientA.redirectUri })).status).toBe(200);
    });

    it('is required for a public client', async () => {
      const ok = await issueCode(context().runtime, publicClient, user);
      expect((await redeem(publicClient, { code: ok.code, redirect_uri: publicClient.redirectUri, code_verifier: ok.verifier })).status).toBe(200);
      const without = await issueCode(context().runtime, publicClient, user, { codeChallenge: null, codeChallengeMethod: null });
      expect((await redeem(publicClient, { code: without.code, redirect_uri: publicClient.redirectUri })).body.error).toBe('invalid_grant');
    });

    it('a malformed verifier (too short) is invalid_grant', async () => {
      const { code } = await issueCode(context().runtime, clientA, user);
      expect((await redeem(clientA, { code, redirect_uri: clientA.redirectUri, code_verifier: 'short' })).body.error).toBe('invalid_grant');
    });
  });

  it("client B cannot redeem client A's code; A still can", async () => {
    const { code, verifier } = await issueCode(context().runtime, clientA, user);
    const stolen = await redeem(clientB, { code, redirect_uri: clientA.redirectUri, code_verifier: verifier });
    expect(stolen.status).toBe(400);
    expect(stolen.body.error).toBe('invalid_grant');
    const legit = await redeem(clientA, { code, redirect_uri: clientA.redirectUri, code_verifier: verifier });
    expect(legit.status).toBe(200);
  });

  it('an expired code is invalid_grant', async () => {
    const { runtime } = context();
    const { code, verifier } = await issueCode(runtime, clientA, user);
    // Only the clock moves, past the code's lifetime: nothing else about the code or its session changes.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + (runtime.config.authCodeTtl + 1) * 1000 });
    try {
      const res = await redeem(clientA, { code, redirect_uri: clientA.redirectUri, code_verifier: verifier });
      expect(res.body.error).toBe('invalid_grant');
      expect(res.body.error_description).toMatch(/expired/);
    } finally {
      vi.useRealTimers();
    }
    // Still unused: back in its lifetime it redeems, so the refusal above was the expiry alone.
    expect((await redeem(clientA, { code, redirect_uri: clientA.redirectUri, code_verifier: verifier })).status).toBe(200);
  });

  it('a code altered in any part, or sealed by another deployment, reads like an unknown one', async () => {
    const { runtime } = context();
    const { code, verifier } = await issueCode(runtime, clientA, user);
    const [hour, sealed] = code.split('.') as [string, string];
    const flip = (text: string, at: number) => text.slice(0, at) + (text[at] === 'A' ? 'B' : 'A') + text.slice(at + 1);
    const altered = [
      `${(Number.parseInt(hour, 36) - 1).toString(36)}.${sealed}`,
      `${hour}.${flip(sealed, 2)}`, // the nonce
      `${hour}.${flip(sealed, 30)}`, // the content
      `${hour}.${flip(sealed, sealed.length - 3)}`, // the tag
      `${hour}.${sealed.slice(0, -4)}`,
      new Sealer('another deployment', 'authorization code').seal({ g: 'x', c: clientA.id, u: user.id, e: 0, s: 's', sc: 'products:read', x: Date.now() / 1000 + 60 }),
    ];
    for (const attempt of altered) {
      const res = await redeem(clientA, { code: attempt, redirect_uri: clientA.redirectUri, code_verifier: verifier });
      expect([res.status, res.body]).toEqual([400, { error: 'invalid_grant', error_description: 'the authorization code is not valid' }]);
    }
    expect((await redeem(clientA, { code, redirect_uri: clientA.redirectUri, code_verifier: verifier })).status).toBe(200);
  });

  describe('the authorization behind a code is checked again when it is redeemed', () => {
    async function codeThroughThePages(who: TestUser) {
      const params = authorizeParams(clientA, { scope: 'products:read' });
      const res = await new Browser(context().app).authorize(params, who);
      return { code: redirectParams(res).get('code')!, verifier: params.verifier };
    }

    async function refusedAsRevoked(code: string, verifier: string) {
      const res = await redeem(clientA, { code, redirect_uri: clientA.redirectUri, code_verifier: verifier });
      expect([res.status, res.body]).toEqual([400, { error: 'invalid_grant', error_description: 'the authorization behind this code has been revoked' }]);
    }

    it('refuses a code whose user signed out everywhere since', async () => {
      const who = await buildUser(context().runtime);
      const { code, verifier } = await codeThroughThePages(who);
      await context().runtime.users.endSessions(who.id);
      await refusedAsRevoked(code, verifier);
    });

    it("refuses a code whose user's password was changed since", async () => {
      const who = await buildUser(context().runtime);
      const { code, verifier } = await codeThroughThePages(who);
      await context().runtime.users.setPassword(who.username, 'a new password, after a leak');
      await refusedAsRevoked(code, verifier);
    });

    it('refuses a code whose app the user revoked since, and creates no grant', async () => {
      const who = await buildUser(context().runtime);
      const { code, verifier } = await codeThroughThePages(who);
      const grantId = (new Sealer(context().runtime.authorizationCodeSecret, 'authorization code').open(code) as { g: string }).g;
      await new ConsentStore(context().runtime.db).revokeApp(who.id, clientA.id);
      await refusedAsRevoked(code, verifier);
      expect(await context().runtime.db.select().from(grants).where(eq(grants.id, grantId))).toEqual([]);
    });

    it('refuses a code of a deleted account', async () => {
      const who = await buildUser(context().runtime);
      const { code, verifier } = await codeThroughThePages(who);
      await context().runtime.users.delete(who.username);
      await refusedAsRevoked(code, verifier);
    });
  });

  it('replay: a second use is invalid_grant and revokes every token issued from the code', async () => {
    const { runtime, logs } = context();
    const { code, verifier, grantId } = await issueCode(runtime, clientA, user);
    const fields = { code, redirect_uri: clientA.redirectUri, code_verifier: verifier };
    const first = await redeem(clientA, fields);
    expect(first.status).toBe(200);
    await expect(authenticateBearer(runtime.accessTokens, `Bearer ${first.body.access_token}`)).resolves.toBeDefined();

    const second = await redeem(clientA, fields);
    expect(second.status).toBe(400);
    expect(second.body.error).toBe('invalid_grant');

    await expect(authenticateBearer(runtime.accessTokens, `Bearer ${first.body.access_token}`)).rejects.toMatchObject({ code: 'invalid_token' });
    const refresh = await tokenRequest(context().app, { grant_type: 'refresh_token', refresh_token: first.body.refresh_token }, clientA);
    expect(refresh.body.error).toBe('invalid_grant');

    expect(securityEvents(logs.lines, 'code_redeemed')).toContainEqual(expect.objectContaining({ clientId: clientA.id, userId: user.id, grantId }));
    expect(securityEvents(logs.lines, 'code_replayed')).toContainEqual(expect.objectContaining({ clientId: clientA.id, userId: user.id, grantId }));
    expect(logs.text).not.toContain(code);
    expect(logs.text).not.toContain(verifier);
  });

  it("another client presenting a used code gets invalid_grant and revokes nothing", async () => {
    const { runtime, logs } = context();
    const { code, verifier } = await issueCode(runtime, clientA, user);
    const first = await redeem(clientA, { code, redirect_uri: clientA.redirectUri, code_verifier: verifier });
    expect(first.status).toBe(200);
    for (const attacker of [clientB, publicClient]) {
      const replay = await redeem(attacker, { code, redirect_uri: clientA.redirectUri, code_verifier: verifier });
      expect(replay.status).toBe(400);
      expect(replay.body).toEqual({ error: 'invalid_grant', error_description: 'the authorization code is not valid' });
    }
    await expect(authenticateBearer(runtime.accessTokens, `Bearer ${first.body.access_token}`)).resolves.toBeDefined();
    const refresh = await tokenRequest(context().app, { grant_type: 'refresh_token', refresh_token: first.body.refresh_token }, clientA);
    expect(refresh.status).toBe(200);
    expect(securityEvents(logs.lines, 'code_rejected')).toContainEqual(expect.objectContaining({ clientId: publicClient.id, reason: 'client_mismatch' }));
  });

  it("another client's code reads like an unknown one (no confirmation that it exists)", async () => {
    const { code, verifier } = await issueCode(context().runtime, clientA, user);
    const stolen = await redeem(clientB, { code, redirect_uri: clientA.redirectUri, code_verifier: verifier });
    const unknown = await redeem(clientB, { code: 'not-a-code', redirect_uri: clientA.redirectUri, code_verifier: verifier });
    expect(stolen.body).toEqual(unknown.body);
  });

  it('refuses an unknown or malformed resource with invalid_target before using the code up, so the corrected retry succeeds', async () => {
    const { code, verifier } = await issueCode(context().runtime, clientA, user);
    const fields = { code, redirect_uri: clientA.redirectUri, code_verifier: verifier };
    for (const resource of ['https://unknown.example/api', 'not a uri']) {
      const refused = await redeem(clientA, { ...fields, resource });
      expect(refused.status).toBe(400);
      expect(refused.body.error).toBe('invalid_target');
    }
    const retry = await redeem(clientA, fields);
    expect(retry.status, retry.text).toBe(200);
    await authenticateBearer(context().runtime.accessTokens, `Bearer ${retry.body.access_token}`);
  });

  it('answers invalid_grant, not tokens without their ID Token, when the account goes between the redemption and the ID Token', async () => {
    const { runtime } = context();
    const gone = await buildUser(runtime);
    const { code, verifier } = await issueCode(runtime, clientA, gone, { scope: 'openid products:read' });
    // The user is deleted (`fieldgate user delete`) just as the ID Token is about to read the account.
    const find = UserStore.prototype.find;
    const spy = vi.spyOn(UserStore.prototype, 'find').mockImplementation(async function (this: UserStore, id: number) {
      if (id === gone.id) await runtime.users.delete(gone.username);
      return find.call(this, id);
    });
    try {
      const res = await redeem(clientA, { code, redirect_uri: clientA.redirectUri, code_verifier: verifier });
      expect(res.status, res.text).toBe(400);
      expect(res.body.error).toBe('invalid_grant');
    } finally {
      spy.mockRestore();
    }
  });

  it('redemption is atomic: of many concurrent requests with one code exactly one succeeds', async () => {
    const { code, verifier } = await issueCode(context().runtime, clientA, user);
    const fields = { code, redirect_uri: clientA.redirectUri, code_verifier: verifier };
    const results = await Promise.all(Array.from({ length: 12 }, () => redeem(clientA, fields)));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(results.filter((r) => r.status !== 200).every((r) => r.status === 400 && r.body.error === 'invalid_grant')).toBe(true);
  });
});
