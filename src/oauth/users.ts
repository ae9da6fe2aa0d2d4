/** Resource owners: the people who sign in on the login page. */
import { eq } from 'drizzle-orm';
import type { Db } from '../db/database.js';
import { users } from '../db/schema.js';
import { dummyPasswordHash, hashPassword, verifyPassword } from './passwords.js';

export type User = typeof users.$inferSelect;

export class UserRegistrationError extends Error {
  override readonly name = 'UserRegistrationError';
}

export const MAX_PASSWORD_LENGTH = 1024;
/** Shortest password a new account (or a password change) may set. */
export const MIN_PASSWORD_LENGTH = 8;

export class UserStore {
  constructor(private readonly db: Db) {}

  /** `allowShortPassword` is for the demo account only, whose password is public by design. */
  async create(username: string, password: string, options: { allowShortPassword?: boolean } = {}): Promise<{ id: number; username: string }> {
    const name = username.trim();
    if (!/^[A-Za-z0-9._@-]{1,64}$/.test(name)) {
      throw new UserRegistrationError('a username is 1 to 64 letters, digits or . _ @ -');
    }
    const min = options.allowShortPassword ? 1 : MIN_PASSWORD_LENGTH;
    if (password.length < min || password.length > MAX_PASSWORD_LENGTH) {
      throw new UserRegistrationError(`a password is ${min} to ${MAX_PASSWORD_LENGTH} characters`);
    }
    const [row] = await this.db
      .insert(users)
      .values({ username: name, passwordHash: await hashPassword(password) })
      .onConflictDoNothing()
      .returning({ id: users.id, username: users.username });
    if (!row) throw new UserRegistrationError(`the username ${name} is taken`);
    return row;
  }

  async find(id: number): Promise<User | undefined> {
    const [row] = await this.db.select().from(users).where(eq(users.id, id));
    return row;
  }

  /**
   * The user whose username and password these are, or undefined. An unknown username costs
   * the same KDF work as a wrong password, so timing does not reveal which accounts exist.
   */
  async authenticate(username: string, password: string): Promise<User | undefined> {
    if (password.length > MAX_PASSWORD_LENGTH) return undefined;
    const [user] = await this.db.select().from(users).where(eq(users.username, username.trim()));
    const ok = await verifyPassword(password, user?.passwordHash ?? (await dummyPasswordHash()));
    return ok && user ? user : undefined;
  }
}
