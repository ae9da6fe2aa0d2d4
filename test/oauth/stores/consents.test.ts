/**
 * Revoking an app (the account page, `fieldgate consent revoke`) or changing the password revokes the user's grants; a
 * device the user approved but that has not polled for its tokens yet holds no grant, so its approval is withdrawn too:
 * the device hears access_denied (RFC 8628 §3.5) instead of getting tokens the user has just taken back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import postgres from 'postgres';
import { randomBytes } from 'node:crypto';
import { ConsentStore } from '../../../src/oauth/stores/consents.js';
import { DEVICE_CODE_GRANT_TYPE } from '../../../src/oauth/stores/clients.js';
import { DeviceCodeStore } from '../../../src/oauth/stores/device-codes.js';
import { sha256 } from '../../../src/crypto/secrets.js';
import { createTestRuntime, describeEachDatabase, type TestRuntime } from '../../support/runtime.js';
import { TEST_DATABASE_URL } from '../../support/databases.js';
import { buildClient, buildUser, tokenRequest, type TestClient, type TestUser } from '../../support/oauth.js';
import type { Runtime } from '../../../src/runtime.js';

async function approvedDevice(runtime: Runtime, tv: TestClient, user: TestUser): Promise<string> {
  const store = new DeviceCodeStore(runtime.db, runtime.config.deviceCodeTtl);
  const issued = await store.issue(tv.id, 'products:read');
  expect(await store.decide(issued.userCode, tv.id, user.id, 'approved')).toBeDefined();
  return issued.deviceCode;
}

const deviceClient = (runtime: Runtime) => buildClient(runtime, { redirectUris: [], isPublic: true, grantTypes: [DEVICE_CODE_GRANT_TYPE] });

describeEachDatabase('revoking what a user allowed', (context) => {
  const poll = (tv: TestClient, deviceCode: string) => tokenRequest(context().app, { grant_type: DEVICE_CODE_GRANT_TYPE, device_code: deviceCode }, tv);

  it('withdraws a device approval not yet redeemed when the user revokes the app', async () => {
    const { runtime } = context();
    const [tv, user] = await Promise.all([deviceClient(runtime), buildUser(runtime)]);
    const deviceCode = await approvedDevice(runtime, tv, user);

    await new ConsentStore(runtime.db).revokeApp(user.id, tv.id);
    const res = await poll(tv, deviceCode);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('access_denied');
  });

  it('withdraws it when an operator revokes the consent (fieldgate consent revoke)', async () => {
    const { runtime } = context();
    const [tv, user] = await Promise.all([deviceClient(runtime), buildUser(runtime)]);
    const deviceCode = await approvedDevice(runtime, tv, user);

    // The name as typed on a command line, with the spaces every other user command forgives.
    expect(await new ConsentStore(runtime.db).revoke(` ${user.username} `, tv.id)).toMatchObject({ grantsRevoked: 0 });
    expect((await poll(tv, deviceCode)).body.error).toBe('access_denied');
  });

  it('withdraws it when the password is changed, and leaves other users’ approvals alone', async () => {
    const { runtime } = context();
    const [tv, user, other] = await Promise.all([deviceClient(runtime), buildUser(runtime), buildUser(runtime)]);
    const [mine, theirs] = await Promise.all([approvedDevice(runtime, tv, user), approvedDevice(runtime, tv, other)]);

    await runtime.users.setPassword(user.username, `new-${randomBytes(8).toString('hex')}`);
    expect((await poll(tv, mine)).body.error).toBe('access_denied');
    const granted = await poll(tv, theirs);
    expect(granted.status, granted.text).toBe(200);
  });
});

describe.skipIf(!TEST_DATABASE_URL)('revoking an app while its device redeems [postgres]', () => {
  let context: TestRuntime;
  let redeemer: postgres.Sql;
  let observer: postgres.Sql;

  beforeAll(async () => {
    context = await createTestRuntime('postgres');
    redeemer = postgres(context.testDatabase.url!, { max: 1, onnotice: () => {} });
    observer = postgres(context.testDatabase.url!, { max: 1, onnotice: () => {} });
  });
  afterAll(async () => {
    await Promise.all([redeemer?.end(), observer?.end()]);
    await context?.close();
  });

  it('revokes the grant a redemption committed while the revocation ran', async () => {
    const { runtime } = context;
    const [tv, user] = await Promise.all([deviceClient(runtime), buildUser(runtime)]);
    const deviceCode = await approvedDevice(runtime, tv, user);
    const grantId = `race-${randomBytes(8).toString('hex')}`;

    let revoking: Promise<unknown> | undefined;
    // What the redeeming statement does (device-codes.ts redeem), held open until the revocation has started.
    await redeemer.begin(async (tx) => {
      await tx`update device_codes set status = 'consumed' where device_code_hash = ${sha256(deviceCode)} and status = 'approved'`;
      await tx`insert into grants (id, client_id, user_id, scope) values (${grantId}, ${tv.id}, ${user.id}, 'products:read')`;
      revoking = new ConsentStore(runtime.db).revokeApp(user.id, tv.id);
      // Once the revocation waits on the device code this redemption holds, it is past the point where it took its snapshot.
      for (let attempt = 0; attempt < 40; attempt++) {
        const waiting = await observer`select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query like '%device_codes%'`;
        if (waiting.length > 0) break;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    });
    await revoking;

    const [grant] = await observer`select revoked_at from grants where id = ${grantId}`;
    expect(grant?.revoked_at).not.toBeNull();
  });
});
