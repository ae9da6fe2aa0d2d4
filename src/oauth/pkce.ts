/**
 * PKCE (RFC 7636) with the S256 method only: `plain` would let anyone who sees the
 * authorization request redeem the code (RFC 9700 §2.1.1).
 */
import { createHash } from 'node:crypto';
import { constantTimeEqual } from '../crypto/secrets.js';

export const CODE_CHALLENGE_METHODS = ['S256'] as const;
export type CodeChallengeMethod = (typeof CODE_CHALLENGE_METHODS)[number];

const CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

export function isValidCodeChallenge(challenge: string): boolean {
  return CHALLENGE.test(challenge);
}

export function isValidCodeVerifier(verifier: string): boolean {
  return VERIFIER.test(verifier);
}

export function s256Challenge(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}

export function verifyCodeVerifier(verifier: string, challenge: string, method: string | null): boolean {
  if (method !== 'S256' || !isValidCodeVerifier(verifier)) return false;
  return constantTimeEqual(s256Challenge(verifier), challenge);
}
