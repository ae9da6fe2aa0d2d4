/** The one list of addresses no client-registered URL may make the server reach (back-channel logout, jwks_uri, metadata documents). */
import { describe, expect, it } from 'vitest';
import { isSpecialPurposeAddress } from '../../src/http/special-purpose-addresses.js';

describe('isSpecialPurposeAddress (RFC 6890)', () => {
  it('refuses loopback, private, shared, link-local, unique-local, multicast, unspecified and mapped addresses', () => {
    for (const address of [
      '127.0.0.1', '10.1.2.3', '172.16.0.1', '172.20.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '224.0.0.1',
      '::1', '::', '[::1]', 'fe80::1', 'fd00::1', 'ff02::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1', '::ffff:7f00:1',
    ]) {
      expect(isSpecialPurposeAddress(address), address).toBe(true);
    }
  });

  it('refuses the IPv6 forms a gateway turns into an IPv4 address: NAT64 (RFC 6052, RFC 8215), 6to4 and Teredo', () => {
    // Each of these embeds 169.254.169.254 or 10.0.0.1.
    for (const address of ['64:ff9b::a9fe:a9fe', '64:ff9b:1::a9fe:a9fe', '64:ff9b:1::a00:1', '2002:a9fe:a9fe::1', '2001:0:4136:e378:8000:63bf:f5ff:fffe', '100::1']) {
      expect(isSpecialPurposeAddress(address), address).toBe(true);
    }
  });

  it('refuses the documentation and 6to4 relay networks, and what is no IP address at all', () => {
    for (const address of ['192.0.2.1', '198.51.100.7', '203.0.113.9', '192.88.99.1', '2001:db8::1', 'example.com', '']) {
      expect(isSpecialPurposeAddress(address), address).toBe(true);
    }
  });

  it('keeps public addresses, IPv4-mapped ones included', () => {
    for (const address of ['93.184.216.34', '2606:2800:220:1::1', '2606:2800:220:1:248:1893:25c8:1946', '2001:4860:4860::8888', '::ffff:93.184.216.34']) {
      expect(isSpecialPurposeAddress(address), address).toBe(false);
    }
  });
});
