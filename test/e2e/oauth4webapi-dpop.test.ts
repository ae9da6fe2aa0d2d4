/**
 * DPoP (RFC 9449) and private_key_jwt (RFC 7523) end to end with oauth4webapi as the client:
 * its DPoP handle signs the proofs and retries on `use_dpop_nonce`; its PrivateKeyJwt signs the
 * client assertions — against a running server, once per database.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as oauth from 'oauth4webapi';
import { calculateJwkThumbprint, exportJWK } from 'jose';
import { DATABASE_KINDS } from '../support/databases.js';
import { Browser, buildClient, buildUser, type TestClient, type TestUser } from '../support/oauth.js';
import { startTestServer, type RunningTestServer } from '../support/e2e-server.js';

const insecure = { [oauth.allowInsecureRequests]: true } as const; // plain http on 127.0.0.1 only

/** Runs `attempt`, and once more if the server asked for a DPoP nonce (RFC 9449 §8). */
async function withNonceRetry<T>(attempt: () => Promise<T>): Promise<T> {
  try {
    return await attempt();
  } catch (error) {
    if (!oauth.isDPoPNonceError(error)) throw error;
    return attempt();
  }
}

for (const kind of DATABASE_KINDS) {
  describe(`oauth4webapi with DPoP and private_key_jwt [${kind}]`, () => {
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

    async function authorize(client: TestClient, extra: Record<string, string> = {}) {
      const verifier = oauth.generateRandomCodeVerifier();
      const state = oauth.generateRandomState();
      const params = {
        response_type: 'code',
        client_id: client.id,
        redirect_uri: client.redirectUri,
        scope: 'products:read orders:read',
        state,
        code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        ...extra,
      };
      const landing = await new Browser(server.baseUrl).authorize(params, user);
      expect(landing.status).toBe(302);
      return { callback: new URL(landing.headers.location!), state, verifier };
    }

    it('advertises DPoP and private_key_jwt in the metadata', () => {
      expect(as.dpop_signing_alg_values_supported).toEqual(['ES256', 'EdDSA', 'Ed25519', 'RS256']);
      expect(as.token_endpoint_auth_methods_supported).toContain('private_key_jwt');
    });

    it('a public client gets DPoP-bound tokens (code bound with dpop_jkt), calls the API with them and refreshes', async () => {
      const client = await buildClient(server.context.runtime, { isPublic: true, redirectUris: ['http://127.0.0.1:9/callback'] });
      const oclient: oauth.Client = { client_id: client.id };
      const keyPair = await oauth.generateKeyPair('ES256');
      const DPoP = oauth.DPoP(oclient, keyPair);
      const dpopJkt = await calculateJwkThumbprint(await exportJWK(keyPair.publicKey));

      const { callback, state, verifier } = await authorize(client, { dpop_jkt: dpopJkt });
      const params = oauth.validateAuthResponse(as, oclient, callback, state);
      const tokens = await withNonceRetry(async () =>
        oauth.processAuthorizationCodeResponse(
          as,
          oclient,
          await oauth.authorizationCodeGrantRequest(as, oclient, oauth.None(), params, client.redirectUri, verifier, { DPoP, ...insecure }),
        ),
      );
      expect(tokens.token_type).toBe('dpop');

      const products = await oauth.protectedResourceRequest(tokens.access_token, 'GET', new URL(`${server.baseUrl}/products?limit=1`), undefined, undefined, { DPoP, ...insecure });
      expect(products.status).toBe(200);
      // Presented as Bearer, the bound token is refused with a DPoP challenge.
      const asBearer = await oauth
        .protectedResourceRequest(tokens.access_token, 'GET', new URL(`${server.baseUrl}/products`), undefined, undefined, insecure)
        .catch((error: unknown) => error);
      expect(asBearer).toBeInstanceOf(oauth.WWWAuthenticateChallengeError);
      expect((asBearer as oauth.WWWAuthenticateChallengeError).cause[0]).toMatchObject({ scheme: 'dpop', parameters: { error: 'invalid_token' } });

      const refreshed = await withNonceRetry(async () =>
        oauth.processRefreshTokenResponse(as, oclient, await oauth.refreshTokenGrantRequest(as, oclient, oauth.None(), tokens.refresh_token!, { DPoP, ...insecure })),
      );
      expect(refreshed.token_type).toBe('dpop');

      // The refresh token is bound: another key cannot use it (RFC 9449 §5).
      const thief = oauth.DPoP(oclient, await oauth.generateKeyPair('ES256'));
      await expect(
        withNonceRetry(async () =>
          oauth.processRefreshTokenResponse(as, oclient, await oauth.refreshTokenGrantRequest(as, oclient, oauth.None(), refreshed.refresh_token!, { DPoP: thief, ...insecure })),
        ),
      ).rejects.toMatchObject({ error: 'invalid_grant' });
    });

    it('a private_key_jwt client exchanges its code (with DPoP), introspects and revokes', async () => {
      const signing = await oauth.generateKeyPair('ES256');
      const jwk = { ...(await exportJWK(signing.publicKey)), kid: 'k1', alg: 'ES256' };
      const client = await buildClient(server.context.runtime, {
        redirectUris: ['http://127.0.0.1:9/callback'],
        tokenEndpointAuthMethod: 'private_key_jwt',
        jwks: { keys: [jwk] },
      });
      const oclient: oauth.Client = { client_id: client.id };
      const clientAuth = oauth.PrivateKeyJwt({ key: signing.privateKey, kid: 'k1' });
      const DPoP = oauth.DPoP(oclient, await oauth.generateKeyPair('EdDSA'));

      const { callback, state, verifier } = await authorize(client);
      const params = oauth.validateAuthResponse(as, oclient, callback, state);
      const tokens = await withNonceRetry(async () =>
        oauth.processAuthorizationCodeResponse(
          as,
          oclient,
          await oauth.authorizationCodeGrantRequest(as, oclient, clientAuth, params, client.redirectUri, verifier, { DPoP, ...insecure }),
        ),
      );
      expect(tokens.token_type).toBe('dpop');

      const introspection = await oauth.processIntrospectionResponse(
        as,
        oclient,
        await oauth.introspectionRequest(as, oclient, clientAuth, tokens.access_token, insecure),
      );
      expect(introspection).toMatchObject({ active: true, client_id: client.id, token_type: 'DPoP' });

      await oauth.processRevocationResponse(await oauth.revocationRequest(as, oclient, clientAuth, tokens.access_token, insecure));
      const after = await oauth.processIntrospectionResponse(as, oclient, await oauth.introspectionRequest(as, oclient, clientAuth, tokens.access_token, insecure));
      expect(after.active).toBe(false);
    });
  });
}
