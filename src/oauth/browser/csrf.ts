/**
 * Double-submit CSRF tokens (csrf-csrf), HMACs bound to the session id, so a token from another session, or from
 * before sign-in, when the id changes, is refused.
 */
import { doubleCsrf } from 'csrf-csrf';
import type { Request, Response } from 'express';
import { bodyParameters } from '../params.js';
import { hmacSha256 } from '../../crypto/secrets.js';
import type { Sessions } from './session.js';

export const CSRF_FIELD = 'csrf_token';

function tokenFromBody(req: Request): string | undefined {
  try {
    return req.res ? bodyParameters(req.res).get(CSRF_FIELD) : undefined;
  } catch {
    return undefined; // repeated: refused like a missing one
  }
}

export class CsrfProtection {
  private readonly generate: (req: Request, res: Response) => string;
  private readonly validate: (req: Request) => boolean;

  constructor(
    private readonly sessions: Sessions,
    sessionSecret: string,
  ) {
    const secret = hmacSha256(sessionSecret, 'fieldgate csrf');
    const { generateCsrfToken, validateRequest } = doubleCsrf({
      getSecret: () => secret,
      getSessionIdentifier: (req) => sessions.current(req)?.sid ?? '',
      cookieName: sessions.isSecure ? '__Host-fieldgate-csrf' : 'fieldgate-csrf',
      // Lax, like the session cookie: a Strict one is left off the cross-site navigation that brings the user to
      // /authorize, so each such page would mint a new cookie and void the form of any sign-in page already open.
      // A cross-site POST carries neither cookie, and the token is bound to the session id.
      cookieOptions: { sameSite: 'lax', secure: sessions.isSecure, httpOnly: true, path: '/' },
      getCsrfTokenFromRequest: tokenFromBody,
    });
    this.generate = (req, res) => generateCsrfToken(req, res);
    this.validate = validateRequest;
  }

  token(req: Request, res: Response): string {
    return this.generate(req, res);
  }

  isValid(req: Request): boolean {
    return this.sessions.current(req) !== undefined && this.validate(req);
  }
}
