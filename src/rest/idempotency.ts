/**
 * `Idempotency-Key` of POST /orders (draft-ietf-httpapi-idempotency-key-header). The key is claimed in the order's
 * transaction (src/graphql/idempotency.ts); a retry gets the first answer, marked `Idempotent-Replayed: true`.
 */
import type { Request } from 'express';
import { idempotencyKeyProblem } from '../graphql/idempotency.js';
import { RestInvalidArgument } from './errors.js';

export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';

/** A structured-field string (`"…"`) or, as most clients send it, the bare value. */
export function idempotencyKeyOf(req: Request): string | undefined {
  const raw = req.headers['idempotency-key'];
  if (raw === undefined) return undefined;
  const text = (Array.isArray(raw) ? raw.join(', ') : raw).trim();
  const quoted = /^"((?:[^"\\]|\\["\\])*)"$/.exec(text);
  const key = quoted ? quoted[1]!.replace(/\\(["\\])/g, '$1') : text;
  const problem = idempotencyKeyProblem(key);
  if (problem !== undefined) {
    const description = `the Idempotency-Key header ${problem}`;
    throw new RestInvalidArgument(description, {
      reason: 'INVALID_IDEMPOTENCY_KEY',
      fieldViolations: [{ field: IDEMPOTENCY_KEY_HEADER, description }],
    });
  }
  return key;
}
