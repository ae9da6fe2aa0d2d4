/**
 * Client registration rules: redirect URIs are https, or http on a
 * loopback host, without fragments; secrets are high-entropy and stored as an HMAC.
 */
import { describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { clients } from '../../../src/db/schema.js';
import { ClientRegistrationError, redirectUriMatches, validateRedirectUri } from '../../../src/oauth/stores/clients.js';
import { describeEachDatabase } from '../../support/runtime.js';

describe('redirect URI registration', () => {
  it.each([
    'https://app.example/callback',
    'https://app.example:8443/cb?tenant=1',
    'http://localhost:8080/callback',
    'http://127.0.0.1:9/cb',
    'http://127.1.2.3/cb',
    'http://[::1]:3000/cb',
    'http://127.255.255.254/cb',
    'http://[::1]/cb',
    // https on a loopback address is an ordinary https URI: no port relaxed, nothing to spell canonically.
    'https://127.0.0.1:8443/cb',
    'https://[::1]/cb',
  ])('accepts %s', (uri) => {
    expect(validateRedirectUri(uri)).toBe(uri);
  });

  it.each([
    ['plain http on a public host', 'http://app.example/callback', /must use https/],
    ['a fragment', 'https://app.example/callback#frag', /fragment/],
    ['a relative URI', '/callback', /absolute/],
    ['a custom scheme', 'javascript:alert(1)', /https/],
    ['credentials', 'https://user:pw@app.example/cb', /credentials/],
    ['a localhost look-alike', 'http://localhost.attacker.example/cb', /must use https/],
    ['a name starting with 127.', 'http://127.evil.example/cb', /must use https/],
    ['a name ending in a loopback address', 'http://127.0.0.1.nip.io/cb', /must use https/],
    ['a name starting with 127.0.0.1', 'http://127.0.0.1x/cb', /must use https/],
    ['an IPv4-mapped IPv6 loopback', 'http://[::ffff:127.0.0.1]/cb', /must use https/],
    ['another private address', 'http://10.0.0.1/cb', /must use https/],
    // The rule /register applies: what reaches the Location header is exactly the registered string, in ASCII.
    ['an internationalized host not in its xn-- form', 'https://пример.example/cb', /must be ASCII/],
    ['a space', 'https://app.example/c b', /spaces or control characters/],
    ['a newline the URL parser would drop', 'https://app.example/c\nb', /spaces or control characters/],
    // As /register refuses them (client-metadata.ts): an empty userinfo is userinfo all the same.
    ['an empty userinfo', 'https://@app.example/cb', /credentials/],
    ['an empty userinfo with a colon', 'https://:@app.example/cb', /credentials/],
    // These name a loopback address, but only the literal RFC 8252 writes gets any port at /authorize.
    ['a shortened loopback address', 'http://127.1/cb', /RFC 8252/],
    ['a hexadecimal loopback address', 'http://0x7f.1/cb', /RFC 8252/],
    ['a long IPv6 loopback address', 'http://[0:0:0:0:0:0:0:1]/cb', /RFC 8252/],
    ['an upper-case scheme', 'HTTP://127.0.0.1/cb', /RFC 8252/],
  ])('refuses %s with a clear message', (_name, uri, message) => {
    expect(() => validateRedirectUri(uri)).toThrow(ClientRegistrationError);
    expect(() => validateRedirectUri(uri)).toThrow(message);
  });
});

describe('redirect URI matching', () => {
  it.each([
    ['the registered URI itself', 'http://127.0.0.1/cb', 'http://127.0.0.1/cb'],
    ['a loopback IP literal on another port', 'http://127.0.0.1/cb', 'http://127.0.0.1:49152/cb'],
    ['a port written with leading zeros', 'http://127.0.0.1/cb', 'http://127.0.0.1:05555/cb'],
    ['IPv6 loopback on another port', 'http://[::1]/cb', 'http://[::1]:8080/cb'],
  ])('matches %s', (_name, registered, presented) => {
    expect(redirectUriMatches(registered, presented)).toBe(true);
  });

  it.each([
    ['port 0, where no app listens', 'http://127.0.0.1/cb', 'http://127.0.0.1:0/cb'],
    ['port 0 written :00', 'http://127.0.0.1:8080/cb', 'http://127.0.0.1:00/cb'],
    ['IPv6 port 0', 'http://[::1]/cb', 'http://[::1]:0/cb'],
    ['localhost on another port', 'http://localhost/cb', 'http://localhost:8080/cb'],
    ['another path', 'http://127.0.0.1/cb', 'http://127.0.0.1:8080/other'],
  ])('does not match %s', (_name, registered, presented) => {
    expect(redirectUriMatches(registered, presented)).toBe(false);
  });
});

describe('redirect URI registration: port 0', () => {
  it.each(['http://127.0.0.1:0/cb', 'http://[::1]:00/cb', 'https://app.example:0/cb'])('refuses %s, where nothing listens', (uri) => {
    expect(() => validateRedirectUri(uri)).toThrow(/port 0/);
  });
});

describeEachDatabase('client registration', (context) => {
  it('refuses a name with control or bidirectional formatting characters from the command line too', async () => {
    const { runtime } = context();
    for (const name of ['Pay\u202egnp.exe', 'Two\nlines', 'Null\u0000', 'Zero\u200Bwidth']) {
      await expect(runtime.clients.create({ name, redirectUris: ['https://good.example/cb'] })).rejects.toThrow(/bidirectional formatting/);
    }
    const created = await runtime.clients.create({ name: 'Café \u{1F469}\u200D\u{1F4BB} مرحبا', redirectUris: ['https://good.example/cb'] });
    const updated = runtime.clients.update(created.client_id, { name: 'Evil\u2066' });
    await expect(updated).rejects.toThrow(ClientRegistrationError);
  });

  it('refuses a client with a bad redirect URI and stores nothing', async () => {
    const { runtime } = context();
    await expect(runtime.clients.create({ id: 'bad-client', name: 'Bad', redirectUris: ['http://evil.example/cb'] })).rejects.toThrow(
      ClientRegistrationError,
    );
    expect(await runtime.clients.find('bad-client')).toBeUndefined();
  });

  it('generates a 256-bit secret and stores only its HMAC', async () => {
    const { runtime } = context();
    const registered = await runtime.clients.create({ name: 'Good', redirectUris: ['https://good.example/cb'] });
    expect(registered.client_secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const [row] = await runtime.db.select().from(clients).where(eq(clients.id, registered.client_id));
    expect(row!.secretHash).not.toContain(registered.client_secret);
    expect(row!.secretHash).toBe(runtime.clients.hashSecret(registered.client_secret!));
    expect(row!.secretHash).not.toMatch(/^scrypt\$/);
  });
});
