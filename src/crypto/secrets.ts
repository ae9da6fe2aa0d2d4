/**
 * Random values and the hashes they are stored under. Codes and refresh tokens are looked up
 * by SHA-256 (they carry 256 bits of entropy, so a fast unkeyed hash is enough to make a
 * database leak useless); client secrets by HMAC-SHA-256 under a per-deployment key, so that
 * client authentication costs microseconds rather than a password KDF's tens of milliseconds.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** A URL-safe random string carrying `bytes` bytes (default 32 = 256 bits) of entropy. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

export function sha256(value: string): string {
  return createHash('sha256').update(value).digest('base64url');
}

export function hmacSha256(key: string, value: string): string {
  return createHmac('sha256', key).update(value).digest('base64url');
}

/** Compares two strings in time that depends only on their lengths. */
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
