/**
 * Codes and refresh tokens carry 256 bits of entropy, so unkeyed SHA-256 makes a database leak useless; client
 * secrets use HMAC-SHA-256 under a deployment key, so client authentication costs no password KDF.
 */
import { createHash, createHmac, randomBytes, randomFillSync, timingSafeEqual } from 'node:crypto';

/**
 * Bytes from the CSPRNG, drawn 4 KiB at a time, as Node draws them for `randomUUID`: one call into OpenSSL costs about as
 * much for 4 KiB as for 32 bytes (~7–13 µs here), and a code flow draws a grant id, a code's nonce and a refresh token.
 * Each byte is handed out once and zeroed as it is, so the pool never holds a value already issued.
 */
const POOL_SIZE = 4096;
const pool = Buffer.alloc(POOL_SIZE);
let poolOffset = POOL_SIZE;

/** `bytes` random bytes from the pool, in the form `read` gives them; a large draw goes to OpenSSL directly. */
function draw<T>(bytes: number, read: (source: Buffer, start: number, end: number) => T): T {
  if (bytes > POOL_SIZE / 4) return read(randomBytes(bytes), 0, bytes);
  if (poolOffset + bytes > POOL_SIZE) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const value = read(pool, poolOffset, poolOffset + bytes);
  pool.fill(0, poolOffset, poolOffset + bytes);
  poolOffset += bytes;
  return value;
}

export function randomToken(bytes = 32): string {
  return draw(bytes, (source, start, end) => source.toString('base64url', start, end));
}

/** Random bytes of its own (a copy, not a view of the pool). */
export function randomBuffer(bytes: number): Buffer {
  return draw(bytes, (source, start, end) => Buffer.from(source.subarray(start, end)));
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
