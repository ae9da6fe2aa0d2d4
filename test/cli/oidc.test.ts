/** The OpenID Connect options of the CLI: user profile claims and client OIDC settings. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runCli } from '../support/processes.js';

describe('fieldgate user and client OpenID options', () => {
  let dataDir: string;
  let env: Record<string, string>;

  beforeAll(() => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'fieldgate-cli-oidc-'));
    env = { DATA_DIR: dataDir };
  });

  afterAll(() => {
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('user create and update set the display name and email, and refuse a malformed address', async () => {
    const created = await runCli(['user', 'create', '--username', 'ada', '--password-stdin', '--name', 'Ada Lovelace', '--email', 'ada@example.com', '--json'], env, 'correct horse battery\n');
    expect(created.code).toBe(0);
    const updated = await runCli(['user', 'update', 'ada', '--email', 'ada@math.example', '--email-verified', '--json'], env);
    expect(updated.code).toBe(0);
    const bad = await runCli(['user', 'update', 'ada', '--email', 'not an address'], env);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('email address');
    const nobody = await runCli(['user', 'update', 'nobody', '--name', 'X'], env);
    expect(nobody.code).not.toBe(0);
    // The account and consent pages show the name: no right-to-left override or invisible characters.
    for (const name of ['Ada\u202Eecalevol', 'Ada\u200BLovelace']) {
      const disguised = await runCli(['user', 'update', 'ada', '--name', name], env);
      expect(disguised.code, name).not.toBe(0);
      expect(disguised.stderr).toContain('printable characters');
    }
  });

  it('client create takes pairwise subjects, logout URIs and policy links, and refuses pairwise across hosts', async () => {
    const created = await runCli(
      ['client', 'create', '--name', 'RP', '--redirect-uri', 'https://rp.example/cb', '--subject-type', 'pairwise', '--post-logout-redirect-uri', 'https://rp.example/bye', '--policy-uri', 'https://rp.example/privacy', '--json'],
      env,
    );
    expect(created.code).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ subject_type: 'pairwise', post_logout_redirect_uris: ['https://rp.example/bye'], policy_uri: 'https://rp.example/privacy' });
    const spread = await runCli(['client', 'create', '--name', 'RP2', '--redirect-uri', 'https://a.example/cb', '--redirect-uri', 'https://b.example/cb', '--subject-type', 'pairwise'], env);
    expect(spread.code).not.toBe(0);
    expect(spread.stderr).toContain('one host');
    const insecure = await runCli(['client', 'create', '--name', 'RP3', '--redirect-uri', 'https://c.example/cb', '--backchannel-logout-uri', 'http://c.example/bc'], env);
    expect(insecure.code).not.toBe(0);
  });

  it('client create and update set userinfo_signed_response_alg to ES256, RS256 or back to JSON, and refuse other algorithms', async () => {
    const created = await runCli(['client', 'create', '--name', 'Signed', '--redirect-uri', 'https://signed.example/cb', '--userinfo-signed-response-alg', 'ES256', '--json'], env);
    expect(created.code).toBe(0);
    const { client_id: id, userinfo_signed_response_alg: alg } = JSON.parse(created.stdout);
    expect(alg).toBe('ES256');
    const rs256 = await runCli(['client', 'update', id, '--userinfo-signed-response-alg', 'RS256', '--json'], env);
    expect(rs256.code, rs256.stderr).toBe(0);
    expect(JSON.parse(rs256.stdout).userinfo_signed_response_alg).toBe('RS256');
    const refused = await runCli(['client', 'update', id, '--userinfo-signed-response-alg', 'PS256'], env);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('ES256 or RS256');
    const cleared = await runCli(['client', 'update', id, '--userinfo-signed-response-alg', '', '--json'], env);
    expect(cleared.code).toBe(0);
    expect(JSON.parse(cleared.stdout).userinfo_signed_response_alg).toBeUndefined();
  });

  it('client create and update set id_token_signed_response_alg to RS256, ES256 or back to the default, and refuse other algorithms', async () => {
    const created = await runCli(['client', 'create', '--name', 'RS256 RP', '--redirect-uri', 'https://rs256.example/cb', '--id-token-signed-response-alg', 'RS256', '--json'], env);
    expect(created.code, created.stderr).toBe(0);
    const { client_id: id, id_token_signed_response_alg: alg } = JSON.parse(created.stdout);
    expect(alg).toBe('RS256');
    const es256 = await runCli(['client', 'update', id, '--id-token-signed-response-alg', 'ES256', '--json'], env);
    expect(JSON.parse(es256.stdout).id_token_signed_response_alg).toBe('ES256');
    for (const bad of ['none', 'HS256', 'rs256']) {
      const refused = await runCli(['client', 'update', id, '--id-token-signed-response-alg', bad], env);
      expect(refused.code, bad).toBe(1);
      expect(refused.stderr).toContain('ES256 or RS256');
    }
    const cleared = await runCli(['client', 'update', id, '--id-token-signed-response-alg', '', '--json'], env);
    expect(cleared.code).toBe(0);
    expect(JSON.parse(cleared.stdout).id_token_signed_response_alg).toBeUndefined();
  });

  it('client create and update turn backchannel_logout_session_required on and off, not both at once', async () => {
    const created = await runCli(['client', 'create', '--name', 'Sid', '--redirect-uri', 'https://sid.example/cb', '--backchannel-logout-uri', 'https://sid.example/bc', '--backchannel-logout-session-required', '--json'], env);
    expect(created.code).toBe(0);
    const { client_id: id, backchannel_logout_session_required: required } = JSON.parse(created.stdout);
    expect(required).toBe(true);
    const both = await runCli(['client', 'update', id, '--backchannel-logout-session-required', '--no-backchannel-logout-session-required'], env);
    expect(both.code).not.toBe(0);
    const off = await runCli(['client', 'update', id, '--no-backchannel-logout-session-required', '--json'], env);
    expect(off.code).toBe(0);
    expect(JSON.parse(off.stdout).backchannel_logout_session_required).toBeUndefined();
  });

  it('client create and update set a front-channel logout URI with or without iss and sid, and refuse plain http', async () => {
    const created = await runCli(['client', 'create', '--name', 'Front', '--redirect-uri', 'https://front.example/cb', '--frontchannel-logout-uri', 'https://front.example/fc', '--frontchannel-logout-session-required', '--json'], env);
    expect(created.code).toBe(0);
    const registered = JSON.parse(created.stdout);
    expect(registered).toMatchObject({ frontchannel_logout_uri: 'https://front.example/fc', frontchannel_logout_session_required: true });
    const insecure = await runCli(['client', 'update', registered.client_id, '--frontchannel-logout-uri', 'http://front.example/fc'], env);
    expect(insecure.code).not.toBe(0);
    const cleared = await runCli(['client', 'update', registered.client_id, '--frontchannel-logout-uri', '', '--no-frontchannel-logout-session-required', '--json'], env);
    expect(cleared.code).toBe(0);
    expect(JSON.parse(cleared.stdout).frontchannel_logout_uri).toBeUndefined();
    expect(JSON.parse(cleared.stdout).frontchannel_logout_session_required).toBeUndefined();
  });
});
