/**
 * The machine and device grants end to end with an independent strict client: oauth4webapi
 * discovers the metadata (RFC 8414), runs client_credentials (RFC 6749 §4.4) and the device
 * authorization grant (RFC 8628) — its device authorization request, its polling with
 * authorization_pending and slow_down, and the final token response — against a running
 * server, with a scripted browser entering the user code at /device. Once per database.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as oauth from 'oauth4webapi';
import { eq } from 'drizzle-orm';
import { deviceCodes } from '../../src/db/schema.js';
import { sha256 } from '../../src/crypto/secrets.js';
import { DEVICE_CODE_GRANT_TYPE } from '../../src/oauth/stores/clients.js';
import { DATABASE_KINDS } from '../support/databases.js';
import { Browser, buildClient, buildUser, formAction, formFields, pathOf, type TestUser } from '../support/oauth.js';
import { startTestServer, type RunningTestServer } from '../support/e2e-server.js';

const insecure = { [oauth.allowInsecureRequests]: true } as const; // plain http on 127.0.0.1 only

for (const kind of DATABASE_KINDS) {
  describe(`oauth4webapi: client_credentials and the device grant [${kind}]`, () => {
    let server: RunningTestServer;
    let as: oauth.AuthorizationServer;
    let user: TestUser;

    beforeAll(async () => {
      server = await startTestServer(kind);
      user = await buildUser(server.context.runtime);
      const issuer = new URL(server.baseUrl);
      as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }));
    });

    afterAll(async () => {
      await server?.close();
    });

    it('discovers the device authorization endpoint and both grant types', () => {
      expect(as.device_authorization_endpoint).toBe(`${server.baseUrl}/device_authorization`);
      expect(as.grant_types_supported).toEqual(expect.arrayContaining(['client_credentials', DEVICE_CODE_GRANT_TYPE]));
    });

    it('gets a client_credentials token that validates as an RFC 9068 access token with sub = client_id', async () => {
      const client = await buildClient(server.context.runtime, { redirectUris: [], grantTypes: ['client_credentials'] });
      const oclient: oauth.Client = { client_id: client.id };
      for (const auth of [oauth.ClientSecretBasic(client.secret!), oauth.ClientSecretPost(client.secret!)]) {
        const tokens = await oauth.processClientCredentialsResponse(
          as,
          oclient,
          await oauth.clientCredentialsGrantRequest(as, oclient, auth, { scope: 'products:read' }, insecure),
        );
        expect(tokens).toMatchObject({ token_type: 'bearer', scope: 'products:read' });
        expect(tokens.refresh_token).toBeUndefined();
        const claims = await oauth.validateJwtAccessToken(
          as,
          new Request(`${server.baseUrl}/products`, { headers: { authorization: `Bearer ${tokens.access_token}` } }),
          server.baseUrl,
          insecure,
        );
        expect(claims).toMatchObject({ sub: client.id, client_id: client.id, scope: 'products:read' });
        const products = await fetch(`${server.baseUrl}/products`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
        expect(products.status).toBe(200);
        const orders = await fetch(`${server.baseUrl}/orders`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
        expect(orders.status).toBe(403);
      }
      const refused = oauth
        .clientCredentialsGrantRequest(as, oclient, oauth.ClientSecretBasic(client.secret!), { scope: 'orders:read' }, insecure)
        .then((response) => oauth.processClientCredentialsResponse(as, oclient, response));
      await expect(refused).rejects.toMatchObject({ error: 'invalid_scope' });
    });

    for (const variant of ['public (none)', 'confidential (client_secret_basic)'] as const) {
      it(`runs the device flow for a ${variant} client, with the user at /device`, async () => {
        const { runtime } = server.context;
        const isPublic = variant.startsWith('public');
        const client = await buildClient(runtime, {
          redirectUris: [],
          isPublic,
          grantTypes: [DEVICE_CODE_GRANT_TYPE, 'refresh_token'],
          scope: 'products:read orders:read',
        });
        const oclient: oauth.Client = { client_id: client.id };
        const auth = isPublic ? oauth.None() : oauth.ClientSecretBasic(client.secret!);

        const started = await oauth.processDeviceAuthorizationResponse(
          as,
          oclient,
          await oauth.deviceAuthorizationRequest(as, oclient, auth, { scope: 'products:read orders:read' }, insecure),
        );
        expect(started.user_code).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
        expect(started.verification_uri).toBe(`${server.baseUrl}/device`);
        expect(started.interval).toBe(5);

        const pollOnce = async () =>
          oauth.processDeviceCodeResponse(as, oclient, await oauth.deviceCodeGrantRequest(as, oclient, auth, started.device_code, insecure));
        await expect(pollOnce()).rejects.toMatchObject({ error: 'authorization_pending' });
        await expect(pollOnce()).rejects.toMatchObject({ error: 'slow_down' });

        // The user, on another screen: verification_uri_complete, sign in, confirm the code, Allow.
        const browser = new Browser(server.baseUrl);
        const signIn = await browser.open(pathOf(started.verification_uri_complete!));
        const codeForm = await browser.open(pathOf((await browser.signIn(signIn, user.username, user.password)).headers.location!));
        const consent = await browser.submit(formAction(codeForm.text), formFields(codeForm.text));
        expect(consent.status).toBe(200);
        expect(consent.text).toContain(started.user_code);
        expect((await browser.decide(consent, 'allow')).status).toBe(200);

        // The device waited its (raised) interval.
        await runtime.db.update(deviceCodes).set({ lastPolledAt: null }).where(eq(deviceCodes.deviceCodeHash, sha256(started.device_code)));
        const tokens = await pollOnce();
        expect(tokens).toMatchObject({ token_type: 'bearer', scope: 'products:read orders:read' });
        const claims = await oauth.validateJwtAccessToken(
          as,
          new Request(`${server.baseUrl}/orders`, { headers: { authorization: `Bearer ${tokens.access_token}` } }),
          server.baseUrl,
          insecure,
        );
        expect(claims).toMatchObject({ sub: String(user.id), client_id: client.id });
        const refreshed = await oauth.processRefreshTokenResponse(
          as,
          oclient,
          await oauth.refreshTokenGrantRequest(as, oclient, auth, tokens.refresh_token!, insecure),
        );
        expect(refreshed.access_token).not.toBe(tokens.access_token);
        await expect(pollOnce()).rejects.toMatchObject({ error: 'invalid_grant' });
      });
    }

    it('reports a denied device request as access_denied to the library', async () => {
      const client = await buildClient(server.context.runtime, { redirectUris: [], isPublic: true, grantTypes: [DEVICE_CODE_GRANT_TYPE] });
      const oclient: oauth.Client = { client_id: client.id };
      const started = await oauth.processDeviceAuthorizationResponse(as, oclient, await oauth.deviceAuthorizationRequest(as, oclient, oauth.None(), {}, insecure));
      const browser = new Browser(server.baseUrl);
      const signIn = await browser.open(pathOf(started.verification_uri_complete!));
      const codeForm = await browser.open(pathOf((await browser.signIn(signIn, user.username, user.password)).headers.location!));
      const consent = await browser.submit(formAction(codeForm.text), formFields(codeForm.text));
      await browser.decide(consent, 'deny');
      const denied = oauth
        .deviceCodeGrantRequest(as, oclient, oauth.None(), started.device_code, insecure)
        .then((response) => oauth.processDeviceCodeResponse(as, oclient, response));
      await expect(denied).rejects.toMatchObject({ error: 'access_denied' });
    });
  });
}
