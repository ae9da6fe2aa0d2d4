/**
 * The request target and Host (RFC 9112 §3.2). Fieldgate names itself by ISSUER alone, never by either, but graphql-yoga's
 * adapter rebuilds the request URL as `http://${Host}${target}`: an absolute-form target or a Host such as `a b` made
 * it throw (a 500 with a stack trace), and a Host such as `a/b` moved the path it routes on.
 */
import net from 'node:net';
import type { RequestHandler } from 'express';
import { RestInvalidArgument } from '../rest/errors.js';

/** `scheme://authority` and the rest of an absolute-form target (RFC 9112 §3.2.2). */
const ABSOLUTE_FORM = /^(https?):\/\/([^/?#]*)(.*)$/is;

/**
 * An absolute-form target is read as its origin form, its authority standing in for Host as §3.2.2 asks: routing,
 * the issuer path, DPoP's htu and GraphQL then see the path and query a proxy would have sent.
 */
export const readAbsoluteForm: RequestHandler = function readAbsoluteForm(req, _res, next) {
  const match = req.url.startsWith('/') ? null : ABSOLUTE_FORM.exec(req.url);
  if (match) {
    const rest = match[3]!;
    req.url = req.originalUrl = rest.startsWith('/') ? rest : `/${rest}`;
    req.headers.host = match[2]!;
  }
  next();
};

/** reg-name or IPv4address (RFC 3986 §3.2.2), then an optional port. */
const REG_NAME_HOST = /^(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})*(?::(\d{0,5}))?$/;
const IP_LITERAL_HOST = /^\[([0-9A-Fa-f:.]+)\](?::(\d{0,5}))?$/;

/** `uri-host [ ":" port ]` that a URL can also be built from (WHATWG refuses some reg-names RFC 3986 allows). */
export function isValidHost(value: string): boolean {
  const literal = IP_LITERAL_HOST.exec(value);
  const match = literal ?? REG_NAME_HOST.exec(value);
  if (!match || (literal && !net.isIPv6(literal[1]!))) return false;
  const port = literal ? literal[2] : match[1];
  if (port && Number(port) > 65535) return false;
  return value === '' || URL.canParse(`http://${value}/`);
}

/** The last Host found valid: nearly every request names the same one, checked once. */
let lastValidHost: string | undefined;

function isKnownValidHost(host: string): boolean {
  if (host === lastValidHost) return true;
  if (!isValidHost(host)) return false;
  lastValidHost = host;
  return true;
}

/** §3.2: what is wrong with the request's Host, if anything. */
function hostProblem(req: Parameters<RequestHandler>[0]): string | undefined {
  let count = 0;
  for (let i = 0; i < req.rawHeaders.length; i += 2) if (req.rawHeaders[i]!.toLowerCase() === 'host') count++;
  if (count > 1) return 'the request has more than one Host header';
  if (count === 0 && req.httpVersion === '1.1') return 'the request has no Host header';
  const host = req.headers.host;
  if (host !== undefined && !isKnownValidHost(host)) return 'the Host header (or the authority of an absolute-form target) is not a valid host';
  return undefined;
}

/** Every method some path of the server serves, for `OPTIONS *`. */
const SERVER_METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS';

/** `OPTIONS *` (RFC 9110 §9.3.7) asks about the server rather than a resource: 204 with the methods it serves. */
export const answerServerWideOptions: RequestHandler = function answerServerWideOptions(req, res, next) {
  if (req.url !== '*' || req.method !== 'OPTIONS') return next();
  res.setHeader('Allow', SERVER_METHODS);
  res.status(204).end();
};

/** An HTTP/1.1 request without Host, with more than one, or with one that is no host gets 400. */
export const refuseInvalidHost: RequestHandler = function refuseInvalidHost(req, _res, next) {
  const problem = hostProblem(req);
  if (problem) return next(new RestInvalidArgument(problem, { reason: 'INVALID_HOST' }));
  // Origin form, or `*` for a server-wide OPTIONS (§3.2.4); absolute form was read as origin form already.
  if (!req.url.startsWith('/') && !(req.url === '*' && req.method === 'OPTIONS')) {
    return next(new RestInvalidArgument('the request target is not valid', { reason: 'INVALID_REQUEST_TARGET' }));
  }
  next();
};
