/**
 * Page tokens (AIP-158), also our Relay cursors: the last row's sort keys, bound to list, filter, order and caller
 * and signed with HMAC-SHA-256, so a client can neither forge a position nor carry a token over to another query.
 */
import { createHash } from 'node:crypto';
import { constantTimeEqual, hmacSha256 } from '../crypto/secrets.js';

/**
 * A token carries the last row's sort-key values, so its length follows the data (a long product name under
 * `order_by=name`): any token the server issues must come back accepted. This is the longest URL the REST API takes
 * (MAX_URL_LENGTH in src/http/client-error.ts), which bounds what a token can be sent in anyway.
 */
export const MAX_PAGE_TOKEN_LENGTH = 12 * 1024;

export type KeyValue = string | number;

export class PageTokenError extends Error {
  override readonly name = 'PageTokenError';
}

interface Payload {
  /** Binding: hash of (list, filter, order, caller). */
  b: string;
  /** The last row's sort-key values, in order-by order, id last. */
  k: KeyValue[];
}

/** What a token is bound to; any difference makes it invalid. */
export function pageTokenBinding(parts: readonly (string | number | undefined)[]): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('base64url').slice(0, 22);
}

export class PageTokens {
  constructor(private readonly key: string) {}

  sign(binding: string, keys: KeyValue[]): string {
    const payload = Buffer.from(JSON.stringify({ b: binding, k: keys } satisfies Payload)).toString('base64url');
    return `${payload}.${this.mac(payload)}`;
  }

  /** The key values of a token made by `sign` for this binding; PageTokenError otherwise. */
  verify(token: string, binding: string, arity: number): KeyValue[] {
    if (token.length > MAX_PAGE_TOKEN_LENGTH) throw new PageTokenError(`is longer than ${MAX_PAGE_TOKEN_LENGTH} characters: it is not a page token of this list`);
    const [payload, mac, extra] = token.split('.');
    if (!payload || !mac || extra !== undefined || !constantTimeEqual(mac, this.mac(payload))) {
      throw new PageTokenError('is not a page token of this list');
    }
    let parsed: Payload;
    try {
      parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Payload;
    } catch {
      throw new PageTokenError('is not a page token of this list');
    }
    if (parsed.b !== binding) {
      throw new PageTokenError('was made for another list, filter, order_by or caller: send the same filter and order_by, with the same credentials, as the request that returned it');
    }
    const keys = parsed.k;
    if (!Array.isArray(keys) || keys.length !== arity || !keys.every((key) => typeof key === 'string' || typeof key === 'number')) {
      throw new PageTokenError('is not a page token of this list');
    }
    return keys;
  }

  private mac(payload: string): string {
    return hmacSha256(this.key, `page-token:${payload}`);
  }
}
