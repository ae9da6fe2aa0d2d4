/**
 * `iss` goes with every redirect (RFC 9207, so a client of several servers can tell who answered); a redirect
 * answering a form POST is 303, so the browser never re-posts the form elsewhere (RFC 9700 §4.11).
 */
import type { RequestHandler, Response } from 'express';
import { bodyParameters } from './params.js';
import type { AuthorizationError } from './authorization-request.js';

export function authorizationResponseLocation(redirectUri: string, params: Record<string, string | undefined>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined) search.append(name, value);
  return `${redirectUri}${redirectUri.includes('?') ? '&' : '?'}${search.toString()}`;
}

export function redirectTo(res: Response, location: string, status: 302 | 303): void {
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Pragma', 'no-cache');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('Location', location);
  res.status(status).end();
}

/**
 * Answers a form POST with a 303 to `url` carrying the same parameters in its query. For the endpoints that must take
 * POST (/authorize, /logout) but serve the signed-in user: the session cookie is SameSite=Lax, so a browser leaves it off
 * a relying party's cross-site POST, and only the GET that follows carries it.
 */
export function repeatFormAsGet(url: string): RequestHandler {
  return function repeatAsGet(_req, res) {
    redirectTo(res, `${url}?${bodyParameters(res).toString()}`, 303);
  };
}

export function redirectWithCode(res: Response, issuer: string, redirectUri: string, code: string, state: string | undefined, status: 302 | 303 = 302): void {
  redirectTo(res, authorizationResponseLocation(redirectUri, { code, state, iss: issuer }), status);
}

/** Where an error response goes: the redirect URI with error, error_description, state and iss. */
export function errorRedirectLocation(issuer: string, error: AuthorizationError): string {
  return authorizationResponseLocation(error.redirectUri, {
    error: error.error.code,
    error_description: error.error.description,
    state: error.state,
    iss: issuer,
  });
}

export function redirectWithError(res: Response, issuer: string, error: AuthorizationError, status: 302 | 303): void {
  redirectTo(res, errorRedirectLocation(issuer, error), status);
}
