/**
 * A stateless cookie signed with the session key, HttpOnly, SameSite=Lax, `__Host-` when https. Its id is replaced at
 * sign-in, so a session planted before sign-in is worth nothing after it. Signing out records the id in the database
 * (stores/ended-sessions.ts), so a copy of the cookie kept elsewhere is refused too.
 */
import cookieParser from 'cookie-parser';
import type { CookieOptions, Request, RequestHandler, Response } from 'express';
import { randomToken } from '../../crypto/secrets.js';
import { POLICY } from '../../policy.js';
import type { EndedSessionStore, SessionCheck } from '../stores/ended-sessions.js';

export const SESSION_TTL_SECONDS = POLICY.sessionTtlSeconds.value;

export interface BrowserSession {
  sid: string;
  userId?: number;
  authTime?: number;
  /** The user's session epoch at sign-in; "Sign out everywhere" raises it, voiding this session. */
  epoch?: number;
  /** Void after this, whatever the cookie's Max-Age. */
  expiresAt: number;
}

/** A session that a sign-out ended. */
export interface SignedOutSession {
  userId: number;
  sid: string;
  /** False when an earlier or concurrent sign-out of the same session had already ended it. */
  first: boolean;
}

/** A sign-in, and the other account's session it ended (whose clients are told, as after a sign-out). */
export interface SignedInSession {
  session: BrowserSession;
  ended: SignedOutSession | undefined;
}

/** What the stores check of a signed-in session; undefined for an anonymous one. */
export function signedInSession(session: BrowserSession | undefined): SessionCheck | undefined {
  if (session?.userId === undefined) return undefined;
  return { userId: session.userId, epoch: session.epoch ?? 0, sid: session.sid };
}

const sessions = new WeakMap<Request, BrowserSession>();

function isSession(value: unknown): value is BrowserSession {
  const v = value as Partial<BrowserSession> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.sid === 'string' &&
    typeof v.expiresAt === 'number' &&
    (v.userId === undefined || Number.isSafeInteger(v.userId)) &&
    (v.epoch === undefined || Number.isSafeInteger(v.epoch))
  );
}

export class Sessions {
  readonly cookieName: string;
  readonly cookies: RequestHandler;
  private readonly secure: boolean;

  constructor(
    issuer: string,
    secret: string,
    private readonly ended: Pick<EndedSessionStore, 'end' | 'isEnded'>,
  ) {
    this.secure = issuer.startsWith('https:');
    this.cookieName = this.secure ? '__Host-fieldgate-session' : 'fieldgate-session';
    this.cookies = cookieParser(secret) as RequestHandler;
  }

  get isSecure(): boolean {
    return this.secure;
  }

  private cookieOptions(): CookieOptions {
    return { httpOnly: true, sameSite: 'lax', secure: this.secure, path: '/', signed: true, maxAge: SESSION_TTL_SECONDS * 1000 };
  }

  current(req: Request): BrowserSession | undefined {
    const known = sessions.get(req);
    if (known) return known;
    const raw: unknown = req.signedCookies?.[this.cookieName];
    if (typeof raw !== 'string') return undefined;
    let session: unknown;
    try {
      session = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
    } catch {
      return undefined;
    }
    if (!isSession(session) || session.expiresAt <= Math.floor(Date.now() / 1000)) return undefined;
    sessions.set(req, session);
    return session;
  }

  ensure(req: Request, res: Response): BrowserSession {
    return this.current(req) ?? this.start(req, res, {});
  }

  /**
   * A signed-in session for `userId`. Another account's session that it replaces is ended (its user is signed out of
   * this browser, so a copy of their cookie must not stay signed in). The same user signing in again (prompt=login,
   * max_age) keeps the session's id, unless it has ended: its clients know the session by it, and a later sign-out then
   * ends every copy of the cookie, from before the new sign-in too. An anonymous session always gets a new id.
   */
  async signIn(req: Request, res: Response, userId: number, epoch = 0): Promise<SignedInSession> {
    const replaced = this.current(req);
    let sid: string | undefined;
    let ended: SignedOutSession | undefined;
    if (replaced?.userId !== undefined && replaced.userId !== userId) ended = await this.end(replaced, replaced.userId);
    else if (replaced?.userId === userId && !(await this.ended.isEnded(replaced.sid))) sid = replaced.sid;
    return { session: this.start(req, res, { userId, authTime: Math.floor(Date.now() / 1000), epoch }, sid), ended };
  }

  /**
   * Ends the sign-in: recorded in the database first (an error leaves the cookie as it was), then a new anonymous session
   * (new id, so CSRF tokens of the old one die with it). Returns the ended session, undefined when nobody was signed in.
   */
  async signOut(req: Request, res: Response): Promise<SignedOutSession | undefined> {
    const session = this.current(req);
    const ended = session?.userId === undefined ? undefined : await this.end(session, session.userId);
    this.start(req, res, {});
    return ended;
  }

  /** Records `session` (of `userId`) as ended, until its cookie would expire. */
  private async end(session: BrowserSession, userId: number): Promise<SignedOutSession> {
    return { userId, sid: session.sid, first: await this.ended.end(session.sid, session.expiresAt) };
  }

  private start(req: Request, res: Response, fields: Pick<BrowserSession, 'userId' | 'authTime' | 'epoch'>, sid = randomToken(16)): BrowserSession {
    const session: BrowserSession = { sid, ...fields, expiresAt: Math.floor(Date.now() / 1000) + SESSION_TTL_SECONDS };
    res.cookie(this.cookieName, Buffer.from(JSON.stringify(session)).toString('base64url'), this.cookieOptions());
    sessions.set(req, session);
    return session;
  }
}
