/** The OpenID `sid`: one per browser session and client, stable, unlinkable across clients, unguessable without the key. */
import { describe, expect, it } from 'vitest';
import { SessionIds } from '../../../src/oauth/oidc/session-id.js';
import { POLICY } from '../../../src/policy.js';

describe('OpenID sid of a browser session', () => {
  const ids = new SessionIds('session secret');

  it('is the same for every authorization of one client in one browser session', () => {
    expect(ids.forClient('client-a', 'browser-1')).toBe(ids.forClient('client-a', 'browser-1'));
  });

  it('differs per client and per browser session, and reveals neither id', () => {
    const sid = ids.forClient('client-a', 'browser-1');
    expect(ids.forClient('client-b', 'browser-1')).not.toBe(sid);
    expect(ids.forClient('client-a', 'browser-2')).not.toBe(sid);
    expect(sid).not.toContain('browser-1');
    expect(sid).not.toContain('client-a');
  });

  it('depends on the session secret', () => {
    expect(new SessionIds('another secret').forClient('client-a', 'browser-1')).not.toBe(ids.forClient('client-a', 'browser-1'));
  });

  it('is what a fresh instance computes, before and after the remembered values are pushed out', () => {
    const first = ids.forClient('client-a', 'browser-1');
    for (let i = 0; i <= POLICY.sessionIdEntries.value; i++) ids.forClient('client-a', `other-${i}`);
    expect(ids.forClient('client-a', 'browser-1')).toBe(first);
    expect(new SessionIds('session secret').forClient('client-a', 'browser-1')).toBe(first);
  });
});
