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

/** The start of a loopback redirect URI as RFC 8252 §7.3 writes it, the only form whose port /authorize relaxes. */
export const LOOPBACK_IP_ORIGIN = /^http:\/\/(\[::1\]|127\.\d{1,3}\.\d{1,3}\.\d{1,3})(?::\d{1,5})?(?=[/?]|$)/;

/**
 * Whether `raw`, an http URI the parser read as host `hostname`, spells that loopback IP literal as the parser writes it
 * (`127.1`, `0x7f.1`, `[0::1]`, `HTTP://`, `http:127.0.0.1` all name a loopback address, but the string compared at
 * /authorize would not be recognized as one, so any port but the registered one would be refused).
 */
export function isCanonicalLoopbackIpUri(raw: string, hostname: string): boolean {
  return LOOPBACK_IP_ORIGIN.exec(raw)?.[1] === hostname;
}
