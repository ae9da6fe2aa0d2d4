/**
 * Codes and refresh tokens carry 256 bits of entropy, so unkeyed SHA-256 makes a database leak useless; client
 * secrets use HMAC-SHA-256 under a deployment key, so client authentication costs no password KDF.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** A random id that never starts with `-` or `_`, so a command line never reads it as an option. */
export function randomIdentifier(bytes = 16): string {
  for (;;) {
    const id = randomToken(bytes);
    if (/^[A-Za-z0-9]/.test(id)) return id;
  }
}

export function sha256(value: string): string {
  return createHash('sha256').update(value).digest('base64url');
}

export function hmacSha256(key: string, value: string): string {
  return createHmac('sha256', key).update(value).digest('base64url');
}

export function constantTimeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  if (left.length !== right.length) {
    // Still do the work so a length mismatch is not observably faster.
    timingSafeEqual(left, left);
    return false;
  }
  return timingSafeEqual(left, right);
}
