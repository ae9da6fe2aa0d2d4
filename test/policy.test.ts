import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { GRANT_TYPES_SUPPORTED, POLICY, settings } from '../src/policy.js';
import { authorizationServerMetadata } from '../src/oauth/endpoints/metadata.js';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

describe('the policy table', () => {
  it('describes every entry', () => {
    for (const [name, entry] of Object.entries(POLICY)) expect(entry.description.length, name).toBeGreaterThan(10);
  });

  it.each(settings().map((setting) => [setting.env, setting] as const))('%s: default within its bounds, in README, read by loadConfig', (env, setting) => {
    expect(setting.default).toBeGreaterThanOrEqual(setting.min);
    expect(setting.default).toBeLessThanOrEqual(setting.max);
    // A default the host decides (DATABASE_POOL_SIZE) is the policy's bound, then how the host lowers it.
    expect(readme).toMatch(new RegExp(`\\| \`${env}\` \\| \`${setting.default}\`(, [^|]+)? \\|`));
    expect(() => loadConfig({ [env]: String(setting.min - 1) })).toThrow(ConfigError);
    if (setting.max < Number.MAX_SAFE_INTEGER) expect(() => loadConfig({ [env]: String(setting.max + 1) })).toThrow(ConfigError);
    const other = setting.default === setting.min ? setting.min + 1 : setting.min;
    expect(loadConfig({ [env]: String(other) })).not.toEqual(loadConfig({}));
  });

  it('gives each environment variable to one entry', () => {
    const names = settings().map((setting) => setting.env);
    expect(new Set(names).size).toBe(names.length);
  });

  it('is what the metadata document advertises as grant_types_supported (RFC 8414 §2)', () => {
    expect(authorizationServerMetadata('https://as.example').grant_types_supported).toEqual(GRANT_TYPES_SUPPORTED);
  });
});
