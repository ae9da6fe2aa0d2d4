/**
 * Refresh tokens belong to their grant: deleting the grant's user or client takes them along (through the grant's
 * cascade), and rotating them locks neither the client's nor the user's row. A code not yet redeemed has no row at all,
 * and no longer redeems once its user or client is gone.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import postgres from 'postgres';
import { eq } from 'drizzle-orm';
import { grants, refreshTokens } from '../../src/db/schema.js';
import { createTestRuntime, describeEachDatabase, type TestRuntime } from '../support/runtime.js';
import { TEST_DATABASE_URL } from '../support/databases.js';
import { buildClient, buildUser, codeStore, issueCode, obtainTokens, tokenRequest } from '../support/oauth.js';

describeEachDatabase('codes and refresh tokens of a grant', (context) => {
  async function credentialsOf(grantId: string): Promise<number> {
    const { db } = context().runtime;
    const grant = await db.select({ id: grants.id }).from(grants).where(eq(grants.id, grantId));
    const tokens = await db.select({ grantId: refreshTokens.grantId }).from(refreshTokens).where(eq(refreshTokens.grantId, grantId));
    return grant.length + tokens.length;
  }

  /** A client and user with a grant whose code was redeemed for a refresh token, and a code pending (no row yet). */
  async function grantsWithCredentials() {
    const { runtime, app } = context();
    const client = await buildClient(runtime);
    const user = await buildUser(runtime);
    const tokens = await obtainTokens(app, runtime, client, user, { scope: 'products:read offline_access' });
    const pending = await issueCode(runtime, client, user);
    expect(await credentialsOf(tokens.grantId)).toBe(2);
    expect(await credentialsOf(pending.grantId)).toBe(0);
    return { client, user, tokens, pending };
  }

  it('go with the user: the rows are deleted and neither the refresh token nor an unredeemed code works', async () => {
    const { runtime, app } = context();
    const { client, user, tokens, pending } = await grantsWithCredentials();

    expect(await runtime.users.delete(user.username)).toBe(true);

    expect(await credentialsOf(tokens.grantId)).toBe(0);
    expect(await credentialsOf(pending.grantId)).toBe(0);
    const refresh = await tokenRequest(app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, client);
    expect([refresh.status, refresh.body.error]).toEqual([400, 'invalid_grant']);
    const exchange = await tokenRequest(
      app,
      { grant_type: 'authorization_code', code: pending.code, redirect_uri: client.redirectUri, code_verifier: pending.verifier },
      client,
    );
    expect([exchange.status, exchange.body.error]).toEqual([400, 'invalid_grant']);
  });

  it('go with the client', async () => {
    const { runtime } = context();
    const { client, tokens, pending } = await grantsWithCredentials();

    expect(await runtime.clients.delete(client.id)).toBe(true);

    expect(await credentialsOf(tokens.grantId)).toBe(0);
    // /token would refuse the deleted client itself; the store refuses its code too, creating no grant.
    expect(await codeStore(runtime).redeem(pending.code, client.id)).toBeUndefined();
    expect(await credentialsOf(pending.grantId)).toBe(0);
  });
});

describe.runIf(TEST_DATABASE_URL)('rotating a refresh token [postgres]', () => {
  let context: TestRuntime;
  let locker: postgres.Sql;

  beforeAll(async () => {
    context = await createTestRuntime('postgres');
    locker = postgres(context.testDatabase.url!, { max: 1, onnotice: () => {} });
  });
  afterAll(async () => {
    await locker?.end();
    await context?.close();
  });

  // A foreign key to clients or users would take FOR KEY SHARE on those rows, which FOR UPDATE blocks: every
  // concurrent flow of one client would queue on (or share through multixacts) the same two rows.
  it('does not wait on the client or user row, even while another session holds them FOR UPDATE', async () => {
    const { runtime, app } = context;
    const client = await buildClient(runtime);
    const user = await buildUser(runtime);
    const tokens = await obtainTokens(app, runtime, client, user, { scope: 'products:read offline_access' });
    await locker.begin(async (tx) => {
      await tx`select 1 from clients where id = ${client.id} for update`;
      await tx`select 1 from users where id = ${user.id} for update`;
      const refresh = tokenRequest(app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, client).then((res) => res.status);
      const blocked = new Promise<string>((resolve) => setTimeout(() => resolve('still waiting after 5 s'), 5_000));
      expect(await Promise.race([refresh, blocked])).toBe(200);
    });
  });
});
