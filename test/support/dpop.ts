/**
 * DPoP proofs for raw-HTTP specs (RFC 9449 §4.2): a key pair per simulated client, and proofs
 * with any claim or header overridden — or signed in ways a server must refuse.
 */
import { createHash, randomUUID } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';

export interface DpopKey {
  alg: 'ES256' | 'EdDSA' | 'RS256';
  privateKey: CryptoKey;
  publicJwk: JWK;
  privateJwk: JWK;
  jkt: string;
}

export async function dpopKey(alg: DpopKey['alg'] = 'ES256'): Promise<DpopKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const publicJwk = await exportJWK(publicKey);
  return { alg, privateKey, publicJwk, privateJwk: await exportJWK(privateKey), jkt: await calculateJwkThumbprint(publicJwk) };
}

export interface ProofOptions {
  htm?: string;
  htu: string;
  iat?: number;
  jti?: string;
  nonce?: string;
  /** The access token the proof accompanies; its hash becomes `ath`. */
  accessToken?: string;
  ath?: string;
  typ?: string;
  /** A different `jwk` header than the signing key's public half (e.g. its private half). */
  jwk?: JWK;
}

export const ath = (token: string) => createHash('sha256').update(token).digest('base64url');

export async function dpopProof(key: DpopKey, options: ProofOptions): Promise<string> {
  const claims: Record<string, unknown> = {
    htm: options.htm ?? 'POST',
    htu: options.htu,
    jti: options.jti ?? randomUUID(),
    ...(options.nonce === undefined ? {} : { nonce: options.nonce }),
    ...(options.ath !== undefined ? { ath: options.ath } : options.accessToken === undefined ? {} : { ath: ath(options.accessToken) }),
  };
  return new SignJWT(claims)
    .setProtectedHeader({ alg: key.alg, typ: options.typ ?? 'dpop+jwt', jwk: options.jwk ?? key.publicJwk })
    .setIssuedAt(options.iat ?? Math.floor(Date.now() / 1000))
    .sign(key.privateKey);
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** A proof "signed" with HS256 under a key carried in the header: symmetric, so anyone could forge it. */
export async function symmetricProof(htu: string): Promise<string> {
  const secret = new Uint8Array(32).fill(7);
  return new SignJWT({ htm: 'POST', htu, jti: randomUUID() })
    .setProtectedHeader({ alg: 'HS256', typ: 'dpop+jwt', jwk: { kty: 'oct', k: Buffer.from(secret).toString('base64url') } as never })
    .setIssuedAt()
    .sign(secret);
}

/** An unsecured (`alg: none`) proof. */
export function unsignedProof(key: DpopKey, htu: string): string {
  const header = { alg: 'none', typ: 'dpop+jwt', jwk: key.publicJwk };
  return `${b64(header)}.${b64({ htm: 'POST', htu, jti: randomUUID(), iat: Math.floor(Date.now() / 1000) })}.`;
}
