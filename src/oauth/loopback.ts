/**
 * Loopback hosts as a parsed URL names them: where http is allowed for a redirect URI, a logout URI or the demo issuer
 * (RFC 8252 §7.3, RFC 9700 §4.1.3). One rule for the CLI, /register and the configuration.
 */

/** `127.evil.example` is not a loopback IP literal; the URL parser already turned `127.1`, `0x7f.1` into dotted quads. */
export function isLoopbackIp(hostname: string): boolean {
  return hostname === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

export function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || isLoopbackIp(hostname);
}
