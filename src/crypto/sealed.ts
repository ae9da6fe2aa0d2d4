/**
 * Values only this deployment can read or forge: JSON encrypted and authenticated with AES-256-GCM (Node's OpenSSL), so
 * the holder learns nothing of the content and any change to it fails the tag check. Every instance derives the same
 * keys from the shared secret, so one instance opens what another sealed.
 *
 * The key changes every hour: each hour's is derived from the secret with HKDF (RFC 5869), the hour in the clear ahead
 * of the ciphertext and bound to it as associated data. A value opens during the hour it was sealed in and the next (and
 * in the hour before, for an instance whose clock lags the sealer's at the turn of an hour), so it must not need to live
 * longer than an hour; no key ever seals more than one hour's values, which keeps random 96-bit nonces far from their
 * collision bound. jose's JWE does the same with WebCrypto, at about ten times the cost
 * per value here (measured: docs/PERFORMANCE.md).
 */
import { createCipheriv, createDecipheriv, hkdfSync } from 'node:crypto';
import { randomBuffer } from './secrets.js';

const HOUR_MS = 3_600_000;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
/** A sealed value longer than this is not one of ours; it is refused before any decoding. */
const MAX_SEALED_LENGTH = 4096;

export class Sealer {
  /** How long a sealed value surely opens: to the end of the hour after the one it was sealed in, at least an hour. */
  static readonly lifetimeSeconds = HOUR_MS / 1000;

  private readonly keys = new Map<number, Buffer>();

  /** `purpose` separates keys: a value sealed for one purpose never opens for another, whatever the shared secret. */
  constructor(
    private readonly secret: string,
    private readonly purpose: string,
  ) {}

  private keyOf(hour: number): Buffer {
    let key = this.keys.get(hour);
    if (!key) {
      key = Buffer.from(hkdfSync('sha256', this.secret, '', `fieldgate sealed ${this.purpose} ${hour}`, 32));
      // Keys of hours no value opens in any more go (see open).
      for (const known of this.keys.keys()) if (known < hour - 1) this.keys.delete(known);
      this.keys.set(hour, key);
    }
    return key;
  }

  private associatedData(hour: number): Buffer {
    return Buffer.from(`${this.purpose} ${hour}`);
  }

  seal(content: object, now = Date.now()): string {
    const hour = Math.floor(now / HOUR_MS);
    const nonce = randomBuffer(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.keyOf(hour), nonce, { authTagLength: TAG_BYTES });
    cipher.setAAD(this.associatedData(hour));
    const encrypted = Buffer.concat([nonce, cipher.update(JSON.stringify(content), 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return `${hour.toString(36)}.${encrypted.toString('base64url')}`;
  }

  /** The content, or undefined when `sealed` was not sealed by this deployment for this purpose within the last hour or so (or was altered). */
  open(sealed: string, now = Date.now()): unknown {
    if (sealed.length > MAX_SEALED_LENGTH) return undefined;
    const dot = sealed.indexOf('.');
    if (dot < 1) return undefined;
    const hour = Number.parseInt(sealed.slice(0, dot), 36);
    if (hour.toString(36) !== sealed.slice(0, dot)) return undefined;
    const current = Math.floor(now / HOUR_MS);
    if (Math.abs(hour - current) > 1) return undefined;
    const encrypted = Buffer.from(sealed.slice(dot + 1), 'base64url');
    if (encrypted.length < NONCE_BYTES + TAG_BYTES) return undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.keyOf(hour), encrypted.subarray(0, NONCE_BYTES), { authTagLength: TAG_BYTES });
      decipher.setAAD(this.associatedData(hour));
      decipher.setAuthTag(encrypted.subarray(encrypted.length - TAG_BYTES));
      const plaintext = Buffer.concat([decipher.update(encrypted.subarray(NONCE_BYTES, encrypted.length - TAG_BYTES)), decipher.final()]);
      return JSON.parse(plaintext.toString('utf8')) as unknown;
    } catch {
      return undefined;
    }
  }
}
