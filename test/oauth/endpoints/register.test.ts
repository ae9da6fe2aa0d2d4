/** Dynamic client registration (RFC 7591) and its management protocol (RFC 7592). */
import { startLogoutReceiver, type LogoutReceiver } from '../../support/logout-receiver.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import request from 'supertest';
import { sql } from 'drizzle-orm';
import { createTestRuntime, describeEachDatabase } from '../../support/runtime.js';
import { DATABASE_KINDS } from '../../support/databases.js';
import { clients } from '../../../src/db/schema.js';
import { RegistrationTokenStore } from '../../../src/oauth/stores/registration-tokens.js';
import { janitorPolicy, sweep } from '../../../src/oauth/janitor.js';
import { ConsentStore } from '../../../src/oauth/stores/consents.js';
import { CLIENT_ASSERTION_TYPE } from '../../../src/oauth/client-assertion.js';
import { assertion, signingKey } from '../../support/client-assertions.js';
import { authorizeParams, authorizePath, Browser, buildUser, formAction, formFields, obtainTokens, pathOf, redirectParams, type TestClient } from '../../support/oauth.js';
import { ClientRegistrationError } from '../../../src/oauth/stores/clients.js';

/** These tests open a database of their own, which is slow on a busy machine. */
const OWN_DATABASE_TIMEOUT_MS = 180_000;

const NATIVE = { redirect_uris: ['http://127.0.0.1/callback'], token_endpoint_auth_method: 'none', client_name: 'Agent' };

async function clientCount(context: () => { runtime: { db: import('../../../src/db/database.js').Db } }): Promise<number> {
  const [row] = await context().runtime.db.select({ n: sql<number>`count(*)::int` }).from(clients);
  return row!.n;
}

describeEachDatabase(
  'POST /register',
  (context) => {
    const register = (body: unknown) => request(context().app).post('/register').set('Content-Type', 'application/json').send(JSON.stringify(body));
    /** RFC 7592 §2.2: replaces the registration of `registered` (a 201 answer) with `body`. */
    const reregister = (registered: request.Response, body: Record<string, unknown>) =>
      request(context().app)
        .put(`/register/${registered.body.client_id}`)
        .set('Authorization', `Bearer ${registered.body.registration_access_token}`)
        .set('Content-Type', 'application/json')
        .send(JSON.stringify({ ...body, client_id: registered.body.client_id }));

    it('keeps and echoes application_type and require_auth_time', async () => {
      const res = await register({ ...NATIVE, application_type: 'native', require_auth_time: true });
      expect(res.status, res.text).toBe(201);
      expect(res.body).toMatchObject({ application_type: 'native', require_auth_time: true });
    });

    it('registers a public native client (RFC 7591 §3.2.1) and advertises the endpoint (RFC 8414)', async () => {
      const res = await register({ ...NATIVE, scope: 'products:read', client_uri: 'https://agent.example', unknown_field: { x: 1 } });
      expect(res.status).toBe(201);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.body).toMatchObject({
        client_name: 'Agent',
        redirect_uris: ['http://127.0.0.1/callback'],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
        scope: 'products:read',
        client_uri: 'https://agent.example',
        registration_client_uri: `http://localhost:3000/register/${res.body.client_id}`,
      });
      expect(res.body.client_secret).toBeUndefined();
      expect(res.body.unknown_field).toBeUndefined();
      expect(typeof res.body.registration_access_token).toBe('string');
      const stored = await context().runtime.clients.find(res.body.client_id);
      expect(stored).toMatchObject({ registrationType: 'dynamic', isPublic: true });
      expect(JSON.stringify(stored)).not.toContain(res.body.registration_access_token);
      const metadata = await request(context().app).get('/.well-known/oauth-authorization-server');
      expect(metadata.body.registration_endpoint).toBe('http://localhost:3000/register');
    });

    it('gives a confidential client a secret that works at the token endpoint (client_secret_post)', async () => {
      const res = await register({ redirect_uris: ['https://app.example/cb'], token_endpoint_auth_method: 'client_secret_post' });
      expect(res.status).toBe(201);
      expect(res.body.client_secret).toMatch(/^[A-Za-z0-9_-]{40,}$/);
      expect(res.body.client_secret_expires_at).toBe(0);
      const token = await request(context().app)
        .post('/token')
        .type('form')
        .send({ grant_type: 'refresh_token', refresh_token: 'nope', client_id: res.body.client_id, client_secret: res.body.client_secret });
      // Authenticated (unlike a wrong secret), then refused for the grant it may not use.
      expect(token.body.error).toBe('unauthorized_client');
    });

    it.each([
      ['client_secret_post', 'client_secret_basic'],
      ['client_secret_basic', 'client_secret_post'],
      [undefined, 'client_secret_post'],
    ] as const)('a client registered for %s is refused with the other secret method (%s): the same invalid_client', async (registered, other) => {
      const res = await register({ redirect_uris: ['https://app.example/cb'], ...(registered ? { token_endpoint_auth_method: registered } : {}) });
      expect(res.status).toBe(201);
      expect(res.body.token_endpoint_auth_method).toBe(registered ?? 'client_secret_basic');
      const { client_id: id, client_secret: secret } = res.body as { client_id: string; client_secret: string };
      const send = (method: string, withSecret = secret) => {
        const form = { grant_type: 'refresh_token', refresh_token: 'nope' };
        const test = request(context().app).post('/token').type('form');
        return method === 'client_secret_basic'
          ? test.auth(encodeURIComponent(id), encodeURIComponent(withSecret)).send(form)
          : test.send({ ...form, client_id: id, client_secret: withSecret });
      };
      const refused = await send(other);
      expect(refused.body).toMatchObject({ error: 'invalid_client', error_description: 'client authentication failed' });
      // Indistinguishable from a wrong secret sent the same way (401 with a Basic challenge via the header, else 400).
      const wrongSecret = await send(other, 'wrong');
      expect([refused.status, refused.headers['www-authenticate'], refused.body]).toEqual([wrongSecret.status, wrongSecret.headers['www-authenticate'], wrongSecret.body]);
      // The registered method authenticates, then the grant is what is refused.
      const accepted = await send(registered ?? 'client_secret_basic');
      expect(accepted.body.error).toBe('unauthorized_client');
    });

    it.each([
      ['javascript: URI', { redirect_uris: ['javascript:alert(1)'] }, 'invalid_redirect_uri'],
      ['data: URI', { redirect_uris: ['data:text/html,hi'] }, 'invalid_redirect_uri'],
      ['fragment', { redirect_uris: ['https://app.example/cb#x'] }, 'invalid_redirect_uri'],
      ['http on a public host', { redirect_uris: ['http://app.example/cb'] }, 'invalid_redirect_uri'],
      ['private-use scheme without a dot', { redirect_uris: ['myapp:/cb'] }, 'invalid_redirect_uri'],
      ['credentials', { redirect_uris: ['https://user:pw@app.example/cb'] }, 'invalid_redirect_uri'],
      // RFC 3986 §2: a URI is ASCII; the IRI would reach the Location header raw after consent (a 500, or Latin-1 bytes).
      ['an internationalized host not in its xn-- form', { redirect_uris: ['https://пример.example/cb'] }, 'invalid_redirect_uri'],
      ['a non-ASCII path', { redirect_uris: ['https://app.example/caf\u00e9'] }, 'invalid_redirect_uri'],
      ['a non-ASCII post-logout redirect URI', { ...NATIVE, post_logout_redirect_uris: ['https://app.example/caf\u00e9'] }, 'invalid_client_metadata'],
      ['loopback port 0, where no app listens', { redirect_uris: ['http://127.0.0.1:0/cb'] }, 'invalid_redirect_uri'],
      ['port 0 written with leading zeros', { redirect_uris: ['http://[::1]:000/cb'] }, 'invalid_redirect_uri'],
      ['no redirect URI', { client_name: 'x' }, 'invalid_redirect_uri'],
      ['empty redirect URIs', { redirect_uris: [] }, 'invalid_redirect_uri'],
      ['redirect_uris a string', { redirect_uris: 'https://app.example/cb' }, 'invalid_client_metadata'],
      ['redirect_uris of numbers', { redirect_uris: [1] }, 'invalid_client_metadata'],
      ['client_name a number', { ...NATIVE, client_name: 5 }, 'invalid_client_metadata'],
      ['client_name an object', { ...NATIVE, client_name: { en: 'x' } }, 'invalid_client_metadata'],
      ['client_name too long', { ...NATIVE, client_name: 'x'.repeat(201) }, 'invalid_client_metadata'],
      ['client_name with a C0 control', { ...NATIVE, client_name: 'Agent\u0007' }, 'invalid_client_metadata'],
      ['client_name with a C1 control', { ...NATIVE, client_name: 'Agent\u0085Bank' }, 'invalid_client_metadata'],
      ['client_name with a line separator', { ...NATIVE, client_name: 'Agent\u2028Bank' }, 'invalid_client_metadata'],
      ['software_id with a right-to-left override', { ...NATIVE, software_id: 'agent\u202Eevil' }, 'invalid_client_metadata'],
      ['logo_uri over http', { ...NATIVE, logo_uri: 'http://app.example/logo.png' }, 'invalid_client_metadata'],
      ['client_uri javascript:', { ...NATIVE, client_uri: 'javascript:alert(1)' }, 'invalid_client_metadata'],
      ['unknown grant type', { ...NATIVE, grant_types: ['password'] }, 'invalid_client_metadata'],
      ['grant_types without authorization_code', { ...NATIVE, grant_types: ['refresh_token'] }, 'invalid_client_metadata'],
      ['implicit response type', { ...NATIVE, response_types: ['token'] }, 'invalid_client_metadata'],
      ['grant_types null-ish string', { ...NATIVE, grant_types: 'authorization_code' }, 'invalid_client_metadata'],
      ['private_key_jwt without keys', { ...NATIVE, token_endpoint_auth_method: 'private_key_jwt' }, 'invalid_client_metadata'],
      ['unsupported auth method', { ...NATIVE, token_endpoint_auth_method: 'tls_client_auth' }, 'invalid_client_metadata'],
      ['private_key_jwt with a private key', { ...NATIVE, token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [{ kty: 'EC', crv: 'P-256', x: 'a', y: 'b', d: 'c' }] } }, 'invalid_client_metadata'],
      ['private_key_jwt with a symmetric key', { ...NATIVE, token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [{ kty: 'oct', k: 'c2VjcmV0' }] } }, 'invalid_client_metadata'],
      ['private_key_jwt with both jwks and jwks_uri', { ...NATIVE, token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [{ kty: 'OKP', crv: 'Ed25519', x: 'a' }] }, jwks_uri: 'https://app.example/jwks' }, 'invalid_client_metadata'],
      ['private_key_jwt with an http jwks_uri', { ...NATIVE, token_endpoint_auth_method: 'private_key_jwt', jwks_uri: 'http://app.example/jwks' }, 'invalid_client_metadata'],
      ['private_key_jwt with jwks not a set', { ...NATIVE, token_endpoint_auth_method: 'private_key_jwt', jwks: [{ kty: 'OKP', crv: 'Ed25519', x: 'a' }] }, 'invalid_client_metadata'],
      ['private_key_jwt with eleven keys', { ...NATIVE, token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: Array.from({ length: 11 }, () => ({ kty: 'OKP', crv: 'Ed25519', x: 'a' })) } }, 'invalid_client_metadata'],
      ['auth method a number', { ...NATIVE, token_endpoint_auth_method: 1 }, 'invalid_client_metadata'],
      // PostgreSQL stores neither in jsonb: the insert would fail with a 500.
      ['private_key_jwt with a NUL in a key', { ...NATIVE, token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [{ kty: 'OKP', crv: 'Ed25519', x: 'a\u0000b' }] } }, 'invalid_client_metadata'],
      ['private_key_jwt with half a surrogate pair in a key', { ...NATIVE, token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [{ kty: 'OKP', crv: 'Ed25519', x: 'a', kid: ['\ud800'] }] } }, 'invalid_client_metadata'],
      ['private_key_jwt with a NUL in a member name', { ...NATIVE, token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [{ kty: 'OKP', crv: 'Ed25519', x: 'a', 'x\u0000': 1 }] } }, 'invalid_client_metadata'],
      ['contacts with half a surrogate pair', { ...NATIVE, contacts: ['ops\udc00@app.example'] }, 'invalid_client_metadata'],
      ['unknown scope', { ...NATIVE, scope: 'admin' }, 'invalid_client_metadata'],
      ['scope an array', { ...NATIVE, scope: ['products:read'] }, 'invalid_client_metadata'],
      ['contacts a string', { ...NATIVE, contacts: 'a@example.com' }, 'invalid_client_metadata'],
      ['a JSON array', [NATIVE], 'invalid_client_metadata'],
      ['a JSON string', 'hello', 'invalid_client_metadata'],
      ['JSON null', null, 'invalid_client_metadata'],
      ['a number', 42, 'invalid_client_metadata'],
      // OIDC Registration §2 fields that promise what Fieldgate does not do: refused, never silently dropped.
      ['sector_identifier_uri, though the redirect URIs share one host', { ...NATIVE, subject_type: 'pairwise', sector_identifier_uri: 'https://rp.example/sector.json' }, 'invalid_client_metadata'],
      ['id_token_encrypted_response_alg', { ...NATIVE, id_token_encrypted_response_alg: 'RSA-OAEP' }, 'invalid_client_metadata'],
      ['userinfo_encrypted_response_enc', { ...NATIVE, userinfo_encrypted_response_enc: 'A128CBC-HS256' }, 'invalid_client_metadata'],
      ['default_max_age', { ...NATIVE, default_max_age: 300 }, 'invalid_client_metadata'],
      ['an application_type other than web or native', { ...NATIVE, application_type: 'bogus' }, 'invalid_client_metadata'],
      ['require_auth_time not a boolean', { ...NATIVE, require_auth_time: 'yes' }, 'invalid_client_metadata'],
      ['token_endpoint_auth_signing_alg with a secret method', { ...NATIVE, token_endpoint_auth_method: 'client_secret_basic', token_endpoint_auth_signing_alg: 'HS256' }, 'invalid_client_metadata'],
      ['token_endpoint_auth_signing_alg HS256 with private_key_jwt', { ...NATIVE, token_endpoint_auth_method: 'private_key_jwt', token_endpoint_auth_signing_alg: 'HS256', jwks: { keys: [{ kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo' }] } }, 'invalid_client_metadata'],
    ])('refuses %s with %s and stores nothing (RFC 7591 §3.2.2)', async (_label, body, error) => {
      const before = await clientCount(context);
      const res = await register(body);
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.body.error).toBe(error);
      expect(typeof res.body.error_description).toBe('string');
      expect(await clientCount(context)).toBe(before);
    });

    // A right-to-left override shows "Agent\u202Egnp.exe" as "Agentexe.png" on the consent page.
    // Invisible characters (zero-width space, word joiner, BOM, soft hyphen, tag characters) hide in a name as well,
    // and half of a surrogate pair would be stored as U+FFFD.
    it.each(['202A', '202B', '202C', '202D', '202E', '2066', '2067', '2068', '2069', '200E', '200F', '061C', '200B', '2060', 'FEFF', '00AD', 'E0041', 'D800'])(
      'refuses a client_name with the bidi control or invisible character U+%s as invalid_client_metadata and stores nothing',
      async (code) => {
        const before = await clientCount(context);
        const res = await register({ ...NATIVE, client_name: `Agent${String.fromCodePoint(parseInt(code, 16))}gnp.exe` });
        expect(res.status).toBe(400);
        expect(res.body).toEqual({ error: 'invalid_client_metadata', error_description: 'client_name must not contain control, invisible or bidirectional formatting characters' });
        expect(await clientCount(context)).toBe(before);
      },
    );

    it('registers dpop_bound_access_tokens (RFC 9449 §5.2), echoes it, and then refuses a token request without a proof', async () => {
      const res = await register({ ...NATIVE, dpop_bound_access_tokens: true });
      expect(res.status, res.text).toBe(201);
      expect(res.body.dpop_bound_access_tokens).toBe(true);
      expect(await context().runtime.clients.find(res.body.client_id)).toMatchObject({ dpopBoundAccessTokens: true });
      const bare = await request(context().app)
        .post('/token')
        .type('form')
        .send({ grant_type: 'authorization_code', client_id: res.body.client_id, code: 'x', redirect_uri: NATIVE.redirect_uris[0], code_verifier: 'a'.repeat(43) });
      expect(bare.status).toBe(400);
      expect(bare.body.error).toBe('invalid_dpop_proof');
      const read = await request(context().app).get(`/register/${res.body.client_id}`).set('Authorization', `Bearer ${res.body.registration_access_token}`);
      expect(read.body.dpop_bound_access_tokens).toBe(true);
      // RFC 7592 §2.2: a PUT that leaves it out turns it off.
      const put = await reregister(res, NATIVE);
      expect(put.status, put.text).toBe(200);
      expect(put.body.dpop_bound_access_tokens).toBeUndefined();
      const plain = await register(NATIVE);
      expect(plain.body.dpop_bound_access_tokens).toBeUndefined();
      expect((await register({ ...NATIVE, dpop_bound_access_tokens: 'yes' })).body.error).toBe('invalid_client_metadata');
    });

    it('registers id_token_signed_response_alg RS256 (OIDC Registration §2), echoes it, and signs that client’s ID Tokens with RS256', async () => {
      const res = await register({ ...NATIVE, id_token_signed_response_alg: 'RS256' });
      expect(res.status, res.text).toBe(201);
      expect(res.body.id_token_signed_response_alg).toBe('RS256');
      expect(await context().runtime.clients.find(res.body.client_id)).toMatchObject({ idTokenSignedResponseAlg: 'RS256' });
      const read = await request(context().app).get(`/register/${res.body.client_id}`).set('Authorization', `Bearer ${res.body.registration_access_token}`);
      expect(read.body.id_token_signed_response_alg).toBe('RS256');

      const client: TestClient = { id: res.body.client_id, secret: undefined, redirectUri: NATIVE.redirect_uris[0]!, redirectUris: NATIVE.redirect_uris, name: 'Agent', isPublic: true };
      const user = await buildUser(context().runtime);
      const tokens = (await obtainTokens(context().app, context().runtime, client, user, { scope: 'openid' })) as { id_token?: string; access_token: string };
      const jwks = createLocalJWKSet((await request(context().app).get('/.well-known/jwks.json')).body);
      const { protectedHeader, payload } = await jwtVerify(tokens.id_token!, jwks, { issuer: context().config.issuer, audience: client.id, algorithms: ['RS256'] });
      expect(protectedHeader).toMatchObject({ alg: 'RS256', typ: 'JWT' });
      expect(payload.sub).toBe(String(user.id));
      // The access token stays ES256, whatever the ID Token's algorithm.
      expect(decodeProtectedHeader(tokens.access_token).alg).toBe('ES256');

      // ES256 is accepted too; leaving the field out (here, and in a PUT) means ES256, which the answer says: a relying
      // party reading no value would expect RS256 (OIDC Registration §2).
      const es256 = await register({ ...NATIVE, id_token_signed_response_alg: 'ES256' });
      expect([es256.status, es256.body.id_token_signed_response_alg]).toEqual([201, 'ES256']);
      const plain = await register(NATIVE);
      expect(plain.body.id_token_signed_response_alg).toBe('ES256');
      const put = await reregister(res, NATIVE);
      expect(put.status, put.text).toBe(200);
      expect(put.body.id_token_signed_response_alg).toBe('ES256');
      expect(await context().runtime.clients.find(res.body.client_id)).toMatchObject({ idTokenSignedResponseAlg: null });
    });

    it('registers subject_type pairwise (OIDC Registration §2, Core §8): the ID Token’s sub is no user id, and one user’s differs per sector', async () => {
      const user = await buildUser(context().runtime);
      const subOf = async (redirectUri: string) => {
        const res = await register({ redirect_uris: [redirectUri], token_endpoint_auth_method: 'none', subject_type: 'pairwise' });
        expect(res.status, res.text).toBe(201);
        expect(res.body.subject_type).toBe('pairwise');
        const client: TestClient = { id: res.body.client_id, secret: undefined, redirectUri, redirectUris: [redirectUri], name: 'RP', isPublic: true };
        const tokens = (await obtainTokens(context().app, context().runtime, client, user, { scope: 'openid' })) as { id_token?: string };
        return decodeJwt(tokens.id_token!).sub;
      };
      const [photos, prints] = await Promise.all([subOf('https://photos.example/cb'), subOf('https://prints.example/cb')]);
      expect(photos).not.toBe(String(user.id));
      expect(prints).not.toBe(photos);
      expect((await register(NATIVE)).body.subject_type).toBe('public');
    });

    it('refuses a subject_type it does not offer, and pairwise over redirect URIs on several hosts (no sector_identifier_uri)', async () => {
      for (const body of [
        { ...NATIVE, subject_type: 'secret' },
        { ...NATIVE, subject_type: ['pairwise'] },
        { redirect_uris: ['https://a.example/cb', 'https://b.example/cb'], token_endpoint_auth_method: 'none', subject_type: 'pairwise' },
      ]) {
        const res = await register(body);
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.body).toMatchObject({ error: 'invalid_client_metadata', error_description: expect.stringContaining('subject_type') });
      }
    });

    it('keeps every user’s sub: a PUT may not change subject_type, nor move a pairwise client to another host (RFC 7592 §2.2)', async () => {
      const pairwise = await register({ redirect_uris: ['https://rp.example/cb'], token_endpoint_auth_method: 'none', subject_type: 'pairwise' });
      const dropped = await reregister(pairwise, { redirect_uris: ['https://rp.example/cb'], token_endpoint_auth_method: 'none' });
      expect(dropped.body).toMatchObject({ error: 'invalid_client_metadata', error_description: expect.stringContaining('subject_type') });
      const moved = await reregister(pairwise, { redirect_uris: ['https://elsewhere.example/cb'], token_endpoint_auth_method: 'none', subject_type: 'pairwise' });
      expect(moved.body.error).toBe('invalid_client_metadata');
      const samehost = await reregister(pairwise, { redirect_uris: ['https://rp.example/cb', 'https://rp.example/other'], token_endpoint_auth_method: 'none', subject_type: 'pairwise' });
      expect(samehost.status, samehost.text).toBe(200);
      const publicClient = await register(NATIVE);
      expect((await reregister(publicClient, { ...NATIVE, subject_type: 'pairwise' })).body.error).toBe('invalid_client_metadata');
    });

    it.each([['none'], ['HS256'], ['PS256'], ['EdDSA'], ['rs256'], [''], [256], [['RS256']], [{ alg: 'RS256' }], [true]])(
      'refuses id_token_signed_response_alg %j with invalid_client_metadata and stores nothing',
      async (alg) => {
        const before = await clientCount(context);
        const res = await register({ ...NATIVE, id_token_signed_response_alg: alg });
        expect(res.status).toBe(400);
        expect(res.body.error).toBe('invalid_client_metadata');
        expect(res.body.error_description).toMatch(/^id_token_signed_response_alg must be ES256 or RS256/);
        expect(await clientCount(context)).toBe(before);
      },
    );

    it('registers the OpenID scopes it advertises in scopes_supported among the client’s scopes, which are asked for by name', async () => {
      const advertised = (await request(context().app).get('/.well-known/oauth-authorization-server')).body.scopes_supported as string[];
      expect(advertised).toEqual(expect.arrayContaining(['openid', 'profile', 'products:read']));
      const res = await register({ redirect_uris: ['https://rp.example/cb'], token_endpoint_auth_method: 'none', scope: 'openid profile products:read' });
      expect(res.status, res.text).toBe(201);
      expect(res.body.scope).toBe('openid profile products:read');
      const client: TestClient = { id: res.body.client_id, secret: undefined, redirectUri: 'https://rp.example/cb', redirectUris: ['https://rp.example/cb'], name: 'RP', isPublic: true };
      const user = await buildUser(context().runtime);
      const exchange = async (scope?: string) => {
        const params = authorizeParams(client, scope === undefined ? {} : { scope });
        const code = redirectParams(await new Browser(context().app).authorize(params, user)).get('code');
        return request(context().app)
          .post('/token')
          .type('form')
          .send({ grant_type: 'authorization_code', code, redirect_uri: client.redirectUri, code_verifier: params.verifier, client_id: client.id });
      };
      const asked = await exchange('openid profile products:read');
      expect(asked.status, asked.text).toBe(200);
      expect(asked.body.scope).toBe('openid profile products:read');
      expect(typeof asked.body.id_token).toBe('string');
      // A request without scope gets the registered API scopes: OpenID Connect is asked for by name (Core §3.1.2.1).
      const byDefault = await exchange();
      expect(byDefault.status, byDefault.text).toBe(200);
      expect(byDefault.body.scope).toBe('products:read');
      expect(byDefault.body.id_token).toBeUndefined();
      // An API scope it did not register stays out of reach; a scope this server does not know is still refused.
      expect((await register({ ...NATIVE, scope: 'openid admin' })).body.error).toBe('invalid_client_metadata');
    });

    it('keeps a client_name in any script, with emoji joiners', async () => {
      for (const name of ['Größe Café', 'متجر', 'חנות', '価格 ✓', '👩‍💻 Dev', 'می\u200Cخواهم']) {
        const res = await register({ ...NATIVE, client_name: name });
        expect(res.status, name).toBe(201);
        expect(res.body.client_name).toBe(name);
      }
    });

    it('refuses a body that is not JSON, not UTF-8, or of another media type', async () => {
      const before = await clientCount(context);
      const broken = await request(context().app).post('/register').set('Content-Type', 'application/json').send('{"redirect_uris": [');
      expect(broken.status).toBe(400);
      expect(broken.body.error).toBe('invalid_client_metadata');
      const latin1 = await request(context().app).post('/register').set('Content-Type', 'application/json').serialize((body: unknown) => body as string).send(Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]) as unknown as string);
      expect(latin1.body.error).toBe('invalid_client_metadata');
      const form = await request(context().app).post('/register').type('form').send({ redirect_uris: 'https://a.example/cb' });
      expect(form.status).toBe(400);
      expect(form.body.error).toBe('invalid_client_metadata');
      expect(await clientCount(context)).toBe(before);
    });

    it('answers a huge body with 413 in JSON, storing nothing', async () => {
      const before = await clientCount(context);
      const res = await register({ ...NATIVE, client_name: 'x', padding: 'y'.repeat(100_000) });
      expect(res.status).toBe(413);
      expect(res.body.error).toBe('invalid_request');
      const many = await register({ redirect_uris: Array.from({ length: 21 }, (_, i) => `https://a.example/${i}`) });
      expect(many.status).toBe(400);
      expect(await clientCount(context)).toBe(before);
    });

    it('accepts https, loopback and private-use redirect URIs (RFC 8252 §7)', async () => {
      const res = await register({
        redirect_uris: ['https://app.example/cb', 'http://localhost:8080/cb', 'http://[::1]/cb', 'com.example.app:/oauth2redirect', 'https://xn--e1afmkfd.example/caf%C3%A9'],
        token_endpoint_auth_method: 'none',
      });
      expect(res.status).toBe(201);
      expect(res.body.client_name).toBe('Unnamed application (app.example)');
    });

    it('registers 20 clients at once, each with its own id (concurrency)', async () => {
      const results = await Promise.all(Array.from({ length: 20 }, () => register(NATIVE)));
      expect(results.map((r) => r.status)).toEqual(Array(20).fill(201));
      expect(new Set(results.map((r) => r.body.client_id)).size).toBe(20);
    });

    it('the janitor deletes self-registered clients never used within DYNAMIC_CLIENT_TTL, and only those', async () => {
      const { runtime } = context();
      const unused = (await register(NATIVE)).body.client_id as string;
      const used = (await register(NATIVE)).body.client_id as string;
      const fresh = (await register(NATIVE)).body.client_id as string;
      const cli = (await runtime.clients.create({ name: 'old static', redirectUris: ['https://s.example/cb'] })).client_id;
      const user = await runtime.users.create(`u${Date.now()}`, 'password-123');
      await new ConsentStore(runtime.db).grant(user.id, used, ['products:read']);
      await runtime.db.execute(sql`update ${clients} set created_at = now() - interval '2 days' where id in (${unused}, ${used}, ${cli})`);
      const result = await sweep(runtime.db, { ...janitorPolicy(context().config), dynamicClientTtl: 86_400 });
      expect(result.unusedClients).toBe(1);
      expect(await runtime.clients.find(unused)).toBeUndefined();
      for (const kept of [used, fresh, cli]) expect(await runtime.clients.find(kept)).toBeDefined();
    });

    it('answers other methods with 405 in JSON', async () => {
      const res = await request(context().app).get('/register');
      expect(res.status).toBe(405);
      expect(res.headers.allow).toBe('POST');
      expect(res.body.error).toBe('invalid_request');
    });

    describe('RFC 7592 management', () => {
      async function registered() {
        const res = await register({ ...NATIVE, grant_types: ['authorization_code', 'refresh_token'] });
        expect(res.status).toBe(201);
        return res.body as { client_id: string; registration_access_token: string; registration_client_uri: string };
      }
      const path = (id: string) => `/register/${encodeURIComponent(id)}`;

      it('reads the configuration with the registration access token (§2.1)', async () => {
        const client = await registered();
        const res = await request(context().app).get(path(client.client_id)).set('Authorization', `Bearer ${client.registration_access_token}`);
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ client_id: client.client_id, client_name: 'Agent', grant_types: ['authorization_code', 'refresh_token'] });
        // §3: registration_access_token and registration_client_uri are REQUIRED in the client information response.
        expect(res.body.registration_access_token).toBe(client.registration_access_token);
        expect(res.body.registration_client_uri).toBe(client.registration_client_uri);
      });

      it('answers a client id that no client can have (a NUL character) with 401 invalid_token, never a 500 (§2.1)', async () => {
        const client = await registered();
        for (const method of ['get', 'put', 'delete'] as const) {
          const res = await request(context().app)[method](path('a\u0000b')).set('Authorization', `Bearer ${client.registration_access_token}`).set('Content-Type', 'application/json').send('{}');
          expect(res.status, method).toBe(401);
          expect(res.body.error).toBe('invalid_token');
        }
      });

      it('says of a client id path that does not percent-decode that the URL is at fault, not the body', async () => {
        const client = await registered();
        const res = await request(context().app).get('/register/%E0%A4%A').set('Authorization', `Bearer ${client.registration_access_token}`);
        expect(res.status).toBe(400);
        expect(res.body).toEqual({ error: 'invalid_request', error_description: 'the URL path is not valid percent-encoded UTF-8' });
      });

      it('refuses a missing, wrong or another client’s token with 401 invalid_token (§2)', async () => {
        const a = await registered();
        const b = await registered();
        const missing = await request(context().app).get(path(a.client_id));
        expect(missing.status).toBe(401);
        expect(missing.headers['www-authenticate']).toMatch(/^Bearer/);
        const wrong = await request(context().app).get(path(a.client_id)).set('Authorization', 'Bearer nope');
        expect(wrong.status).toBe(401);
        expect(wrong.body.error).toBe('invalid_token');
        const crossed = await request(context().app).delete(path(a.client_id)).set('Authorization', `Bearer ${b.registration_access_token}`);
        expect(crossed.status).toBe(401);
        expect(await context().runtime.clients.find(a.client_id)).toBeDefined();
        const unknown = await request(context().app).get(path('no-such-client')).set('Authorization', `Bearer ${a.registration_access_token}`);
        expect(unknown.status).toBe(401);
      });

      it('replaces the metadata with PUT, keeping the token (§2.2)', async () => {
        const client = await registered();
        const auth = `Bearer ${client.registration_access_token}`;
        const res = await request(context().app)
          .put(path(client.client_id))
          .set('Authorization', auth)
          .set('Content-Type', 'application/json')
          .send(JSON.stringify({ client_id: client.client_id, redirect_uris: ['https://new.example/cb'], token_endpoint_auth_method: 'none', client_name: 'Renamed' }));
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ client_name: 'Renamed', redirect_uris: ['https://new.example/cb'], grant_types: ['authorization_code'] });
        // §3: the token is not rotated, and the answer says so.
        expect(res.body.registration_access_token).toBe(client.registration_access_token);
        const again = await request(context().app).get(path(client.client_id)).set('Authorization', auth);
        expect(again.body.client_name).toBe('Renamed');
      });

      it('reads a null client_secret in a PUT as an omitted one (§2.2), and still refuses a wrong one', async () => {
        const client = await registered();
        const put = (body: Record<string, unknown>) =>
          request(context().app)
            .put(path(client.client_id))
            .set('Authorization', `Bearer ${client.registration_access_token}`)
            .set('Content-Type', 'application/json')
            .send(JSON.stringify({ ...NATIVE, client_id: client.client_id, ...body }));
        const nulled = await put({ client_secret: null, client_name: 'Nulled' });
        expect(nulled.status, nulled.text).toBe(200);
        expect(nulled.body.client_name).toBe('Nulled');
        expect((await put({ client_secret: 'guess' })).body.error).toBe('invalid_client_metadata');
      });

      it('refuses a PUT naming another client_id, switching to a secret, or with bad metadata', async () => {
        const client = await registered();
        const put = (body: unknown) =>
          request(context().app).put(path(client.client_id)).set('Authorization', `Bearer ${client.registration_access_token}`).set('Content-Type', 'application/json').send(JSON.stringify(body));
        expect((await put({ ...NATIVE, client_id: 'other' })).body.error).toBe('invalid_client_metadata');
        expect((await put({ ...NATIVE, client_id: client.client_id, token_endpoint_auth_method: 'client_secret_basic' })).body.error).toBe('invalid_client_metadata');
        expect((await put({ ...NATIVE, client_id: client.client_id, redirect_uris: ['javascript:x'] })).body.error).toBe('invalid_redirect_uri');
        const stored = await context().runtime.clients.find(client.client_id);
        expect(stored?.name).toBe('Agent');
      });

      it('deletes the client with DELETE (§2.3); its token then stops working', async () => {
        const client = await registered();
        const auth = `Bearer ${client.registration_access_token}`;
        const res = await request(context().app).delete(path(client.client_id)).set('Authorization', auth);
        expect(res.status).toBe(204);
        expect(await context().runtime.clients.find(client.client_id)).toBeUndefined();
        expect((await request(context().app).get(path(client.client_id)).set('Authorization', auth)).status).toBe(401);
      });

      it('never lets a registration access token manage a CLI-registered client', async () => {
        const cli = await context().runtime.clients.create({ name: 'static', redirectUris: ['https://s.example/cb'] });
        const res = await request(context().app).get(path(cli.client_id)).set('Authorization', 'Bearer x');
        expect(res.status).toBe(401);
      });
    });

    describe('OpenID logout metadata (RP-Initiated, Back-Channel and Front-Channel Logout)', () => {
      const LOGOUT = {
        post_logout_redirect_uris: ['https://rp.example/bye', 'http://127.0.0.1/bye'],
        backchannel_logout_uri: 'https://rp.example/bc',
        backchannel_logout_session_required: true,
        frontchannel_logout_uri: 'http://127.0.0.1/fc?tenant=1',
        frontchannel_logout_session_required: false,
      };
      const manage = (client: { client_id: string; registration_access_token: string }) => ({
        get: () => request(context().app).get(`/register/${encodeURIComponent(client.client_id)}`).set('Authorization', `Bearer ${client.registration_access_token}`),
        put: (body: Record<string, unknown>) =>
          request(context().app)
            .put(`/register/${encodeURIComponent(client.client_id)}`)
            .set('Authorization', `Bearer ${client.registration_access_token}`)
            .set('Content-Type', 'application/json')
            .send(JSON.stringify({ ...NATIVE, client_id: client.client_id, ...body })),
      });

      let receiver: LogoutReceiver;
      let received: LogoutReceiver['received'];
      let receiverUrl: string;
      beforeAll(async () => {
        receiver = await startLogoutReceiver();
        ({ received, url: receiverUrl } = receiver);
      });
      afterAll(() => {
        receiver?.close();
      });

      /** Registers a public client for `metadata`, signs a new user in and returns the ID Token of a code flow. */
      async function signedIn(metadata: Record<string, unknown>) {
        const registration = await register({ redirect_uris: ['https://rp.example/cb'], token_endpoint_auth_method: 'none', ...metadata });
        expect(registration.status).toBe(201);
        const id = registration.body.client_id as string;
        const client: TestClient = { id, secret: undefined, redirectUri: 'https://rp.example/cb', redirectUris: ['https://rp.example/cb'], name: 'RP', isPublic: true };
        const browser = new Browser(context().app);
        const params = authorizeParams(client, { scope: 'openid' });
        const code = redirectParams(await browser.authorize(params, await buildUser(context().runtime))).get('code');
        const token = await request(context().app)
          .post('/token')
          .type('form')
          .send({ grant_type: 'authorization_code', code, redirect_uri: client.redirectUri, code_verifier: params.verifier, client_id: id });
        expect(token.status).toBe(200);
        return { id, browser, idToken: token.body.id_token as string };
      }

      const logoutPath = (params: Record<string, string>) => `/logout?${new URLSearchParams(params).toString()}`;

      it('stores each field and echoes it at registration and at the RFC 7592 read; a client without them shows none', async () => {
        const res = await register({ ...NATIVE, ...LOGOUT });
        expect(res.status).toBe(201);
        expect(res.body).toMatchObject(LOGOUT);
        expect(await context().runtime.clients.find(res.body.client_id)).toMatchObject({
          postLogoutRedirectUris: LOGOUT.post_logout_redirect_uris,
          backchannelLogoutUri: LOGOUT.backchannel_logout_uri,
          backchannelLogoutSessionRequired: true,
          frontchannelLogoutUri: LOGOUT.frontchannel_logout_uri,
          frontchannelLogoutSessionRequired: false,
        });
        const read = await manage(res.body).get();
        expect(read.status).toBe(200);
        expect(read.body).toMatchObject(LOGOUT);
        const plain = await register(NATIVE);
        for (const field of Object.keys(LOGOUT)) expect(plain.body[field], field).toBeUndefined();
      });

      it('lets /logout return only to a registered post_logout_redirect_uri, and POSTs the logout token (with sid) to the registered back-channel URI', async () => {
        const bye = 'https://rp.example/bye';
        const { id, browser, idToken } = await signedIn({ post_logout_redirect_uris: [bye], backchannel_logout_uri: `${receiverUrl}/bc`, backchannel_logout_session_required: true });
        for (const unregistered of ['https://rp.example/elsewhere', `${bye}/`, 'https://evil.example/bye']) {
          const refused = await browser.open(logoutPath({ id_token_hint: idToken, post_logout_redirect_uri: unregistered }));
          expect(refused.status, unregistered).toBe(400);
          expect(refused.headers.location).toBeUndefined();
        }
        received.length = 0;
        const page = await browser.open(logoutPath({ id_token_hint: idToken, post_logout_redirect_uri: bye, state: 'st' }));
        expect(page.status).toBe(200);
        const done = await browser.submit(formAction(page.text), { ...formFields(page.text), decision: 'logout' });
        expect(done.status).toBe(303);
        expect(done.headers.location).toBe(`${bye}?state=st`);
        await expect.poll(() => received.length, { timeout: 10_000 }).toBe(1);
        expect(received[0]!.path).toBe('/bc');
        const jwks = createLocalJWKSet((await request(context().app).get('/.well-known/jwks.json')).body);
        const { payload } = await jwtVerify(received[0]!.token, jwks, { issuer: context().config.issuer, audience: id, typ: 'logout+jwt' });
        expect(payload.sub).toBe(decodeJwt(idToken).sub);
        expect(payload.sid).toBe(decodeJwt(idToken).sid);
      });

      it('loads a registered front-channel logout URI, with iss and sid when it asked for them', async () => {
        const { id, browser, idToken } = await signedIn({ frontchannel_logout_uri: 'https://rp.example/fc', frontchannel_logout_session_required: true });
        const page = await browser.open(logoutPath({ client_id: id }));
        const done = await browser.submit(formAction(page.text), { ...formFields(page.text), decision: 'logout' });
        expect(done.status).toBe(200);
        const src = /<iframe src="([^"]+)"/.exec(done.text)?.[1]?.replaceAll('&amp;', '&');
        const frame = new URL(src!);
        expect(frame.origin + frame.pathname).toBe('https://rp.example/fc');
        expect(frame.searchParams.get('iss')).toBe(context().config.issuer);
        expect(frame.searchParams.get('sid')).toBe(decodeJwt(idToken).sid);
        expect(done.headers['content-security-policy']).toContain('frame-src https://rp.example');
      });

      it.each([
        ['a javascript: post-logout URI', { post_logout_redirect_uris: ['javascript:alert(1)'] }, 'post_logout_redirect_uris[0]'],
        ['a relative post-logout URI', { post_logout_redirect_uris: ['https://rp.example/ok', '/bye'] }, 'post_logout_redirect_uris[1]'],
        ['a post-logout URI with a fragment', { post_logout_redirect_uris: ['https://rp.example/bye#x'] }, 'post_logout_redirect_uris[0]'],
        ['a post-logout URI over http on a public host', { post_logout_redirect_uris: ['http://rp.example/bye'] }, 'post_logout_redirect_uris[0]'],
        ['a post-logout URI with credentials', { post_logout_redirect_uris: ['https://u:p@rp.example/bye'] }, 'post_logout_redirect_uris[0]'],
        ['a post-logout URI with a newline', { post_logout_redirect_uris: ['https://rp.example/b\nye'] }, 'post_logout_redirect_uris[0]'],
        ['post_logout_redirect_uris a string', { post_logout_redirect_uris: 'https://rp.example/bye' }, 'post_logout_redirect_uris'],
        ['post_logout_redirect_uris an object', { post_logout_redirect_uris: { 0: 'https://rp.example/bye' } }, 'post_logout_redirect_uris'],
        ['post_logout_redirect_uris of numbers', { post_logout_redirect_uris: [1] }, 'post_logout_redirect_uris'],
        ['21 post-logout URIs', { post_logout_redirect_uris: Array.from({ length: 21 }, (_, i) => `https://rp.example/${i}`) }, 'post_logout_redirect_uris'],
        ['1000 post-logout URIs', { post_logout_redirect_uris: Array.from({ length: 1000 }, () => 'https://a/') }, 'post_logout_redirect_uris'],
        ['a post-logout URI of 2001 characters', { post_logout_redirect_uris: [`https://rp.example/${'x'.repeat(1982)}`] }, 'post_logout_redirect_uris'],
        ['a javascript: back-channel URI', { backchannel_logout_uri: 'javascript:alert(1)' }, 'backchannel_logout_uri'],
        ['a relative back-channel URI', { backchannel_logout_uri: '/bc' }, 'backchannel_logout_uri'],
        ['a back-channel URI with a fragment', { backchannel_logout_uri: 'https://rp.example/bc#x' }, 'backchannel_logout_uri'],
        ['a back-channel URI over http on a public host', { backchannel_logout_uri: 'http://rp.example/bc' }, 'backchannel_logout_uri'],
        ['an empty back-channel URI', { backchannel_logout_uri: '' }, 'backchannel_logout_uri'],
        ['a back-channel URI that is a number', { backchannel_logout_uri: 5 }, 'backchannel_logout_uri'],
        ['a back-channel URI that is a list', { backchannel_logout_uri: ['https://rp.example/bc'] }, 'backchannel_logout_uri'],
        ['a data: front-channel URI', { frontchannel_logout_uri: 'data:text/html,<script>alert(1)</script>' }, 'frontchannel_logout_uri'],
        ['a front-channel URI with a fragment', { frontchannel_logout_uri: 'https://rp.example/fc#x' }, 'frontchannel_logout_uri'],
        ['a front-channel URI with a tab', { frontchannel_logout_uri: 'https://rp.example/f\tc' }, 'frontchannel_logout_uri'],
        ['backchannel_logout_session_required "true"', { backchannel_logout_session_required: 'true' }, 'backchannel_logout_session_required'],
        ['backchannel_logout_session_required 1', { backchannel_logout_session_required: 1 }, 'backchannel_logout_session_required'],
        ['backchannel_logout_session_required []', { backchannel_logout_session_required: [] }, 'backchannel_logout_session_required'],
        ['frontchannel_logout_session_required "false"', { frontchannel_logout_session_required: 'false' }, 'frontchannel_logout_session_required'],
        ['frontchannel_logout_session_required 0', { frontchannel_logout_session_required: 0 }, 'frontchannel_logout_session_required'],
      ])('refuses %s with invalid_client_metadata naming the field, storing nothing and changing nothing by PUT', async (_label, hostile, field) => {
        const existing = (await register({ ...NATIVE, ...LOGOUT })).body as { client_id: string; registration_access_token: string };
        const before = await clientCount(context);
        const res = await register({ ...NATIVE, ...hostile });
        expect(res.status).toBe(400);
        expect(res.body.error).toBe('invalid_client_metadata');
        expect(res.body.error_description.startsWith(field)).toBe(true);
        expect(await clientCount(context)).toBe(before);
        const put = await manage(existing).put({ ...LOGOUT, ...hostile });
        expect(put.status).toBe(400);
        expect(put.body.error).toBe('invalid_client_metadata');
        expect((await manage(existing).get()).body).toMatchObject(LOGOUT);
      });

      it('holds /register and the CLI to one rule for logout URIs', async () => {
        const { runtime } = context();
        for (const [uri, accepted] of [
          ['https://rp.example/ok', true],
          ['http://localhost:8080/bye', true],
          ['http://[::1]/bye', true],
          ['http://127.0.0.1/bye', true],
          ['http://10.0.0.1/bye', false],
          ['http://127.evil.example/bye', false],
          ['com.example.app:/bye', false],
          ['https://rp.example/bye#x', false],
          ['https://rp.example/b ye', false],
          ['ftp://rp.example/bye', false],
        ] as const) {
          const viaRegister = await register({ ...NATIVE, post_logout_redirect_uris: [uri], backchannel_logout_uri: uri });
          const viaCli = runtime.clients.create({ name: 'cli', redirectUris: ['https://rp.example/cb'], oidc: { postLogoutRedirectUris: [uri], backchannelLogoutUri: uri } });
          if (accepted) {
            expect(viaRegister.status, uri).toBe(201);
            await expect(viaCli, uri).resolves.toMatchObject({ post_logout_redirect_uris: [uri], backchannel_logout_uri: uri });
          } else {
            expect(viaRegister.status, uri).toBe(400);
            const problem = viaRegister.body.error_description.replace(/^post_logout_redirect_uris\[0\] /, '');
            await expect(viaCli, uri).rejects.toThrow(ClientRegistrationError);
            await expect(viaCli, uri).rejects.toThrow(problem);
          }
        }
      });

      it('holds the front-channel logout page to the scheme, host and port of a redirect URI, at /register and in the CLI (Front-Channel Logout §2)', async () => {
        const { runtime } = context();
        const redirectUris = ['https://rp.example/cb', 'http://127.0.0.1/callback'];
        for (const [uri, accepted] of [
          ['https://rp.example/fc', true],
          ['https://rp.example/other/path?tenant=1', true],
          ['http://127.0.0.1/fc', true],
          ['https://evil.example/fc', false],
          ['https://rp.example:8443/fc', false],
          ['https://sub.rp.example/fc', false],
          ['http://localhost/fc', false],
        ] as const) {
          const viaRegister = await register({ redirect_uris: redirectUris, token_endpoint_auth_method: 'none', frontchannel_logout_uri: uri });
          const viaCli = runtime.clients.create({ name: 'cli', redirectUris, oidc: { frontchannelLogoutUri: uri } });
          if (accepted) {
            expect(viaRegister.status, uri).toBe(201);
            await expect(viaCli, uri).resolves.toMatchObject({ frontchannel_logout_uri: uri });
          } else {
            expect(viaRegister.status, uri).toBe(400);
            expect(viaRegister.body, uri).toEqual({ error: 'invalid_client_metadata', error_description: 'frontchannel_logout_uri must have the scheme, host and port of one of the redirect URIs' });
            await expect(viaCli, uri).rejects.toThrow('must have the scheme, host and port of one of the redirect URIs');
          }
        }
        const existing = (await register({ redirect_uris: redirectUris, token_endpoint_auth_method: 'none', frontchannel_logout_uri: 'https://rp.example/fc' })).body as {
          client_id: string;
        };
        // Moving the redirect URIs away from the page's origin is refused too; keeping one there is fine.
        await expect(runtime.clients.update(existing.client_id, { redirectUris: ['https://elsewhere.example/cb'] })).rejects.toThrow(/front-channel logout URI/);
        await expect(runtime.clients.update(existing.client_id, { redirectUris: ['https://rp.example/cb2'] })).resolves.toMatchObject({ redirect_uris: ['https://rp.example/cb2'] });
        await expect(runtime.clients.update(existing.client_id, { redirectUris: ['https://elsewhere.example/cb'], oidc: { frontchannelLogoutUri: '' } })).resolves.toMatchObject({
          redirect_uris: ['https://elsewhere.example/cb'],
        });
      });

      it('changes the settings with PUT and drops those the new metadata leaves out (RFC 7592 §2.2); /logout follows at once', async () => {
        const client = (await register({ ...NATIVE, ...LOGOUT })).body as { client_id: string; registration_access_token: string };
        const fresh = 'https://rp.example/new-bye';
        const changed = await manage(client).put({ post_logout_redirect_uris: [fresh], backchannel_logout_uri: 'https://rp.example/bc2' });
        expect(changed.status).toBe(200);
        expect(changed.body).toMatchObject({ post_logout_redirect_uris: [fresh], backchannel_logout_uri: 'https://rp.example/bc2', backchannel_logout_session_required: false });
        expect(changed.body.frontchannel_logout_uri).toBeUndefined();
        expect(changed.body.frontchannel_logout_session_required).toBeUndefined();
        expect(await context().runtime.clients.find(client.client_id)).toMatchObject({
          postLogoutRedirectUris: [fresh],
          backchannelLogoutSessionRequired: false,
          frontchannelLogoutUri: null,
          frontchannelLogoutSessionRequired: false,
        });
        const toOld = await request(context().app).get(logoutPath({ client_id: client.client_id, post_logout_redirect_uri: LOGOUT.post_logout_redirect_uris[0]! }));
        expect(toOld.status).toBe(400);
        const toNew = await request(context().app).get(logoutPath({ client_id: client.client_id, post_logout_redirect_uri: fresh, state: 's' }));
        expect([toNew.status, toNew.headers.location]).toEqual([303, `${fresh}?state=s`]);

        const removed = await manage(client).put({});
        expect(removed.status).toBe(200);
        for (const field of Object.keys(LOGOUT)) expect(removed.body[field], field).toBeUndefined();
        expect(await context().runtime.clients.find(client.client_id)).toMatchObject({ postLogoutRedirectUris: [], backchannelLogoutUri: null, frontchannelLogoutUri: null });
        expect((await request(context().app).get(logoutPath({ client_id: client.client_id, post_logout_redirect_uri: fresh }))).status).toBe(400);
      });

      it('leaves one whole set of settings after 10 concurrent PUTs, never a mix', async () => {
        const client = (await register(NATIVE)).body as { client_id: string; registration_access_token: string };
        const results = await Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            manage(client).put({ post_logout_redirect_uris: [`https://rp.example/${i}/bye`], backchannel_logout_uri: `https://rp.example/${i}/bc`, frontchannel_logout_uri: `http://127.0.0.1/${i}/fc` }),
          ),
        );
        expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
        const stored = await context().runtime.clients.find(client.client_id);
        const winner = /^https:\/\/rp\.example\/(\d)\/bye$/.exec(stored!.postLogoutRedirectUris[0]!)![1];
        expect(stored).toMatchObject({ backchannelLogoutUri: `https://rp.example/${winner}/bc`, frontchannelLogoutUri: `http://127.0.0.1/${winner}/fc` });
      });
    });

    describe('private_key_jwt (RFC 7591 §2 jwks, RFC 7523)', () => {
      const refreshForm = { grant_type: 'refresh_token', refresh_token: 'nope', client_assertion_type: CLIENT_ASSERTION_TYPE };

      it('registers a client with its public keys and no secret; only an assertion signed by them authenticates it', async () => {
        const key = await signingKey();
        const res = await register({ redirect_uris: ['https://app.example/cb'], token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [key.publicJwk] } });
        expect(res.status).toBe(201);
        expect(res.body).toMatchObject({ token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [key.publicJwk] } });
        expect(res.body.client_secret).toBeUndefined();
        const id = res.body.client_id as string;
        const signed = await request(context().app).post('/token').type('form').send({ ...refreshForm, client_assertion: await assertion(id, key) });
        // Authenticated, then refused for a grant it did not register.
        expect(signed.body.error).toBe('unauthorized_client');
        const otherKey = await request(context().app).post('/token').type('form').send({ ...refreshForm, client_assertion: await assertion(id, await signingKey()) });
        expect(otherKey.body).toMatchObject({ error: 'invalid_client', error_description: 'client authentication failed' });
        const asPublic = await request(context().app).post('/token').type('form').send({ grant_type: 'refresh_token', refresh_token: 'nope', client_id: id });
        expect(asPublic.body.error).toBe('invalid_client');
      });

      it('holds a client to the token_endpoint_auth_signing_alg it registered (OIDC Registration §2)', async () => {
        const [ec, rsa] = [await signingKey('ES256'), await signingKey('RS256')];
        const res = await register({ redirect_uris: ['https://app.example/cb'], token_endpoint_auth_method: 'private_key_jwt', token_endpoint_auth_signing_alg: 'ES256', jwks: { keys: [ec.publicJwk, rsa.publicJwk] } });
        expect(res.status, res.text).toBe(201);
        expect(res.body.token_endpoint_auth_signing_alg).toBe('ES256');
        const id = res.body.client_id as string;
        const signedWith = async (key: typeof ec) => request(context().app).post('/token').type('form').send({ ...refreshForm, client_assertion: await assertion(id, key) });
        expect((await signedWith(ec)).body.error).toBe('unauthorized_client');
        expect((await signedWith(rsa)).body.error).toBe('invalid_client');
      });

      it('rotates its keys with PUT: the old key stops working, and it cannot switch to a secret', async () => {
        const [oldKey, newKey] = [await signingKey(), await signingKey()];
        const res = await register({ redirect_uris: ['https://app.example/cb'], token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [oldKey.publicJwk] } });
        const { client_id: id, registration_access_token: token } = res.body as { client_id: string; registration_access_token: string };
        const put = (body: Record<string, unknown>) =>
          request(context().app).put(`/register/${encodeURIComponent(id)}`).set('Authorization', `Bearer ${token}`).set('Content-Type', 'application/json').send(JSON.stringify({ client_id: id, redirect_uris: ['https://app.example/cb'], ...body }));
        expect((await put({ token_endpoint_auth_method: 'client_secret_basic' })).body.error).toBe('invalid_client_metadata');
        expect((await put({ token_endpoint_auth_method: 'none' })).body.error).toBe('invalid_client_metadata');
        const rotated = await put({ token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [newKey.publicJwk] } });
        expect(rotated.status).toBe(200);
        expect(rotated.body.jwks).toEqual({ keys: [newKey.publicJwk] });
        const withOld = await request(context().app).post('/token').type('form').send({ ...refreshForm, client_assertion: await assertion(id, oldKey) });
        expect(withOld.body.error).toBe('invalid_client');
        const withNew = await request(context().app).post('/token').type('form').send({ ...refreshForm, client_assertion: await assertion(id, newKey) });
        expect(withNew.body.error).toBe('unauthorized_client');
      });

      it('keeps a jwks_uri by reference, and no keys for a client using a secret', async () => {
        const byReference = await register({ redirect_uris: ['https://app.example/cb'], token_endpoint_auth_method: 'private_key_jwt', jwks_uri: 'https://app.example/jwks.json' });
        expect(byReference.status).toBe(201);
        expect(byReference.body).toMatchObject({ jwks_uri: 'https://app.example/jwks.json' });
        expect(byReference.body.jwks).toBeUndefined();
        const secretClient = await register({ redirect_uris: ['https://app.example/cb'], jwks_uri: 'https://app.example/jwks.json' });
        expect(secretClient.status).toBe(201);
        expect(secretClient.body.jwks_uri).toBeUndefined();
        expect((await context().runtime.clients.find(secretClient.body.client_id))?.jwksUri).toBeNull();
      });
    });

    it('names a native app’s private-use scheme in form-action, so the browser follows the sign-in and consent redirects to the app', async () => {
      const registered = await register({ redirect_uris: ['com.example.app:/oauth/cb'], token_endpoint_auth_method: 'none', application_type: 'native' });
      expect(registered.status).toBe(201);
      const user = await buildUser(context().runtime);
      const browser = new Browser(context().app);
      const app = { id: registered.body.client_id, redirectUri: 'com.example.app:/oauth/cb', redirectUris: ['com.example.app:/oauth/cb'], isPublic: true } as TestClient;
      const login = await browser.open(authorizePath(authorizeParams(app)));
      expect(login.status).toBe(200);
      expect(login.headers['content-security-policy']).toMatch(/form-action 'self' com\.example\.app:;/);
      const consent = await browser.signIn(login, user.username, user.password);
      const page = await browser.open(pathOf(consent.headers.location!));
      expect(page.text).toContain('decision');
      expect(page.headers['content-security-policy']).toMatch(/form-action 'self' com\.example\.app:;/);
    });

    // OIDC Registration §2: the OP SHOULD show policy_uri and tos_uri to the user; a PUT without them removes them.
    it('links the registered policy_uri and tos_uri from the consent page, until a PUT leaves them out', async () => {
      const body = { redirect_uris: ['https://links.example/cb'], token_endpoint_auth_method: 'none', client_name: 'Linked' };
      const registered = await register({ ...body, policy_uri: 'https://links.example/privacy', tos_uri: 'https://links.example/terms' });
      expect(registered.status).toBe(201);
      const user = await buildUser(context().runtime);
      const app = { id: registered.body.client_id, redirectUri: body.redirect_uris[0], redirectUris: body.redirect_uris, isPublic: true } as TestClient;
      const consentPage = async () => {
        const browser = new Browser(context().app);
        const login = await browser.open(authorizePath(authorizeParams(app)));
        return browser.open(pathOf((await browser.signIn(login, user.username, user.password)).headers.location!));
      };
      const page = await consentPage();
      expect(page.text).toContain('href="https://links.example/privacy"');
      expect(page.text).toContain('href="https://links.example/terms"');
      expect((await reregister(registered, body)).status).toBe(200);
      expect((await consentPage()).text).not.toContain('links.example/privacy');
    });
  },
  // The back-channel receiver of the logout tests listens on 127.0.0.1.
  { REGISTRATION: 'open', REGISTRATION_RATE_LIMIT: '10000', BACKCHANNEL_LOGOUT_ALLOW_PRIVATE: 'true' },
);

describe('REGISTRATION modes and the per-IP limit', () => {
  for (const kind of DATABASE_KINDS) {
    it(`token mode asks for a live initial access token (RFC 7591 §3) [${kind}]`, async () => {
      const context = await createTestRuntime(kind, { REGISTRATION: 'token' });
      try {
        const post = (auth?: string) => {
          const req = request(context.app).post('/register').set('Content-Type', 'application/json');
          return (auth ? req.set('Authorization', auth) : req).send(JSON.stringify(NATIVE));
        };
        expect((await post()).status).toBe(401);
        expect((await post('Bearer wrong')).body.error).toBe('invalid_token');
        const store = new RegistrationTokenStore(context.runtime.db);
        const { token } = await store.create({ label: 'ci' });
        expect((await post(`Bearer ${token}`)).status).toBe(201);
        const { token: expired } = await store.create({ ttlSeconds: 0 });
        expect((await post(`Bearer ${expired}`)).status).toBe(401);
        const [listed] = await store.list();
        expect(await store.delete(listed!.id)).toBe(true);
        expect((await post(`Bearer ${token}`)).status).toBe(401);
      } finally {
        await context.close();
      }
    }, OWN_DATABASE_TIMEOUT_MS);

    it(`off mode serves no endpoint and advertises none [${kind}]`, async () => {
      const context = await createTestRuntime(kind, { REGISTRATION: 'off' });
      try {
        const res = await request(context.app).post('/register').set('Content-Type', 'application/json').send(JSON.stringify(NATIVE));
        expect(res.status).toBe(404);
        const metadata = await request(context.app).get('/.well-known/oauth-authorization-server');
        expect(metadata.body.registration_endpoint).toBeUndefined();
      } finally {
        await context.close();
      }
    }, OWN_DATABASE_TIMEOUT_MS);

    it(`limits registrations per IP across concurrent requests, with 429 and Retry-After [${kind}]`, async () => {
      const context = await createTestRuntime(kind, { REGISTRATION: 'open', REGISTRATION_RATE_LIMIT: '5' });
      try {
        const results = await Promise.all(
          Array.from({ length: 12 }, () => request(context.app).post('/register').set('Content-Type', 'application/json').send(JSON.stringify(NATIVE))),
        );
        const statuses = results.map((r) => r.status).sort();
        expect(statuses.filter((s) => s === 201)).toHaveLength(5);
        expect(statuses.filter((s) => s === 429)).toHaveLength(7);
        const refused = results.find((r) => r.status === 429)!;
        expect(refused.body.error).toBe('temporarily_unavailable');
        expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      } finally {
        await context.close();
      }
    }, OWN_DATABASE_TIMEOUT_MS);
  }
});
