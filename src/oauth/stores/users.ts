import { and, eq, isNull, sql } from 'drizzle-orm';
import type { Db } from '../../db/database.js';
import { grants, users } from '../../db/schema.js';
import { dummyPasswordHash, hashPassword, verifyPassword } from '../../crypto/passwords.js';
import { notEnded, type SessionCheck } from './ended-sessions.js';
import { withdrawDeviceApprovals } from './device-codes.js';
import { textProblem } from '../client-metadata.js';

export type User = typeof users.$inferSelect;

export class UserRegistrationError extends Error {
  override readonly name = 'UserRegistrationError';
}

export const MAX_PASSWORD_LENGTH = 1024;
export const MIN_PASSWORD_LENGTH = 8;

function checkPassword(password: string, min = MIN_PASSWORD_LENGTH): void {
  if (password.length < min || password.length > MAX_PASSWORD_LENGTH) {
    throw new UserRegistrationError(`a password is ${min} to ${MAX_PASSWORD_LENGTH} characters`);
  }
}

/** OIDC `profile` and `email` claims (src/oauth/oidc/claims.ts). Null clears a field. */
export interface UserProfile {
  displayName?: string | null;
  email?: string | null;
  emailVerified?: boolean;
}

const MAX_DISPLAY_NAME_LENGTH = 200;

function validateProfile(profile: UserProfile): Partial<typeof users.$inferInsert> {
  const set: Partial<typeof users.$inferInsert> = {};
  if (profile.displayName !== undefined) {
    const name = profile.displayName?.trim() || null;
    // Shown on the account and consent pages: the rule client names follow.
    if (name !== null && (name.length > MAX_DISPLAY_NAME_LENGTH || textProblem(name) !== undefined)) {
      throw new UserRegistrationError(`a display name is at most ${MAX_DISPLAY_NAME_LENGTH} printable characters`);
    }
    set.displayName = name;
  }
  if (profile.email !== undefined) {
    const email = profile.email?.trim() || null;
    // Deliberately loose (RFC 5322 is not a regex): one @, no spaces, something on both sides.
    if (email !== null && (email.length > 254 || !/^[^\s@]+@[^\s@]+$/.test(email))) {
      throw new UserRegistrationError('an email address looks like name@example.com');
    }
    set.email = email;
    // A changed address is unverified unless the caller says otherwise.
    set.emailVerified = email !== null && (profile.emailVerified ?? false);
  } else if (profile.emailVerified !== undefined) {
    set.emailVerified = profile.emailVerified;
  }
  return set;
}

export class UserStore {
  constructor(private readonly db: Db) {}

  /**
   * `allowShortPassword` is for the demo account only, whose password is public by design; so is `passwordHash`, the
   * hash of `password` computed earlier by the caller (see `demoPasswordHash`).
   */
  async create(
    username: string,
    password: string,
    options: { allowShortPassword?: boolean; profile?: UserProfile; passwordHash?: string } = {},
  ): Promise<{ id: number; username: string }> {
    const name = username.trim();
    if (!/^[A-Za-z0-9._@-]{1,64}$/.test(name)) {
      throw new UserRegistrationError('a username is 1 to 64 letters, digits or . _ @ -');
    }
    checkPassword(password, options.allowShortPassword ? 1 : MIN_PASSWORD_LENGTH);
    const [row] = await this.db
      .insert(users)
      .values({ username: name, passwordHash: options.passwordHash ?? (await hashPassword(password)), ...validateProfile(options.profile ?? {}) })
      .onConflictDoNothing()
      .returning({ id: users.id, username: users.username });
    if (!row) throw new UserRegistrationError(`the username ${name} is taken`);
    return row;
  }

  async list(): Promise<{ id: number; username: string; createdAt: Date }[]> {
    return this.db.select({ id: users.id, username: users.username, createdAt: users.createdAt }).from(users).orderBy(users.id);
  }

  /** Grants, codes, refresh tokens, consents and orders go with it (the schema cascades). */
  async delete(username: string): Promise<boolean> {
    const deleted = await this.db.delete(users).where(eq(users.username, username.trim())).returning({ id: users.id });
    return deleted.length > 0;
  }

  /**
   * Also revokes every grant and ends every browser session: a password is changed after a leak. Returns the user's id,
   * undefined when there is no such user.
   */
  async setPassword(username: string, password: string): Promise<number | undefined> {
    checkPassword(password);
    const passwordHash = await hashPassword(password);
    return this.db.transaction(async (tx) => {
      const [user] = await tx.update(users).set({ passwordHash, sessionEpoch: sql`${users.sessionEpoch} + 1` }).where(eq(users.username, username.trim())).returning({ id: users.id });
      if (!user) return undefined;
      await withdrawDeviceApprovals(tx, sql`user_id = ${user.id}`);
      await tx.update(grants).set({ revokedAt: sql`now()` }).where(and(eq(grants.userId, user.id), isNull(grants.revokedAt)));
      return user.id;
    });
  }

  async updateProfile(username: string, profile: UserProfile): Promise<boolean> {
    const set = validateProfile(profile);
    if (Object.keys(set).length === 0) return (await this.db.select({ id: users.id }).from(users).where(eq(users.username, username.trim()))).length > 0;
    const updated = await this.db.update(users).set(set).where(eq(users.username, username.trim())).returning({ id: users.id });
    return updated.length > 0;
  }

  /** "Sign out everywhere": every browser session signed in before now is void. Returns the new epoch. */
  async endSessions(id: number): Promise<number | undefined> {
    const [row] = await this.db
      .update(users)
      .set({ sessionEpoch: sql`${users.sessionEpoch} + 1` })
      .where(eq(users.id, id))
      .returning({ epoch: users.sessionEpoch });
    return row?.epoch;
  }

  /** The session's user, unless the session was signed out, everywhere (epoch) or on its own (ended-sessions.ts). */
  async findSignedIn(session: SessionCheck): Promise<User | undefined> {
    const [row] = await this.db
      .select()
      .from(users)
      .where(and(eq(users.id, session.userId), eq(users.sessionEpoch, session.epoch), notEnded(session.sid)));
    return row;
  }

  async find(id: number): Promise<User | undefined> {
    const [row] = await this.db.select().from(users).where(eq(users.id, id));
    return row;
  }

  /** An unknown username costs the same KDF work as a wrong password, so timing does not reveal which accounts exist. */
  async authenticate(username: string, password: string): Promise<User | undefined> {
    if (password.length > MAX_PASSWORD_LENGTH) return undefined;
    const [user] = await this.db.select().from(users).where(eq(users.username, username.trim()));
    const ok = await verifyPassword(password, user?.passwordHash ?? (await dummyPasswordHash()));
    return ok && user ? user : undefined;
  }
}
