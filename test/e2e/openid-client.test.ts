/**
 * OpenID Connect Core end to end with openid-client (v6), a strict independent Relying Party:
 * discovery, the code flow with PKCE, state and nonce, strict ID Token validation (signature
 * against jwks_uri, iss, aud, exp, iat, nonce, at_hash, auth_time with max_age), userinfo,
 * and a refresh whose new ID Token keeps `sub` and `auth_time` (OIDC Core §12.2); ES256 by default, RS256 for a client
 * that registered it (OIDC Core §15.1).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as client from 'openid-client';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { DATABASE_KINDS } from '../support/databases.js';
import { Browser, buildClient, buildUser, type TestClient, type TestUser } from '../support/oauth.js';
import { startTestServer, type RunningTestServer } from '../support/e2e-server.js';

for (const kind of DATABASE_KINDS) {
  describe(`openid-client against a running server [${kind}]`, () => {
    let server: RunningTestServer;
    let user: TestUser;

    beforeAll(async () => {
      server = await startTestServer(kind);
      user = await buildUser(server.context.runtime);
      await server.context.runtime.users.updateProfile(user.username, { displayName: 'Ada Lovelace', email: 'ada@example.com', emailVerified: true });
    });

    afterAll(async () => {
      await server?.close();
    });

    async function configure(registered: TestClient, metadata: Partial<client.ClientMetadata> = {}): Promise<client.Configuration> {
      const config = await client.discovery(
        new URL(server.baseUrl),
        registered.id,
        { id_token_signed_response_alg: 'ES256', redirect_uris: [registered.redirectUri], ...metadata },
        registered.isPublic ? client.None() : client.ClientSecretBasic(registered.secret!),
        { execute: [client.allowInsecureRequests] },
      );
      return config;
    }

    async function signIn(config: client.Configuration, registered: TestClient, browser: Browser, extra: Record<string, string> = {}) {
      const verifier = client.randomPKCECodeVerifier();
      const state = client.randomState();
      const nonce = client.randomNonce();
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: registered.redirectUri,
        scope: 'openid profile email offline_access products:read',
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        state,
        nonce,
        ...extra,
      });
      const landing = await browser.authorize(Object.fromEntries(url.searchParams), user);
      expect(landing.status).toBe(302);
      return { callback: new URL(landing.headers.location!), verifier, state, nonce };
    }

    it('discovers an OpenID Provider whose document matches the RFC 8414 one', async () => {
      const registered = await buildClient(server.context.runtime, { redirectUris: ['http://127.0.0.1:9/cb'] });
      const config = await configure(registered);
      const metadata = config.serverMetadata();
      expect(metadata.issuer).toBe(server.baseUrl);
      expect(metadata.userinfo_endpoint).toBe(`${server.baseUrl}/userinfo`);
      expect(metadata.id_token_signing_alg_values_supported).toEqual(['ES256', 'RS256']);
      expect(metadata.subject_types_supported).toEqual(['public', 'pairwise']);
      expect(metadata.userinfo_signing_alg_values_supported).toEqual(['ES256', 'RS256']);
      expect(metadata.backchannel_logout_session_supported).toBe(true);
      expect(metadata.frontchannel_logout_supported).toBe(true);
      expect(metadata.frontchannel_logout_session_supported).toBe(true);
      const oauthDocument = await (await fetch(`${server.baseUrl}/.well-known/oauth-authorization-server`)).json();
      expect(oauthDocument).toEqual(JSON.parse(JSON.stringify(metadata)));
    });

    for (const variant of ['confidential', 'public'] as const) {
      it(`signs in a ${variant} client, validates the ID Token strictly, reads userinfo and refreshes`, async () => {
        const registered = await buildClient(server.context.runtime, { isPublic: variant === 'public', redirectUris: ['http://127.0.0.1:9/cb'] });
        const config = await configure(registered);
        const browser = new Browser(server.baseUrl);
        const { callback, verifier, state, nonce } = await signIn(config, registered, browser, { max_age: '300' });

        const tokens = await client.authorizationCodeGrant(config, callback, {
          pkceCodeVerifier: verifier,
          expectedState: state,
          expectedNonce: nonce,
          maxAge: 300,
          idTokenExpected: true,
        });
        const claims = tokens.claims()!;
        expect(claims.sub).toBe(String(user.id));
        expect(claims.aud).toBe(registered.id);
        expect(claims.nonce).toBe(nonce);
        expect(claims.name).toBe('Ada Lovelace');
        expect(typeof claims.auth_time).toBe('number');
        expect(tokens.refresh_token).toBeTypeOf('string');

        const info = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
        expect(info).toMatchObject({ sub: String(user.id), name: 'Ada Lovelace', preferred_username: user.username, email: 'ada@example.com', email_verified: true });

        const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
        const again = refreshed.claims()!;
        expect(again.sub).toBe(claims.sub);
        expect(again.auth_time).toBe(claims.auth_time);
        expect(again.nonce).toBeUndefined();
        expect(decodeJwt(refreshed.id_token!).at_hash).toBeTypeOf('string');
      });
    }

    it('signs in an RS256-only Relying Party (id_token_signed_response_alg RS256): ID Tokens, refreshed ones and signed userinfo are RS256', async () => {
      const registered = await buildClient(server.context.runtime, {
        redirectUris: ['http://127.0.0.1:9/rs256'],
        oidc: { idTokenSignedResponseAlg: 'RS256', userinfoSignedResponseAlg: 'RS256' },
      });
      // openid-client accepts an ID Token only in the algorithm of this metadata (RS256 is also its default).
      const config = await configure(registered, { id_token_signed_response_alg: 'RS256', userinfo_signed_response_alg: 'RS256' });
      const { callback, verifier, state, nonce } = await signIn(config, registered, new Browser(server.baseUrl), { max_age: '300' });
      const tokens = await client.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: verifier,
        expectedState: state,
        expectedNonce: nonce,
        maxAge: 300,
        idTokenExpected: true,
      });
      expect(decodeProtectedHeader(tokens.id_token!).alg).toBe('RS256');
      expect(tokens.claims()).toMatchObject({ sub: String(user.id), aud: registered.id, nonce, name: 'Ada Lovelace' });
      // The access token keeps the one format resource servers know.
      expect(decodeProtectedHeader(tokens.access_token).alg).toBe('ES256');
      const info = await client.fetchUserInfo(config, tokens.access_token, tokens.claims()!.sub);
      expect(info).toMatchObject({ sub: String(user.id), iss: server.baseUrl, aud: registered.id });
      const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
      expect(decodeProtectedHeader(refreshed.id_token!).alg).toBe('RS256');
      expect(refreshed.claims()!.sub).toBe(String(user.id));

      // The same RP expecting ES256 from this client would refuse its RS256 ID Tokens: the library does check.
      const mismatched = await configure(registered, { id_token_signed_response_alg: 'ES256' });
      const second = await signIn(mismatched, registered, new Browser(server.baseUrl));
      await expect(
        client.authorizationCodeGrant(mismatched, second.callback, { pkceCodeVerifier: second.verifier, expectedState: second.state, expectedNonce: second.nonce }),
      ).rejects.toMatchObject({ cause: { message: 'unexpected JWT "alg" header parameter' } });
    });

    it('gives a pairwise client a per-sector subject in the ID Token, the access token and at userinfo alike', async () => {
      const registered = await buildClient(server.context.runtime, { redirectUris: ['http://127.0.0.1:9/pairwise'], oidc: { subjectType: 'pairwise' } });
      const config = await configure(registered);
      const { callback, verifier, state, nonce } = await signIn(config, registered, new Browser(server.baseUrl));
      const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce });
      const sub = tokens.claims()!.sub;
      expect(sub).not.toBe(String(user.id));
      expect(sub).toMatch(/^[A-Za-z0-9_-]{43}$/);
      const info = await client.fetchUserInfo(config, tokens.access_token, sub);
      expect(info.sub).toBe(sub);
      // The client can decode its access token (RFC 9068): it names the user by the same pairwise sub.
      expect(decodeJwt(tokens.access_token).sub).toBe(sub);
    });

    it('reads a signed UserInfo response (application/jwt) as a client that registered userinfo_signed_response_alg', async () => {
      const registered = await buildClient(server.context.runtime, { redirectUris: ['http://127.0.0.1:9/signed'], oidc: { userinfoSignedResponseAlg: 'ES256' } });
      const config = await configure(registered, { userinfo_signed_response_alg: 'ES256' });
      const { callback, verifier, state, nonce } = await signIn(config, registered, new Browser(server.baseUrl));
      const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce });
      const info = await client.fetchUserInfo(config, tokens.access_token, tokens.claims()!.sub);
      expect(info).toMatchObject({ sub: String(user.id), name: 'Ada Lovelace', iss: server.baseUrl, aud: registered.id });
      // iss and aud exist only in the signed form; the raw answer is a JWT too.
      const raw = await fetch(`${server.baseUrl}/userinfo`, { headers: { Authorization: `Bearer ${tokens.access_token}` } });
      expect(raw.headers.get('content-type')).toBe('application/jwt');
    });
  });
}
