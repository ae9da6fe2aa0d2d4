import type { GraphQLFormattedError } from 'graphql';
import { wwwAuthenticate } from '../oauth/bearer.js';
import { InsufficientScope, InvalidToken, OAuthError } from '../oauth/errors.js';

/**
 * REST errors in Google's JSON shape (AIP-193):
 * `{"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": "…"}}`.
 * Each class fixes its canonical status and HTTP code; `toBody` is the one serializer.
 */
export type ApiStatus =
  | 'INVALID_ARGUMENT'
  | 'UNAUTHENTICATED'
  | 'PERMISSION_DENIED'
  | 'NOT_FOUND'
  | 'FAILED_PRECONDITION'
  | 'ABORTED'
  | 'RESOURCE_EXHAUSTED'
  | 'UNIMPLEMENTED'
  | 'UNAVAILABLE'
  | 'INTERNAL';

export interface ApiErrorOptions {
  cause?: unknown;
  /** HTTP status, where it differs from the canonical mapping (e.g. 413, 415, 412). */
  httpStatus?: number;
  /** Response headers that belong to this error, such as a `WWW-Authenticate` challenge. */
  headers?: Record<string, string>;
}

export abstract class ApiError extends Error {
  abstract readonly status: ApiStatus;
  protected abstract readonly defaultHttpStatus: number;
  private readonly httpStatusOverride: number | undefined;
  readonly headers: Readonly<Record<string, string>>;

  constructor(message: string, options: ApiErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.httpStatusOverride = options.httpStatus;
    this.headers = options.headers ?? {};
  }

  get httpStatus(): number {
    return this.httpStatusOverride ?? this.defaultHttpStatus;
  }

  toBody(): { error: { code: number; status: ApiStatus; message: string } } {
    return { error: { code: this.httpStatus, status: this.status, message: this.message } };
  }
}

export class InvalidArgument extends ApiError {
  readonly status = 'INVALID_ARGUMENT';
  protected readonly defaultHttpStatus = 400;
}

export class Unauthenticated extends ApiError {
  readonly status = 'UNAUTHENTICATED';
  protected readonly defaultHttpStatus = 401;
}

export class PermissionDenied extends ApiError {
  readonly status = 'PERMISSION_DENIED';
  protected readonly defaultHttpStatus = 403;
}

export class NotFound extends ApiError {
  readonly status = 'NOT_FOUND';
  protected readonly defaultHttpStatus = 404;
}

export class FailedPrecondition extends ApiError {
  readonly status = 'FAILED_PRECONDITION';
  protected readonly defaultHttpStatus = 409;
}

export class ResourceExhausted extends ApiError {
  readonly status = 'RESOURCE_EXHAUSTED';
  protected readonly defaultHttpStatus = 429;
}

/** A method a path does not support (HTTP 405 with `Allow`). */
export class Unimplemented extends ApiError {
  readonly status = 'UNIMPLEMENTED';
  protected readonly defaultHttpStatus = 501;
}

export class Internal extends ApiError {
  readonly status = 'INTERNAL';
  protected readonly defaultHttpStatus = 500;
}

/**
 * A bearer-token refusal as a REST error: 401 or 403 with the RFC 6750 challenge in
 * `WWW-Authenticate`, and the Google error body beside it.
 */
export function fromOAuthError(error: OAuthError): ApiError {
  const headers = { 'WWW-Authenticate': wwwAuthenticate(error) };
  if (error instanceof InsufficientScope) return new PermissionDenied(error.message, { cause: error, headers });
  if (error instanceof InvalidToken) return new Unauthenticated(error.message, { cause: error, headers });
  return error.status < 500
    ? new InvalidArgument(error.message, { cause: error, httpStatus: error.status })
    : new Internal('internal error', { cause: error });
}

/** `extensions.reason` of the GraphQL limits (src/graphql/limits.ts) a REST request can reach. */
const LIMIT_REASONS = new Set(['MAX_COST', 'MAX_DEPTH', 'MAX_ALIASES', 'MAX_TOKENS', 'MAX_DIRECTIVES']);

/**
 * The REST error for a failed GraphQL execution, from the first error's `extensions.code`.
 * Anything without a known client-error code is masked as INTERNAL.
 */
export function fromGraphQLErrors(errors: readonly GraphQLFormattedError[]): ApiError {
  const error = errors[0];
  if (!error) return new Internal('internal error');
  const extensions = (error.extensions ?? {}) as Record<string, unknown>;
  const code = typeof extensions.code === 'string' ? extensions.code : undefined;
  const message = error.message;
  const cause = error;
  switch (code) {
    case 'UNAUTHENTICATED':
      return fromOAuthError(new InvalidToken(message, { cause }));
    case 'FORBIDDEN': {
      const scope = typeof extensions.requiredScope === 'string' ? extensions.requiredScope : undefined;
      if (scope) return fromOAuthError(new InsufficientScope(scope, { cause }));
      return new PermissionDenied(message, { cause });
    }
    case 'NOT_FOUND':
      return new NotFound(message, { cause });
    case 'FAILED_PRECONDITION':
      // An If-Match that no longer matches is HTTP's own precondition (412); a status move is 409.
      return new FailedPrecondition(message, { cause, httpStatus: extensions.reason === 'ETAG_MISMATCH' ? 412 : undefined });
    case 'INVALID_ARGUMENT':
      // A GraphQL abuse limit refusing the document this layer built: say it in REST terms.
      if (typeof extensions.reason === 'string' && LIMIT_REASONS.has(extensions.reason)) {
        return new InvalidArgument('the response would be too large: ask for fewer fields or a smaller limit', { cause });
      }
      return new InvalidArgument(message, { cause });
    case 'BAD_USER_INPUT':
    case 'GRAPHQL_VALIDATION_FAILED':
    case 'GRAPHQL_PARSE_FAILED':
      // Validation failures of a document built here are the limits (cost, depth) refusing it.
      return new InvalidArgument(message, { cause });
    default: {
      const http = extensions.http as { status?: unknown } | undefined;
      if (typeof http?.status === 'number' && http.status >= 400 && http.status < 500) {
        return new InvalidArgument(message, { cause, httpStatus: http.status });
      }
      return new Internal('internal error', { cause });
    }
  }
}

/** Any error as a REST error: ours as they are, body-parser's by their status, the rest masked. */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  const status = (error as { status?: unknown; statusCode?: unknown })?.status ?? (error as { statusCode?: unknown })?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    const type = (error as { type?: string }).type;
    const message =
      type === 'entity.too.large'
        ? 'the request body is too large'
        : type === 'entity.parse.failed'
          ? 'the request body is not valid JSON'
          : type === 'encoding.unsupported' || type === 'charset.unsupported'
            ? 'the request body encoding is not supported'
            : 'the request is not valid';
    return new InvalidArgument(message, { httpStatus: status, cause: error });
  }
  return new Internal('internal error', { cause: error });
}
