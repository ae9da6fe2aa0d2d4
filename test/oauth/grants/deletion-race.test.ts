/**
 * A refresh or code exchange that races the deletion of the grant's user (`fieldgate user delete`, or SQL) ends in
 * invalid_grant, never a 500. A refresh locks the refresh token and then the grant; the delete's cascade locks the grant and then the
 * tokens, so PostgreSQL can abort either one as a deadlock. Here it is made to abort the redemption: the deleting session
 * waits longer before it checks for deadlocks (deadlock_timeout), so the redemption's session finds the cycle first. A code
 * exchange creates the grant, whose foreign key waits on the user's row while the deletion holds it, and then fails.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import postgres from 'postgres';
import { eq } from 'drizzle-orm';
import { grants } from '../../../src/db/schema.js';
import { createTestRuntime, type TestRuntime } from '../../support/runtime.js';
import { TEST_DATABASE_URL } from '../../support/databases.js';
import { buildClient, buildUser, issueCode, obtainTokens, tokenRequest } from '../../support/oauth.js';

describe.skipIf(!TEST_DATABASE_URL)('a redemption racing the deletion of its user [postgres]', () => {
  let context: TestRuntime;
  let admin: postgres.Sql;

  beforeAll(async () => {
    context = await createTestRuntime('postgres');
    admin = postgres(context.testDatabase.url!, { max: 1, onnotice: () => {} });
  });
  afterAll(async () => {
    await admin?.end();
    await context?.close();
  });

  /** Waits until a backend of this database other than `ownPid` waits on a lock in a redemption. */
  async function waitForBlockedRedemption(ownPid: number): Promise<void> {
    for (let attempt = 0; attempt < 200; attempt++) {
      const blocked = await admin`select pid from pg_stat_activity
        where datname = current_database() and pid <> ${ownPid} and wait_event_type = 'Lock' and (query like '%refresh_tokens%' or query like '%with authorizing as%')`;
      if (blocked.length > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error('the redemption never waited on the grant');
  }

  /**
   * Holds the grant while `redeem` runs, so the redemption consumes its credential and then waits on the grant; then
   * deletes the user, whose cascade needs that credential: a cycle, which the redemption's session detects first.
   */
  async function raceDeletion(lock: { grantId: string } | { userId: number }, userId: number, redeem: () => Promise<{ status: number; body: Record<string, unknown> }>) {
    const deleter = postgres(context.testDatabase.url!, { max: 1, onnotice: () => {} });
    try {
      let answer: Promise<{ status: number; body: Record<string, unknown> }> | undefined;
      await deleter.begin(async (tx) => {
        await tx`set local deadlock_timeout = '30s'`;
        const [row] = await tx`select pg_backend_pid() as pid`;
        if ('grantId' in lock) await tx`select 1 from grants where id = ${lock.grantId} for update`;
        else await tx`select 1 from users where id = ${lock.userId} for update`;
        answer = redeem();
        await waitForBlockedRedemption(row!.pid as number);
        await tx`delete from users where id = ${userId}`;
      });
      return await answer!;
    } finally {
      await deleter.end();
    }
  }

  const asAnswer = (res: { status: number; body: unknown }) => ({ status: res.status, body: res.body as Record<string, unknown> });

  it('answers a refresh whose rotation is the deadlock victim with invalid_grant, and the token is gone with the user', async () => {
    const { runtime, app } = context;
    const client = await buildClient(runtime);
    const user = await buildUser(runtime);
    const tokens = await obtainTokens(app, runtime, client, user, { scope: 'products:read offline_access' });
    const answer = await raceDeletion({ grantId: tokens.grantId }, user.id, async () =>
      asAnswer(await tokenRequest(app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, client)),
    );
    expect(answer.status).toBe(400);
    expect(answer.body.error).toBe('invalid_grant');
    const again = await tokenRequest(app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, client);
    expect(again.status).toBe(400);
    expect(again.body.error).toBe('invalid_grant');
  });

  it.each(['products:read', 'products:read offline_access'])('answers a code exchange (scope %s) that is the deadlock victim with invalid_grant', async (scope) => {
    const { runtime, app } = context;
    const client = await buildClient(runtime);
    const user = await buildUser(runtime);
    const { code, verifier, grantId } = await issueCode(runtime, client, user, { scope });
    // The redemption creates the grant, whose foreign key waits on the user's row; the user is then deleted.
    const answer = await raceDeletion({ userId: user.id }, user.id, async () =>
      asAnswer(await tokenRequest(app, { grant_type: 'authorization_code', code, redirect_uri: client.redirectUri, code_verifier: verifier }, client)),
    );
    expect(answer.status).toBe(400);
    expect(answer.body.error).toBe('invalid_grant');
    expect(await runtime.db.select().from(grants).where(eq(grants.id, grantId))).toEqual([]);
  });
});
