/**
 * RFC 8707 corners at /token and /device_authorization: a `resource` the server knows but the grant does not cover is
 * invalid_target (§2.2) and, like an unknown one, is refused before anything is redeemed or rotated, so the corrected
 * retry succeeds (RFC 6749 §4.1.2's single use is about codes that were used, not requests refused for a parameter);
 * replay protection is untouched. The device grant (RFC 8628) takes `resource` at its authorization request as
 * /authorize does, keeps it on the grant, and its tokens carry the audience it selects.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { eq } from 'drizzle-orm';
import { decodeJwt } from 'jose';
import { deviceCodes, grants } from '../../src/db/schema.js';
import { sha256 } from '../../src/crypto/secrets.js';
import { DEVICE_CODE_GRANT_TYPE } from '../../src/oauth/stores/clients.js';
import { DeviceCodeStore, normalizeUserCode } from '../../src/oauth/stores/device-codes.js';
import { authenticateBearer } from '../../src/tokens/bearer.js';
import { describeEachDatabase, TEST_ISSUER } from '../support/runtime.js';
import { basic, buildClient, buildTokenCast, buildUser, issueCode, securityEvents, type TestClient, type TestUser } from '../support/oauth.js';

const EXTERNAL = 'https://mcp.example/api';
const REST = TEST_ISSUER;
const GRAPHQL = `${TEST_ISSUER}/graphql`;

type Fields = [name: string, value: string][];

describeEachDatabase(
  'resource indicators (RFC 8707) at /token and /device_authorization',
  (context) => {
    let client: TestClient;
    let user: TestUser;

    beforeAll(async () => {
      ({ client, user } = await buildTokenCast(context().runtime));
    });

    /** Form-encoded by hand: `resource` repeats (RFC 8707 §2). */
    function post(path: string, target: TestClient, fields: Fields) {
      const body = [...fields, ...(target.secret ? [] : [['client_id', target.id] as [string, string]])];
      const req = request(context().app).post(path).type('form');
      if (target.secret) req.set('Authorization', basic(target.id, target.secret));
      return req.send(body.map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`).join('&'));
    }

    const resources = (...values: string[]): Fields => values.map((value) => ['resource', value]);
    const audienceOf = (accessToken: string) => decodeJwt(accessToken).aud;
    const accepts = (accessToken: string) => authenticateBearer(context().runtime.accessTokens, `Bearer ${accessToken}`);

    describe('authorization_code', () => {
      async function code(granted: string[]) {
        const issued = await issueCode(context().runtime, client, user, { resources: granted });
        const redeem = (...extra: Fields) =>
          post('/token', client, [
            ['grant_type', 'authorization_code'],
            ['code', issued.code],
            ['redirect_uri', client.redirectUri],
            ['code_verifier', issued.verifier],
            ...extra,
          ]);
        return { ...issued, redeem };
      }

      /** A code is used up once its grant exists (see stores/codes.ts). */
      const consumed = async (grantId: string) => (await context().runtime.db.select({ id: grants.id }).from(grants).where(eq(grants.id, grantId))).length > 0;

      it('refuses a known resource outside the grant with invalid_target without using the code up; the corrected retry gets the tokens', async () => {
        const issued = await code([GRAPHQL]);
        for (const outside of [[REST], [EXTERNAL], [GRAPHQL, REST]]) {
          const refused = await issued.redeem(...resources(...outside));
          expect(refused.status, refused.text).toBe(400);
          expect(refused.body).toMatchObject({ error: 'invalid_target', error_description: 'the resource is more than this grant was authorized for' });
        }
        expect(await consumed(issued.grantId)).toBe(false);
        const retry = await issued.redeem(...resources(GRAPHQL));
        expect(retry.status, retry.text).toBe(200);
        expect(audienceOf(retry.body.access_token)).toBe(GRAPHQL);
        await accepts(retry.body.access_token);
      });

      it('refuses an external resource for a grant of the default audience, and the retry without resource gets that audience', async () => {
        const issued = await code([]);
        const refused = await issued.redeem(...resources(EXTERNAL));
        expect(refused.body.error).toBe('invalid_target');
        const retry = await issued.redeem();
        expect(retry.status, retry.text).toBe(200);
        expect(audienceOf(retry.body.access_token)).toEqual([REST, GRAPHQL]);
      });

      it('still treats a redeemed code presented again as a replay, whatever its resource: refused, and its tokens revoked', async () => {
        const { logs } = context();
        const issued = await code([GRAPHQL]);
        const first = await issued.redeem();
        expect(first.status, first.text).toBe(200);
        await accepts(first.body.access_token);
        const replay = await issued.redeem(...resources(EXTERNAL));
        expect(replay.status).toBe(400);
        expect(replay.body.error).toBe('invalid_grant');
        await expect(accepts(first.body.access_token)).rejects.toMatchObject({ code: 'invalid_token' });
        expect(securityEvents(logs.lines, 'code_replayed').some((event) => event.grantId === issued.grantId)).toBe(true);
      });

      it('redeems once under concurrent requests with the right resource, and refuses the ones outside the grant', async () => {
        const issued = await code([GRAPHQL]);
        const results = await Promise.all([
          ...Array.from({ length: 6 }, () => issued.redeem(...resources(GRAPHQL))),
          ...Array.from({ length: 2 }, () => issued.redeem(...resources(EXTERNAL))),
        ]);
        const right = results.slice(0, 6);
        expect(right.filter((res) => res.status === 200)).toHaveLength(1);
        expect(right.filter((res) => res.status !== 200).every((res) => res.body.error === 'invalid_grant')).toBe(true);
        // Refused before the redemption, or (once the code is used) taken as the replay it then is; never tokens.
        expect(results.slice(6).every((res) => res.status === 400 && ['invalid_target', 'invalid_grant'].includes(res.body.error))).toBe(true);
      });
    });

    describe('refresh_token', () => {
      it('refuses a resource outside the grant with invalid_target and leaves the refresh token as it was: not rotated, no reuse', async () => {
        const { logs } = context();
        const issued = await issueCode(context().runtime, client, user, { resources: [GRAPHQL] });
        const tokens = await post('/token', client, [
          ['grant_type', 'authorization_code'],
          ['code', issued.code],
          ['redirect_uri', client.redirectUri],
          ['code_verifier', issued.verifier],
        ]);
        expect(tokens.status, tokens.text).toBe(200);
        const refresh = (...extra: Fields) => post('/token', client, [['grant_type', 'refresh_token'], ['refresh_token', tokens.body.refresh_token], ...extra]);
        for (const outside of [[REST], [EXTERNAL], ['https://unknown.example/api']]) {
          const refused = await refresh(...resources(...outside));
          expect(refused.status, refused.text).toBe(400);
          expect(refused.body.error).toBe('invalid_target');
        }
        const retry = await refresh(...resources(GRAPHQL));
        expect(retry.status, retry.text).toBe(200);
        expect(audienceOf(retry.body.access_token)).toBe(GRAPHQL);
        await accepts(tokens.body.access_token);
        expect(securityEvents(logs.lines, 'refresh_token_reuse_detected').some((event) => event.grantId === issued.grantId)).toBe(false);
      });
    });

    describe('device_code', () => {
      let tv: TestClient;
      let store: DeviceCodeStore;

      beforeAll(async () => {
        const { runtime } = context();
        tv = await buildClient(runtime, { redirectUris: [], isPublic: true, grantTypes: [DEVICE_CODE_GRANT_TYPE, 'refresh_token'], scope: 'products:read orders:read' });
        store = new DeviceCodeStore(runtime.db, runtime.config.deviceCodeTtl);
      });

      async function approvedDevice(...requested: string[]) {
        const started = await post('/device_authorization', tv, resources(...requested));
        expect(started.status, started.text).toBe(200);
        const deviceCode = started.body.device_code as string;
        const approver = await buildUser(context().runtime);
        expect(await store.decide(normalizeUserCode(started.body.user_code)!, tv.id, approver.id, 'approved')).toBeDefined();
        const poll = (...extra: Fields) => post('/token', tv, [['grant_type', DEVICE_CODE_GRANT_TYPE], ['device_code', deviceCode], ...extra]);
        return { deviceCode, poll };
      }

      it('refuses an unknown or malformed resource at the device authorization endpoint with invalid_target', async () => {
        for (const resource of ['https://unknown.example/api', 'not a uri', `${GRAPHQL}#x`]) {
          const refused = await post('/device_authorization', tv, [['resource', resource]]);
          expect(refused.status, refused.text).toBe(400);
          expect(refused.body.error).toBe('invalid_target');
          expect(refused.headers['cache-control']).toBe('no-store');
        }
      });

      it('records the requested resources with the device grant, and the tokens carry the audience they select', async () => {
        const { runtime } = context();
        const device = await approvedDevice(EXTERNAL, GRAPHQL);
        const [row] = await runtime.db.select({ resources: deviceCodes.resources }).from(deviceCodes).where(eq(deviceCodes.deviceCodeHash, sha256(device.deviceCode)));
        expect(row!.resources).toEqual([EXTERNAL, GRAPHQL]);
        const tokens = await device.poll();
        expect(tokens.status, tokens.text).toBe(200);
        expect(audienceOf(tokens.body.access_token)).toEqual([EXTERNAL, GRAPHQL]);
        const grantId = decodeJwt(tokens.body.access_token).grant_id as string;
        const [grant] = await runtime.db.select({ resources: grants.resources }).from(grants).where(eq(grants.id, grantId));
        expect(grant!.resources).toEqual([EXTERNAL, GRAPHQL]);
        // The grant keeps them: a refresh narrows within them, never past them.
        const refresh = (...extra: Fields) => post('/token', tv, [['grant_type', 'refresh_token'], ['refresh_token', tokens.body.refresh_token], ...extra]);
        expect((await refresh(...resources(REST))).body.error).toBe('invalid_target');
        const refreshed = await refresh();
        expect(refreshed.status, refreshed.text).toBe(200);
        expect(audienceOf(refreshed.body.access_token)).toEqual([EXTERNAL, GRAPHQL]);
      });

      it('lets the token request narrow within the resources of the device authorization request, never past them, before using the code up', async () => {
        const device = await approvedDevice(GRAPHQL, EXTERNAL);
        for (const outside of [[REST], ['https://unknown.example/api'], [GRAPHQL, REST]]) {
          const refused = await device.poll(...resources(...outside));
          expect(refused.status, refused.text).toBe(400);
          expect(refused.body.error).toBe('invalid_target');
        }
        const narrowed = await device.poll(...resources(EXTERNAL));
        expect(narrowed.status, narrowed.text).toBe(200);
        expect(audienceOf(narrowed.body.access_token)).toBe(EXTERNAL);
        expect((await device.poll()).body.error).toBe('invalid_grant');
      });

      it('gives a device request without resource the default audience, never an external one', async () => {
        const device = await approvedDevice();
        expect((await device.poll(...resources(EXTERNAL))).body.error).toBe('invalid_target');
        const tokens = await device.poll();
        expect(tokens.status, tokens.text).toBe(200);
        expect(audienceOf(tokens.body.access_token)).toEqual([REST, GRAPHQL]);
      });
    });
  },
  { RESOURCE_INDICATORS: EXTERNAL },
);
