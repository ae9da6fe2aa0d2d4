import { eq } from 'drizzle-orm';
import { randomToken } from '../crypto/secrets.js';
import type { Db } from './database.js';
import { instanceSecrets } from './schema.js';

export type InstanceSecretName = 'client-secret-hmac' | 'session-cookie' | 'refresh-token-successor' | 'demo-client-secret' | 'page-token' | 'dpop-nonce' | 'pairwise-subject' | 'authorization-code';

/**
 * Returns the deployment-wide secret of that name, creating it on first use. Insert-if-absent
 * then read back, so instances starting together agree on one value.
 */
export async function instanceSecret(db: Db, name: InstanceSecretName): Promise<string> {
  await db.insert(instanceSecrets).values({ name, value: randomToken(32) }).onConflictDoNothing();
  const [row] = await db.select({ value: instanceSecrets.value }).from(instanceSecrets).where(eq(instanceSecrets.name, name));
  if (!row) throw new Error(`instance secret ${name} could not be created`);
  return row.value;
}
