/**
 * The addresses a URL a client registered (a back-channel logout receiver, a jwks_uri, a client ID metadata document)
 * must never make the server reach: RFC 6890's special-purpose ranges, and the IPv6 forms a gateway turns into an IPv4
 * address. One list for every outgoing fetch, so the guards cannot drift apart.
 */
import { BlockList, isIP } from 'node:net';

// Separate lists: a BlockList matches IPv4 addresses against IPv4-mapped IPv6 ranges too.
const SPECIAL_IPV4 = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24],
  ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) SPECIAL_IPV4.addSubnet(net, prefix, 'ipv4');
// NAT64 (both prefixes), 6to4 and Teredo carry an IPv4 address a gateway may turn into a private one.
const SPECIAL_IPV6 = new BlockList();
for (const [net, prefix] of [
  ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['64:ff9b::', 96], ['64:ff9b:1::', 48], ['100::', 64], ['2001::', 32], ['2001:db8::', 32],
  ['2002::', 16],
] as const) SPECIAL_IPV6.addSubnet(net, prefix, 'ipv6');

/** Whether `address` (an IP literal, bracketed or not) is special-purpose; anything that is no IP address counts as one. */
export function isSpecialPurposeAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '');
  const family = isIP(bare);
  if (family === 4) return SPECIAL_IPV4.check(bare, 'ipv4');
  if (family !== 6) return true;
  const lower = bare.toLowerCase();
  if (lower === '::' || lower === '::1') return true;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower)?.[1];
  if (mapped) return SPECIAL_IPV4.check(mapped, 'ipv4');
  // Any other IPv4-mapped/compatible form (::ffff:7f00:1) is refused outright.
  if (lower.startsWith('::ffff:') || /^::[0-9a-f]/.test(lower)) return true;
  return SPECIAL_IPV6.check(bare, 'ipv6');
}
