import { describe, expect, it } from 'vitest';
import path from 'node:path';
import { availableParallelism } from 'node:os';
import { ConfigError, defaultPoolSize, loadConfig } from '../src/config.js';

describe('configuration from the environment', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 3000,
      host: '127.0.0.1',
      issuer: 'http://localhost:3000',
      databaseUrl: undefined,
      databasePoolSize: defaultPoolSize(availableParallelism()),
      databasePreparedStatements: 256,
      dataDir: path.resolve('./data'),
      accessTokenTtl: 3600,
      refreshTokenTtl: 2_592_000,
      authCodeTtl: 600,
      deviceCodeTtl: 600,
      refreshTokenReuseGrace: 0,
      logLevel: 'info',
      demo: true,
      dpopProofMaxAge: 60,
      dpopNonce: 'token',
      clientJwksAllowPrivate: false,
    });
  });

  it('sizes the PostgreSQL pool at twice the cores, from 4 to 10, unless DATABASE_POOL_SIZE says otherwise', () => {
    expect([1, 2, 3, 4, 5, 64].map((cores) => defaultPoolSize(cores))).toEqual([4, 4, 6, 8, 10, 10]);
    expect(loadConfig({ DATABASE_POOL_SIZE: '25' }).databasePoolSize).toBe(25);
    expect(loadConfig({ DATABASE_POOL_SIZE: '1' }).databasePoolSize).toBe(1);
  });

  it('derives the default issuer from PORT and strips a trailing slash from ISSUER', () => {
    expect(loadConfig({ PORT: '8080' }).issuer).toBe('http://localhost:8080');
    expect(loadConfig({ ISSUER: 'https://auth.example.com/' }).issuer).toBe('https://auth.example.com');
  });

  it('reads DEVICE_CODE_TTL from 60 to 1800 seconds and refuses anything else', () => {
    expect(loadConfig({ DEVICE_CODE_TTL: '300' }).deviceCodeTtl).toBe(300);
    for (const bad of ['59', '1801', 'ten', '-5']) expect(() => loadConfig({ DEVICE_CODE_TTL: bad })).toThrow(ConfigError);
  });

  it('keeps DATA_DIR=memory:// as the in-memory database', () => {
    expect(loadConfig({ DATA_DIR: 'memory://' }).dataDir).toBe('memory://');
  });

  it('reads TRUST_PROXY as false, true, a hop count or a list of addresses', () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({ TRUST_PROXY: 'loopback, 10.0.0.0/8, ::1' }).trustProxy).toEqual(['loopback', '10.0.0.0/8', '::1']);
  });

  it('turns demo mode off by default on PostgreSQL', () => {
    expect(loadConfig({ DATABASE_URL: 'postgres://db/x' }).demo).toBe(false);
    expect(loadConfig({ DATABASE_URL: 'postgres://db/x', DEMO: 'true' }).demo).toBe(true);
  });

  it('opens dynamic registration in demo mode only, and reads the resource and self-registration settings', () => {
    expect(loadConfig({})).toMatchObject({ registration: 'open', registrationRateLimit: 20, dynamicClientTtl: 86_400, clientIdMetadataDocuments: true, cimdAllowPrivate: false, resourceIndicators: [] });
    expect(loadConfig({ DATABASE_URL: 'postgres://db/x' }).registration).toBe('off');
    expect(loadConfig({ DATABASE_URL: 'postgres://db/x', REGISTRATION: 'token' }).registration).toBe('token');
    expect(loadConfig({ RESOURCE_INDICATORS: 'https://rs.example/api, https://other.example' }).resourceIndicators).toEqual(['https://rs.example/api', 'https://other.example']);
  });

  const badValues: [string, string, RegExp][] = [
    ['REGISTRATION', 'closed', /REGISTRATION: must be one of open, token, off/],
    ['RESOURCE_INDICATORS', 'https://rs.example/#x', /RESOURCE_INDICATORS: .* must not carry a query or fragment/],
    ['RESOURCE_INDICATORS', 'urn:x', /RESOURCE_INDICATORS: must use http: or https:/],
    ['REGISTRATION_RATE_LIMIT', '0', /REGISTRATION_RATE_LIMIT/],
    ['DEVICE_AUTHORIZATION_RATE_LIMIT', '0', /DEVICE_AUTHORIZATION_RATE_LIMIT/],
    ['DEVICE_AUTHORIZATION_RATE_LIMIT', 'many', /DEVICE_AUTHORIZATION_RATE_LIMIT/],
    ['CIMD_ALLOW_PRIVATE', 'maybe', /CIMD_ALLOW_PRIVATE: must be true or false/],
    ['PORT', 'eighty', /PORT: must be a whole number from 0 to 65535/],
    ['PORT', '70000', /PORT: must be a whole number from 0 to 65535/],
    ['PORT', '-1', /PORT/],
    ['ISSUER', 'not a url', /ISSUER: must be a URL/],
    ['ISSUER', 'ftp://example.com', /ISSUER: must use http: or https:/],
    ['ISSUER', 'https://example.com/?x=1', /ISSUER: must not carry a query/],
    ['DATABASE_URL', 'mysql://localhost/db', /DATABASE_URL: must use postgres: or postgresql:/],
    ['DATABASE_URL', '::::', /DATABASE_URL: must be a URL/],
    ['DATABASE_POOL_SIZE', '0', /DATABASE_POOL_SIZE: must be a whole number from 1 to 1000/],
    ['DATABASE_POOL_SIZE', 'ten', /DATABASE_POOL_SIZE/],
    ['DATABASE_PREPARED_STATEMENTS', '-1', /DATABASE_PREPARED_STATEMENTS: must be a whole number from 0 to 10000/],
    ['DATA_DIR', 's3://bucket', /DATA_DIR: must be a directory path or memory:\/\//],
    ['ACCESS_TOKEN_TTL', '0', /ACCESS_TOKEN_TTL: must be a whole number from 1/],
    ['ACCESS_TOKEN_TTL', '1.5', /ACCESS_TOKEN_TTL/],
    ['REFRESH_TOKEN_TTL', 'forever', /REFRESH_TOKEN_TTL/],
    ['AUTH_CODE_TTL', '601', /AUTH_CODE_TTL: must be a whole number from 1 to 600/],
    ['AUTH_CODE_TTL', '0', /AUTH_CODE_TTL/],
    ['REFRESH_TOKEN_REUSE_GRACE', '301', /REFRESH_TOKEN_REUSE_GRACE: must be a whole number from 0 to 300/],
    ['LOG_LEVEL', 'verbose', /LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent/],
    ['CORS_ORIGINS', 'example.com', /CORS_ORIGINS: must be a URL/],
    ['DEMO', 'maybe', /DEMO: must be true or false/],
    ['TRUST_PROXY', 'my-proxy', /TRUST_PROXY: must be true, false, a hop count/],
    ['TRUST_PROXY', '10.0.0.0/99', /TRUST_PROXY/],
    ['GRAPHQL_MAX_COST', '0', /GRAPHQL_MAX_COST: must be a whole number of at least 1/],
    ['DPOP_PROOF_MAX_AGE', '0', /DPOP_PROOF_MAX_AGE: must be a whole number from 1 to 300/],
    ['DPOP_NONCE', 'sometimes', /DPOP_NONCE: must be one of token, all, off/],
    ['CLIENT_JWKS_ALLOW_PRIVATE', 'maybe', /CLIENT_JWKS_ALLOW_PRIVATE: must be true or false/],
    ['ISSUER', 'https://admin:hunter2@auth.example', /ISSUER: must not carry a user name or password/],
    ['ISSUER', 'https://auth.example/?', /ISSUER: must not carry a query/],
    ['CORS_ORIGINS', 'https://app.example/spa', /CORS_ORIGINS: .* must be an origin: scheme, host and port only, such as https:\/\/app.example/],
    ['CORS_ORIGINS', 'https://app.example?x', /CORS_ORIGINS: .* must be an origin/],
    ['METRICS_PORT', '3000', /METRICS_PORT: must differ from PORT \(3000\)/],
    ['ISSUER', 'http://auth.example.com', /ISSUER: must use https, or http on localhost, 127.0.0.0\/8 or \[::1\], in demo mode .*set an https ISSUER or DEMO=false/],
    ['PORT', '99999999999999999999999', /PORT: must be a whole number from 0 to 65535, got 99999999999999999999999$/],
  ];

  it.each(badValues)('refuses %s=%s with a message naming the variable', (name, value, message) => {
    let thrown: unknown;
    try {
      loadConfig({ [name]: value });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    expect((thrown as ConfigError).variable).toBe(name);
    expect((thrown as ConfigError).message).toMatch(message);
  });

  it('accepts an http ISSUER on a loopback host in demo mode, and any http ISSUER without the demo', () => {
    for (const issuer of ['http://localhost:3000', 'http://127.0.0.1:8080', 'http://[::1]:3000']) expect(loadConfig({ ISSUER: issuer, DEMO: 'true' }).issuer).toBe(issuer);
    expect(loadConfig({ ISSUER: 'http://fieldgate.internal', DEMO: 'false' }).issuer).toBe('http://fieldgate.internal');
  });

  it('takes HOST=[::1], written as in a URL, for the IPv6 address inside the brackets', () => {
    expect(loadConfig({ HOST: '[::1]' }).host).toBe('::1');
    expect(loadConfig({ HOST: '::' }).host).toBe('::');
  });

  it('reads LOG_LEVEL in any case, as INFO or Debug', () => {
    expect(loadConfig({ LOG_LEVEL: 'INFO' }).logLevel).toBe('info');
    expect(loadConfig({ LOG_LEVEL: ' Debug ' }).logLevel).toBe('debug');
  });

  it('never repeats a DATABASE_URL that does not parse, as it may hold a password', () => {
    for (const value of ['postgres://fieldgate:hunter2@db internal/fieldgate', 'postgres://fieldgate:hunter2@db.internal:99999/fieldgate']) {
      expect(() => loadConfig({ DATABASE_URL: value })).toThrow(/DATABASE_URL: must be a URL/);
      expect(() => loadConfig({ DATABASE_URL: value })).not.toThrow(/hunter2/);
    }
  });

  it('keeps CORS_ORIGINS as the origins a browser sends, without a trailing slash and with the host in lower case', () => {
    expect(loadConfig({ CORS_ORIGINS: 'https://App.Example/, http://localhost:5173' }).corsOrigins).toEqual(['https://app.example', 'http://localhost:5173']);
  });
});
