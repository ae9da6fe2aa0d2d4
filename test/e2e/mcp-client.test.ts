/**
 * What an MCP client does with nothing but an API URL, using the official SDK's client-side
 * auth: 401 → RFC 9728 resource metadata → RFC 8414 server metadata → registration (RFC 7591,
 * or a client ID metadata document served over https by a local server) → /authorize through
 * the login and consent pages → a token bound to the resource (RFC 8707) → the API. Plus
 * oauth4webapi's dynamic registration and the resource-indicator rules at /authorize and /token.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { decodeJwt } from 'jose';
import * as oauth from 'oauth4webapi';
import { auth, extractWWWAuthenticateParams, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { describeEachDatabase, TEST_ISSUER } from '../support/runtime.js';
import { Browser, buildUser, pathOf, pkcePair, type TestUser } from '../support/oauth.js';
import { createApp } from '../../src/app.js';

const REDIRECT = 'http://127.0.0.1:43117/callback';

class TestProvider implements OAuthClientProvider {
  information: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  authorizationUrl: URL | undefined;
  constructor(readonly clientMetadataUrl?: string) {}
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata(): OAuthClientMetadata {
    return { redirect_uris: [REDIRECT], client_name: 'SDK agent', token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] };
  }
  clientInformation() {
    return this.information;
  }
  saveClientInformation(information: OAuthClientInformationMixed) {
    this.information = information;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

let tlsDir: string;
let cert: string;
let documentServer: https.Server;
let documentBase: string;

beforeAll(async () => {
  // A self-signed certificate for localhost, trusted by the app through AppOptions.clientMetadataCa.
  tlsDir = mkdtempSync(path.join(tmpdir(), 'fieldgate-cimd-'));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=localhost',
    '-addext', 'subjectAltName=DNS:localhost', '-keyout', path.join(tlsDir, 'key.pem'), '-out', path.join(tlsDir, 'cert.pem')], { stdio: 'ignore' });
  cert = readFileSync(path.join(tlsDir, 'cert.pem'), 'utf8');
  documentServer = https.createServer({ cert, key: readFileSync(path.join(tlsDir, 'key.pem')) }, (req, res) => {
    const url = `${documentBase}${req.url}`;
    if (req.url !== '/agent/client.json') return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=600' });
    res.end(JSON.stringify({ client_id: url, client_name: 'Document agent', redirect_uris: [REDIRECT], grant_types: ['authorization_code', 'refresh_token'], token_endpoint_auth_method: 'none', client_uri: 'https://agent.example' }));
  });
  await new Promise<void>((resolve) => documentServer.listen(0, '127.0.0.1', resolve));
  documentBase = `https://localhost:${(documentServer.address() as AddressInfo).port}`;
});

afterAll(async () => {
  documentServer.closeAllConnections();
  await new Promise((resolve) => documentServer.close(resolve));
  rmSync(tlsDir, { recursive: true, force: true });
});

describeEachDatabase(
  'an MCP client discovers, registers, authorizes and calls the API',
  (context) => {
    let server: http.Server;
    let base: string;
    let user: TestUser;
    /** The SDK speaks to the issuer URL; the running server listens on an ephemeral port. */
    const fetchFn = (input: string | URL, init?: RequestInit) => fetch(String(input).replace(TEST_ISSUER, base), init);

    beforeAll(async () => {
      const app = createApp(context().runtime, { clientMetadataCa: cert });
      server = http.createServer(app);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      user = await buildUser(context().runtime);
    });

    afterAll(async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    });

    /** Signs in and allows on the pages, as a person would; returns the code from the redirect. */
    async function approve(authorizationUrl: URL, expectUnverified: string): Promise<string> {
      const browser = new Browser(base);
      let res = await browser.open(pathOf(authorizationUrl.href));
      let sawConsent = false;
      for (let step = 0; step < 6 && !(res.status === 303 && res.headers.location?.startsWith(REDIRECT)); step++) {
        if (res.status === 303) res = await browser.open(pathOf(res.headers.location!));
        else if (res.text.includes('name="password"')) res = await browser.signIn(res, user.username, user.password);
        else if (res.text.includes('name="decision"')) {
          expect(res.text).toContain('Unverified application');
          expect(res.text).toContain(expectUnverified);
          sawConsent = true;
          res = await browser.decide(res, 'allow');
        } else throw new Error(`unexpected ${res.status}: ${res.text.slice(0, 200)}`);
      }
      expect(sawConsent).toBe(true);
      const location = new URL(res.headers.location!);
      expect(location.searchParams.get('iss')).toBe(TEST_ISSUER);
      return location.searchParams.get('code')!;
    }

    async function discover(resourcePath: string) {
      const challenge =
        resourcePath === '/graphql'
          ? await fetch(`${base}${resourcePath}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query":"{ __typename }"}' })
          : await fetch(`${base}${resourcePath}`);
      expect(challenge.status).toBe(401);
      const { resourceMetadataUrl } = extractWWWAuthenticateParams(challenge);
      expect(resourceMetadataUrl?.href).toBe(`${TEST_ISSUER}/.well-known/oauth-protected-resource${resourcePath === '/graphql' ? '/graphql' : ''}`);
      return resourceMetadataUrl!;
    }

    it('with dynamic registration (RFC 7591): a GraphQL-only token', async () => {
      const serverUrl = `${TEST_ISSUER}/graphql`;
      const resourceMetadataUrl = await discover('/graphql');
      const provider = new TestProvider();
      expect(await auth(provider, { serverUrl, resourceMetadataUrl, fetchFn })).toBe('REDIRECT');
      expect(provider.information?.client_id).toMatch(/^[A-Za-z0-9_-]{20,}$/);
      expect(provider.authorizationUrl!.searchParams.get('resource')).toBe(serverUrl);
      const code = await approve(provider.authorizationUrl!, '127.0.0.1');
      expect(await auth(provider, { serverUrl, resourceMetadataUrl, authorizationCode: code, fetchFn })).toBe('AUTHORIZED');
      const token = provider.saved!.access_token;
      expect(decodeJwt(token).aud).toBe(serverUrl);
      const graphql = await fetch(`${base}/graphql`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: '{"query":"{ products(limit: 1) { id } }"}' });
      expect(graphql.status).toBe(200);
      // RFC 8707: a token for the GraphQL resource is not one for the REST resource.
      const rest = await fetch(`${base}/products`, { headers: { authorization: `Bearer ${token}` } });
      expect(rest.status).toBe(401);
      expect(rest.headers.get('www-authenticate')).toContain('error="invalid_token"');
      // A refresh through the SDK keeps the resource.
      expect(await auth(provider, { serverUrl, resourceMetadataUrl, fetchFn })).toBe('AUTHORIZED');
      expect(decodeJwt(provider.saved!.access_token).aud).toBe(serverUrl);
    });

    it('with a client ID metadata document served over https: a REST token', async () => {
      const serverUrl = `${TEST_ISSUER}/products`;
      const resourceMetadataUrl = await discover('/products');
      const documentUrl = `${documentBase}/agent/client.json`;
      const provider = new TestProvider(documentUrl);
      expect(await auth(provider, { serverUrl, resourceMetadataUrl, fetchFn })).toBe('REDIRECT');
      expect(provider.information?.client_id).toBe(documentUrl);
      const code = await approve(provider.authorizationUrl!, 'localhost:');
      expect(await auth(provider, { serverUrl, resourceMetadataUrl, authorizationCode: code, fetchFn })).toBe('AUTHORIZED');
      const token = provider.saved!.access_token;
      expect(decodeJwt(token).aud).toBe(TEST_ISSUER);
      const rest = await fetch(`${base}/products?fields=id&limit=1`, { headers: { authorization: `Bearer ${token}` } });
      expect(rest.status).toBe(200);
      const graphql = await fetch(`${base}/graphql`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: '{"query":"{ __typename }"}' });
      expect(graphql.status).toBe(401);
      expect(await context().runtime.clients.find(documentUrl)).toMatchObject({ registrationType: 'metadata_document', name: 'Document agent' });
    });

    it('asks consent again on every authorization of a self-registered client', async () => {
      const provider = new TestProvider();
      const serverUrl = `${TEST_ISSUER}/graphql`;
      await auth(provider, { serverUrl, fetchFn });
      await approve(provider.authorizationUrl!, '127.0.0.1');
      provider.saved = undefined;
      await auth(provider, { serverUrl, fetchFn });
      // approve() fails unless the consent page is shown again.
      await approve(provider.authorizationUrl!, '127.0.0.1');
    });

    it('registers with oauth4webapi (dynamicClientRegistrationRequest)', async () => {
      const as = await oauth.processDiscoveryResponse(new URL(TEST_ISSUER), await fetchFn(`${TEST_ISSUER}/.well-known/oauth-authorization-server`));
      const response = await oauth.dynamicClientRegistrationRequest(
        as,
        { redirect_uris: ['https://rp.example/cb'], token_endpoint_auth_method: 'client_secret_basic', client_name: 'oauth4webapi RP' },
        { [oauth.customFetch]: fetchFn as typeof fetch, [oauth.allowInsecureRequests]: true },
      );
      const client = await oauth.processDynamicClientRegistrationResponse(response);
      expect(client.client_id).toBeTruthy();
      expect(client.client_secret).toBeTruthy();
      expect(client.token_endpoint_auth_method).toBe('client_secret_basic');
    });

    it('RFC 8707: unknown resources are invalid_target at /authorize and /token; a refresh narrows, never widens', async () => {
      const { app } = context();
      const registered = await request(app).post('/register').set('Content-Type', 'application/json')
        .send(JSON.stringify({ redirect_uris: ['https://rp.example/cb'], token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'] }));
      const clientId = registered.body.client_id as string;
      const browser = new Browser(app);
      const { verifier, challenge } = pkcePair();
      const unknown = await browser.open(`/authorize?${new URLSearchParams({ response_type: 'code', client_id: clientId, code_challenge: challenge, code_challenge_method: 'S256', resource: 'https://elsewhere.example/api' })}`);
      // A self-registered client's error is shown on the server's page, with a link back (RFC 9700 §4.11.2).
      expect(unknown.status).toBe(400);
      expect(unknown.text).toContain('error=invalid_target');
      const query = new URLSearchParams({ response_type: 'code', client_id: clientId, code_challenge: challenge, code_challenge_method: 'S256' });
      query.append('resource', `${TEST_ISSUER}/graphql`);
      query.append('resource', `${TEST_ISSUER}/`); // the REST resource, with a trailing slash
      // Driven by hand: Browser.authorize's params object cannot repeat `resource`.
      let res = await browser.open(`/authorize?${query}`);
      for (let i = 0; i < 6 && !(res.status === 303 && res.headers.location!.startsWith('https://rp.example')); i++) {
        if (res.status === 303) res = await browser.open(pathOf(res.headers.location!));
        else if (res.text.includes('name="password"')) res = await browser.signIn(res, user.username, user.password);
        else res = await browser.decide(res, 'allow');
      }
      const code = new URL(res.headers.location!).searchParams.get('code')!;
      const token = (fields: Record<string, string>, resources: string[] = []) => {
        const body = new URLSearchParams({ client_id: clientId, ...fields });
        for (const resource of resources) body.append('resource', resource);
        return request(app).post('/token').type('form').send(body.toString());
      };
      const widened = await token({ grant_type: 'authorization_code', code, code_verifier: verifier }, ['https://elsewhere.example/api']);
      expect(widened.status).toBe(400);
      expect(widened.body.error).toBe('invalid_target');
      // The failed attempt used the code up (like a wrong redirect_uri); get a fresh grant.
      const { verifier: v2, challenge: c2 } = pkcePair();
      query.set('code_challenge', c2);
      res = await browser.open(`/authorize?${query}`);
      for (let i = 0; i < 6 && !(res.status === 303 && res.headers.location!.startsWith('https://rp.example')); i++) {
        if (res.status === 303) res = await browser.open(pathOf(res.headers.location!));
        else res = await browser.decide(res, 'allow');
      }
      const issued = await token({ grant_type: 'authorization_code', code: new URL(res.headers.location!).searchParams.get('code')!, code_verifier: v2 });
      expect(issued.status).toBe(200);
      expect(decodeJwt(issued.body.access_token).aud).toEqual([`${TEST_ISSUER}/graphql`, TEST_ISSUER]);
      const narrowed = await token({ grant_type: 'refresh_token', refresh_token: issued.body.refresh_token }, [`${TEST_ISSUER}/graphql`]);
      expect(narrowed.status).toBe(200);
      expect(decodeJwt(narrowed.body.access_token).aud).toBe(`${TEST_ISSUER}/graphql`);
      const external = await token({ grant_type: 'refresh_token', refresh_token: narrowed.body.refresh_token }, ['https://rs.example']);
      expect(external.body.error).toBe('invalid_target');
      // Refused before rotation: the refresh token still works, and gets the whole grant back without `resource`.
      const again = await token({ grant_type: 'refresh_token', refresh_token: narrowed.body.refresh_token });
      expect(again.status).toBe(200);
      expect(decodeJwt(again.body.access_token).aud).toEqual([`${TEST_ISSUER}/graphql`, TEST_ISSUER]);
    });

    it('serves RFC 9728 metadata for both resources', async () => {
      for (const [suffix, resource] of [['', TEST_ISSUER], ['/graphql', `${TEST_ISSUER}/graphql`]] as const) {
        const res = await request(context().app).get(`/.well-known/oauth-protected-resource${suffix}`);
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ resource, authorization_servers: [TEST_ISSUER], bearer_methods_supported: ['header'], scopes_supported: ['products:read', 'orders:read', 'orders:write'] });
        // RFC 9728 §2: a page for people, only where one is served; without the front door the REST API's is its
        // OpenAPI document, and the GraphQL API has none.
        if (suffix) expect(res.body).not.toHaveProperty('resource_documentation');
        else expect(res.body.resource_documentation).toBe(`${TEST_ISSUER}/openapi.json`);
      }
    });
  },
  { REGISTRATION: 'open', REGISTRATION_RATE_LIMIT: '1000', CIMD_ALLOW_PRIVATE: 'true', RESOURCE_INDICATORS: 'https://rs.example' },
);
