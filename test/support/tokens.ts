/**
 * Access tokens for tests of the resource APIs (GraphQL, REST): a user, a client and a grant
 * row are created as the OAuth server would, then the token is signed with the runtime's key.
 *
 * @example
 *   const { token, userId } = await issueTestToken(runtime, { scope: 'orders:read' });
 *   const other = await issueTestToken(runtime, { scope: 'orders:write', userId }); // same user
 *   await request(app).post('/graphql').set('Authorization', `Bearer ${token}`)…
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { grants, users } from '../../src/db/schema.js';
import type { Principal } from '../../src/tokens/access-token.js';
import { ALL_SCOPES } from '../../src/oauth/scopes.js';
import type { Runtime } from '../../src/runtime.js';

export interface TestTokenOptions {
  /** Space-separated; every scope Fieldgate knows by default. */
  scope?: string;
  /** Token for this existing user (e.g. from an earlier issueTestToken); a new user otherwise. */
  userId?: number;
  /** Username of the new user; a random one by default. */
  username?: string;
}

export interface TestToken {
  token: string;
  userId: number;
  clientId: string;
  grantId: string;
  /** What the resource server will see for this token. */
  principal: Principal;
  /** `Bearer <token>`, for an Authorization header. */
  authorization: string;
}

/** Creates a user (no password login: the hash is a placeholder) and returns its id. */
export async function createTestUser(runtime: Runtime, username = `user-${randomBytes(4).toString('hex')}`): Promise<number> {
  const [user] = await runtime.db.insert(users).values({ username, passwordHash: 'unusable' }).returning({ id: users.id });
  return user!.id;
}

export async function issueTestToken(runtime: Runtime, options: TestTokenOptions = {}): Promise<TestToken> {
  const scope = options.scope ?? ALL_SCOPES.join(' ');
  const userId = options.userId ?? (await createTestUser(runtime, options.username));
  const client = await runtime.clients.create({
    name: 'test client',
    redirectUris: ['http://localhost/callback'],
    isPublic: true,
    // A client may not be registered without scopes; the token's scope may still be empty.
    scope: ALL_SCOPES.join(' '),
  });
  const grantId = randomUUID();
  await runtime.db.insert(grants).values({ id: grantId, clientId: client.client_id, userId, scope });
  const { token } = await runtime.accessTokens.issue({ userId, clientId: client.client_id, scope, grantId });
  const principal = await runtime.accessTokens.verify(token);
  return { token, userId, clientId: client.client_id, grantId, principal, authorization: `Bearer ${token}` };
}
