/**
 * `Idempotency-Key` of POST /orders (draft-ietf-httpapi-idempotency-key-header). The key is claimed in the order's
 * transaction (src/graphql/idempotency.ts); a retry gets the first answer, marked `Idempotent-Replayed: true`.
 */
import type { Request } from 'express';
import { idempotencyKeyProblem } from '../graphql/idempotency.js';
import { RestError, RestInvalidArgument, type RestErrorOptions } from './errors.js';

export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';

/** A structured-field string (`"…"`) or, as most clients send it, the bare value. */
export function idempotencyKeyOf(req: Request): string | undefined {
  // req.headers joins repeated fields with ", ", which would make two keys one new key.
  const fields = req.headersDistinct['idempotency-key'];
  if (fields === undefined) return undefined;
  if (fields.length > 1) {
    const description = `the ${IDEMPOTENCY_KEY_HEADER} header is given more than once`;
    throw new RestInvalidArgument(description, {
      reason: 'INVALID_IDEMPOTENCY_KEY',
      fieldViolations: [{ field: IDEMPOTENCY_KEY_HEADER, description }],
    });
  }
  const text = fields[0]!.trim();
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

/** The GraphQL argument the key travels in; a REST client sent the header. */
const GRAPHQL_ARGUMENT = 'idempotencyKey';

/** An error of createOrder about its `idempotencyKey` (IDEMPOTENCY_KEY_REUSED), naming the header instead. */
export function namingTheHeader(error: unknown): unknown {
  if (!(error instanceof RestError) || !error.fieldViolations.some((violation) => violation.field === GRAPHQL_ARGUMENT)) return error;
  const SameClass = error.constructor as new (message: string, options: RestErrorOptions) => RestError;
  return new SameClass(error.message, {
    cause: error.cause,
    httpStatus: error.httpStatus,
    headers: { ...error.headers },
    reason: error.reason,
    metadata: { ...error.metadata },
    fieldViolations: error.fieldViolations.map((violation) => (violation.field === GRAPHQL_ARGUMENT ? { ...violation, field: IDEMPOTENCY_KEY_HEADER } : violation)),
  });
}
