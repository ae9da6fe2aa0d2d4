/**
 * End to end with an independent strict client library: oauth4webapi discovers
 * the metadata, builds the authorization URL with PKCE and state, (a scripted browser signs in
 * and allows), validates the authorization response (state and iss), exchanges the code,
 * validates the RFC 9068 access token as a resource server would, refreshes, introspects and
 * revokes — against a running server, once per database.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as oauth from 'oauth4webapi';
import { DATABASE_KINDS } from '../support/databases.js';
import { Browser, buildClient, buildUser, type TestClient, type TestUser } from '../support/oauth.js';
import { startTestServer, type RunningTestServer } from '../support/e2e-server.js';

const insecure = { [oauth.allowInsecureRequests]: true } as const; // plain http on 127.0.0.1 only

for (const kind of DATABASE_KINDS) {
  describe(`oauth4webapi against a running server [${kind}]`, () => {
    let server: RunningTestServer;
    let as: oauth.AuthorizationServer;
    let user: TestUser;

    beforeAll(async () => {
      server = await startTestServer(kind);
      user = await buildUser(server.context.runtime);
    });

    afterAll(async () => {
      await server?.close();
    });

    it('discovers the authorization server metadata', async () => {
      const issuer = new URL(server.baseUrl);
      as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }));
      expect(as.issuer).toBe(server.baseUrl);
      expect(as.code_challenge_methods_supported).toEqual(['S256']);
      expect(as.authorization_response_iss_parameter_supported).toBe(true);
    });

    async function authorize(client: TestClient, scope: string) {
      const verifier = oauth.generateRandomCodeVerifier();
      const state = oauth.generateRandomState();
      const url = new URL(as.authorization_endpoint!);
      url.searchParams.set('response_type', 'code');
      url.searchParams.set('client_id', client.id);
      url.searchParams.set('redirect_uri', client.redirectUri);
      url.searchParams.set('scope', scope);
      url.searchParams.set('state', state);
      url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(verifier));
      url.searchParams.set('code_challenge_method', 'S256');
      const landing = await new Browser(server.baseUrl).authorize({ ...Object.fromEntries(url.searchParams) }, user);
      expect(landing.status).toBe(302);
      const callback = new URL(landing.headers.location!);
      return { callback, state, verifier };
    }

    for (const variant of ['confidential (client_secret_basic)', 'confidential (client_secret_post)', 'public (none)'] as const) {
      it(`runs the whole flow for a ${variant} client`, async () => {
        const isPublic = variant.startsWith('public');
        const client = await buildClient(server.context.runtime, { isPublic, redirectUris: ['http://127.0.0.1:9/callback'] });
        const oclient: oauth.Client = { client_id: client.id };
        const clientAuth = isPublic
          ? oauth.None()
          : variant.includes('post')
            ? oauth.ClientSecretPost(client.secret!)
            : oauth.ClientSecretBasic(client.secret!);

        // Authorization: state and iss are checked by the library.
        const { callback, state, verifier } = await authorize(client, 'products:read orders:read');
        const params = oauth.validateAuthResponse(as, oclient, callback, state);

        // Code exchange with PKCE.
        const tokens = await oauth.processAuthorizationCodeResponse(
          as,
          oclient,
          await oauth.authorizationCodeGrantRequest(as, oclient, clientAuth, params, client.redirectUri, verifier, insecure),
        );
        expect(tokens.token_type).toBe('bearer'); // oauth4webapi lower-cases it
        expect(tokens.scope).toBe('products:read orders:read');
        expect(typeof tokens.refresh_token).toBe('string');

        // The access token as a resource server checks it (RFC 9068, keys from jwks_uri).
        const claims = await oauth.validateJwtAccessToken(
          as,
          new Request(`${server.baseUrl}/graphql`, { headers: { authorization: `Bearer ${tokens.access_token}` } }),
          server.baseUrl,
          insecure,
        );
        // No `resource` was sent: the audience is both of Fieldgate's own resources (RFC 8707).
        expect(claims).toMatchObject({ iss: server.baseUrl, sub: String(user.id), client_id: client.id, aud: [server.baseUrl, `${server.baseUrl}/graphql`] });

        // Refresh with rotation.
        const refreshed = await oauth.processRefreshTokenResponse(
          as,
          oclient,
          await oauth.refreshTokenGrantRequest(as, oclient, clientAuth, tokens.refresh_token!, insecure),
        );
        expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);

        // Introspection: confidential clients only (RFC 7662 §2.1).
        const introspect = async () =>
          oauth.processIntrospectionResponse(as, oclient, await oauth.introspectionRequest(as, oclient, clientAuth, refreshed.access_token, insecure));
        if (isPublic) {
          // oauth4webapi reports the 401's Basic challenge rather than the JSON body.
          await expect(introspect()).rejects.toMatchObject({ status: 401 });
        } else {
          expect(await introspect()).toMatchObject({ active: true, client_id: client.id, sub: String(user.id), token_type: 'Bearer' });
        }

        // Revocation of the refresh token takes the family with it.
        await oauth.processRevocationResponse(await oauth.revocationRequest(as, oclient, clientAuth, refreshed.refresh_token!, insecure));
        if (!isPublic) expect((await introspect()).active).toBe(false);
        const refused = oauth.refreshTokenGrantRequest(as, oclient, clientAuth, refreshed.refresh_token!, insecure).then((response) =>
          oauth.processRefreshTokenResponse(as, oclient, response),
        );
        await expect(refused).rejects.toMatchObject({ error: 'invalid_grant' });
      });
    }

    it('reports a denied request as an access_denied authorization error to the library', async () => {
      const client = await buildClient(server.context.runtime, { redirectUris: ['http://127.0.0.1:9/callback'] });
      const oclient: oauth.Client = { client_id: client.id };
      const state = oauth.generateRandomState();
      const url = new URL(as.authorization_endpoint!);
      url.search = new URLSearchParams({
        response_type: 'code',
        client_id: client.id,
        redirect_uri: client.redirectUri,
        state,
        code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()),
        code_challenge_method: 'S256',
      }).toString();
      const landing = await new Browser(server.baseUrl).authorize(Object.fromEntries(url.searchParams), user, 'deny');
      expect(() => oauth.validateAuthResponse(as, oclient, new URL(landing.headers.location!), state)).toThrow(
        expect.objectContaining({ error: 'access_denied' }),
      );
    });
  });
}
