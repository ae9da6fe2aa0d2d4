/**
 * An ISSUER with a path (`https://example.com/auth`): every URL Fieldgate hands out starts with it, and a proxy in front
 * may forward those requests with the path or strip it first. Requests that carry it are read as if served at the root,
 * so both kinds of proxy, and no proxy at all, reach the same routes.
 */
import type { RequestHandler } from 'express';

/** The issuer's path without a trailing slash; '' for an issuer at the root of its host. */
export function issuerPath(issuer: string): string {
  return new URL(issuer).pathname.replace(/\/+$/, '');
}

/** The path of a well-known document inserted between host and path (RFC 8414 §3.1, RFC 9728 §3.1): `/.well-known/x/auth`. */
export function pathInsertedWellKnown(identifier: string, wellKnownPath: string): string {
  return `${wellKnownPath}${issuerPath(identifier)}`;
}

export function stripIssuerPath(prefix: string): RequestHandler {
  return function readUnderIssuerPath(req, _res, next) {
    const url = req.url;
    if (url.startsWith(prefix) && (url.length === prefix.length || url[prefix.length] === '/' || url[prefix.length] === '?')) {
      const rest = url.slice(prefix.length);
      // Everything downstream (query parsing, DPoP's htu, the log) reads originalUrl: it must agree with url.
      req.url = req.originalUrl = rest.startsWith('/') ? rest : `/${rest}`;
    }
    next();
  };
}
