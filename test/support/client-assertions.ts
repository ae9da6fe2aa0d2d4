/** private_key_jwt client assertions (RFC 7523 §3) signed with a fresh key, for the specs that authenticate with them. */
import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { TEST_ISSUER } from './runtime.js';

export interface SigningKey {
  privateKey: CryptoKey;
  publicJwk: JWK;
  alg: string;
}

export async function signingKey(alg = 'ES256', kid: string = randomUUID()): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg }, alg };
}

export interface AssertionOptions {
  iss?: string;
  sub?: string;
  aud?: string;
  exp?: number;
  /** Now unless given; null leaves it out. */
  iat?: number | null;
  jti?: string | null;
}

export async function assertion(clientId: string, key: SigningKey, options: AssertionOptions = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const jwt = new SignJWT(options.jti === null ? {} : { jti: options.jti ?? randomUUID() })
    .setProtectedHeader({ alg: key.alg, kid: key.publicJwk.kid! })
    .setIssuer(options.iss ?? clientId)
    .setSubject(options.sub ?? clientId)
    .setAudience(options.aud ?? TEST_ISSUER)
    .setExpirationTime(options.exp ?? now + 60);
  if (options.iat !== null) jwt.setIssuedAt(options.iat ?? now);
  return jwt.sign(key.privateKey);
}
