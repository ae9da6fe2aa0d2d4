/**
 * The peer: panva's oidc-provider 9, configured for the same job Fieldgate does in the flow
 * benchmark — authorization code with PKCE (S256, required), client_secret_basic, refresh
 * tokens rotated on every use, JWT access tokens signed ES256 for one resource server (RFC 8707
 * resource indicators), introspection and revocation, its default in-memory adapter, and
 * sign-in through its development interactions (any login; the benchmark signs in once).
 *
 * Endpoints are mounted at Fieldgate's paths (/authorize, /token, /introspect, /revoke) so one
 * driver serves both servers unchanged.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { exportJWK, generateKeyPair } from 'jose';
import Provider, { errors } from 'oidc-provider';
import { announceFailure, announceReady, serveCalls } from '../lib/child.js';
import { profilerCalls } from '../lib/profiler.js';

const SCOPE = 'products:read orders:read orders:write';
const ACCESS_TOKEN_TTL = 3600;

async function main(): Promise<void> {
  const port = Number(process.env.PORT ?? 0);
  const host = process.env.HOST ?? '127.0.0.1';
  const issuer = process.env.ISSUER ?? `http://${host}:${port}`;
  const resource = `${issuer}/api`;
  const redirectUri = `${issuer}/bench/callback`;
  const clientId = 'bench-client';
  const clientSecret = randomBytes(32).toString('base64url');

  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  const signingKey = { ...(await exportJWK(privateKey)), kid: 'bench-es256', alg: 'ES256', use: 'sig' };

  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    clientDefaults: { id_token_signed_response_alg: 'ES256', grant_types: ['authorization_code'], response_types: ['code'] },
    jwks: { keys: [signingKey] },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    pkce: { required: () => true },
    routes: {
      authorization: '/authorize',
      token: '/token',
      introspection: '/introspect',
      revocation: '/revoke',
      jwks: '/.well-known/jwks.json',
    },
    features: {
      devInteractions: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resource,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: unknown, indicator: string) => {
          if (indicator !== resource) throw new errors.InvalidTarget();
          return { scope: SCOPE, audience: resource, accessTokenTTL: ACCESS_TOKEN_TTL, accessTokenFormat: 'jwt', jwt: { sign: { alg: 'ES256' } } };
        },
      },
    },
    // Like Fieldgate: every code exchange returns a refresh token, and each refresh rotates it.
    issueRefreshToken: async (_ctx: unknown, client: { grantTypeAllowed(type: string): boolean }) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: true,
    findAccount: async (_ctx: unknown, sub: string) => ({ accountId: sub, claims: async () => ({ sub }) }),
    ttl: {
      AccessToken: ACCESS_TOKEN_TTL,
      AuthorizationCode: 600,
      RefreshToken: 30 * 24 * 3600,
      Grant: 30 * 24 * 3600,
      Session: 24 * 3600,
      Interaction: 3600,
      IdToken: 3600,
    },
  });

  provider.on('server_error', (_ctx, error) => console.error('oidc-provider server_error', error));

  // The same bounds as Fieldgate's src/server.ts.
  const server = http.createServer(provider.callback());
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const { port: actualPort } = server.address() as AddressInfo;

  serveCalls(
    {
      memory: () => process.memoryUsage(),
      cpu: () => process.cpuUsage(),
      ...profilerCalls(process.env.BENCH_PROFILE_DIR || undefined),
    },
    async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  );
  announceReady({
    url: `http://${host}:${actualPort}`,
    username: 'bench',
    password: 'any-password',
    clientId,
    clientSecret,
    redirectUri,
    scope: SCOPE,
    resource,
  });
}

main().catch(announceFailure);
