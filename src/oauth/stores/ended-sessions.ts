/**
 * Signed-out browser sessions. The session cookie is stateless, so signing out only replaces it in one browser; a copy
 * (stolen, or another tab's jar) would stay signed in until it expires. Each store that accepts a signed-in session adds
 * `notEnded` to the statement it already runs, so the check costs no round trip.
 */
import { eq, sql, type Placeholder, type SQL } from 'drizzle-orm';
import type { Db } from '../../db/database.js';
import { endedSessions } from '../../db/schema.js';

/** What a store checks of a browser session: whose it is, the user's epoch at sign-in, and the cookie's id. */
export interface SessionCheck {
  userId: number;
  epoch: number;
  sid: string;
}

/** `true` unless the session with this cookie id was signed out. */
export function notEnded(sid: string | Placeholder): SQL {
  return sql`not exists (select 1 from ${endedSessions} where ${endedSessions.sid} = ${sid})`;
}

export class EndedSessionStore {
  constructor(private readonly db: Db) {}

  /** Whether the session with this cookie id was signed out. */
  async isEnded(sid: string): Promise<boolean> {
    const [row] = await this.db.select({ sid: endedSessions.sid }).from(endedSessions).where(eq(endedSessions.sid, sid)).limit(1);
    return row !== undefined;
  }

  /**
   * Records the sign-out until the cookie's own expiry (epoch seconds). Returns false when the session had already ended,
   * so concurrent sign-outs of one session all succeed and exactly one of them reports it as its own.
   */
  async end(sid: string, expiresAt: number): Promise<boolean> {
    const inserted = await this.db
      .insert(endedSessions)
      .values({ sid, expiresAt: new Date(expiresAt * 1000) })
      .onConflictDoNothing()
      .returning({ sid: endedSessions.sid });
    return inserted.length > 0;
  }
}
