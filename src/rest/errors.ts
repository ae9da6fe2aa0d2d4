import type { GraphQLFormattedError } from 'graphql';
import type { ErrorRequestHandler } from 'express';
import type { GqlErrorCode } from '../graphql/errors.js';
import type { Logger } from '../logger.js';
import { withResourceMetadata, wwwAuthenticate } from '../tokens/bearer.js';
import { InsufficientScope, InvalidToken, OAuthError } from '../oauth/errors.js';

/**
 * REST errors in Google's JSON shape (AIP-193):
 * `{"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": "…"}}`.
 * Each class fixes its canonical status and HTTP code; `toBody` is the one serializer.
 */
export type RestStatus =
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

export interface RestErrorOptions {
  cause?: unknown;
  /** HTTP status, where it differs from the canonical mapping (e.g. 413, 415, 412). */
  httpStatus?: number;
  /** Response headers that belong to this error, such as a `WWW-Authenticate` challenge. */
  headers?: Record<string, string>;
}

export abstract class RestError extends Error {
  abstract readonly status: RestStatus;
  protected abstract readonly defaultHttpStatus: number;
  private readonly httpStatusOverride: number | undefined;
  readonly headers: Readonly<Record<string, string>>;

  constructor(message: string, options: RestErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.httpStatusOverride = options.httpStatus;
    this.headers = options.headers ?? {};
  }

  get httpStatus(): number {
    return this.httpStatusOverride ?? this.defaultHttpStatus;
  }

  toBody(): { error: { code: number; status: RestStatus; message: string } } {
    return { error: { code: this.httpStatus, status: this.status, message: this.message } };
  }
}

export class RestInvalidArgument extends RestError {
  readonly status = 'INVALID_ARGUMENT';
  protected readonly defaultHttpStatus = 400;
}

export class RestUnauthenticated extends RestError {
  readonly status = 'UNAUTHENTICATED';
  protected readonly defaultHttpStatus = 401;
}

export class RestPermissionDenied extends RestError {
  readonly status = 'PERMISSION_DENIED';
  protected readonly defaultHttpStatus = 403;
}

export class RestNotFound extends RestError {
  readonly status = 'NOT_FOUND';
  protected readonly defaultHttpStatus = 404;
}

export class RestFailedPrecondition extends RestError {
  readonly status = 'FAILED_PRECONDITION';
  protected readonly defaultHttpStatus = 409;
}

/** A method a path does not support (HTTP 405 with `Allow`). */
export class RestUnimplemented extends RestError {
  readonly status = 'UNIMPLEMENTED';
  protected readonly defaultHttpStatus = 501;
}

export class RestInternal extends RestError {
  readonly status = 'INTERNAL';
  protected readonly defaultHttpStatus = 500;
}

/**
 * A bearer-token refusal as a REST error: 401 or 403 with the RFC 6750 challenge in
 * `WWW-Authenticate`, and the Google error body beside it.
 */
export function fromOAuthError(error: OAuthError): RestError {
  const headers = { 'WWW-Authenticate': wwwAuthenticate(error) };
  if (error instanceof InsufficientScope) return new RestPermissionDenied(error.message, { cause: error, headers });
  if (error instanceof InvalidToken) return new RestUnauthenticated(error.message, { cause: error, headers });
  return error.status < 500
    ? new RestInvalidArgument(error.message, { cause: error, httpStatus: error.status })
    : new RestInternal('internal error', { cause: error });
}

/** `extensions.reason` of the GraphQL limits (src/graphql/limits.ts) a REST request can reach. */
const LIMIT_REASONS = new Set(['MAX_COST', 'MAX_DEPTH', 'MAX_ALIASES', 'MAX_TOKENS', 'MAX_DIRECTIVES']);

type RestErrorClass = new (message: string, options?: RestErrorOptions) => RestError;

/**
 * The one mapping from a GraphQL `extensions.code` (ours, and those of graphql-js and
 * graphql-yoga for documents this layer built) to a REST status. Codes not here are masked.
 */
const REST_ERROR_FOR_CODE: ReadonlyMap<string, RestErrorClass> = new Map<GqlErrorCode | 'BAD_USER_INPUT' | 'GRAPHQL_VALIDATION_FAILED' | 'GRAPHQL_PARSE_FAILED', RestErrorClass>([
  ['UNAUTHENTICATED', RestUnauthenticated],
  ['FORBIDDEN', RestPermissionDenied],
  ['NOT_FOUND', RestNotFound],
  ['FAILED_PRECONDITION', RestFailedPrecondition],
  ['INVALID_ARGUMENT', RestInvalidArgument],
  ['BAD_USER_INPUT', RestInvalidArgument],
  ['GRAPHQL_VALIDATION_FAILED', RestInvalidArgument],
  ['GRAPHQL_PARSE_FAILED', RestInvalidArgument],
]);

/**
 * The REST error for a failed GraphQL execution, from the first error's `extensions.code`.
 * Anything without a known client-error code is masked as INTERNAL.
 */
export function fromGraphQLErrors(errors: readonly GraphQLFormattedError[]): RestError {
  const error = errors[0];
  if (!error) return new RestInternal('internal error');
  const extensions = (error.extensions ?? {}) as Record<string, unknown>;
  const code = typeof extensions.code === 'string' ? extensions.code : undefined;
  const message = error.message;
  const cause = error;
  // Bearer refusals keep their RFC 6750 challenge.
  if (code === 'UNAUTHENTICATED') return fromOAuthError(new InvalidToken(message, { cause }));
  if (code === 'FORBIDDEN' && typeof extensions.requiredScope === 'string' && extensions.requiredScope) {
    return fromOAuthError(new InsufficientScope(extensions.requiredScope, { cause }));
  }
  // A GraphQL abuse limit refusing the document this layer built: say it in REST terms.
  if (code === 'INVALID_ARGUMENT' && typeof extensions.reason === 'string' && LIMIT_REASONS.has(extensions.reason)) {
    return new RestInvalidArgument('the response would be too large: ask for fewer fields or a smaller limit', { cause });
  }
  const RestClass = code === undefined ? undefined : REST_ERROR_FOR_CODE.get(code);
  // An If-Match that no longer matches is HTTP's own precondition (412); a status move is 409.
  if (RestClass) return new RestClass(message, { cause, httpStatus: code === 'FAILED_PRECONDITION' && extensions.reason === 'ETAG_MISMATCH' ? 412 : undefined });
  const http = extensions.http as { status?: unknown } | undefined;
  if (typeof http?.status === 'number' && http.status >= 400 && http.status < 500) {
    return new RestInvalidArgument(message, { cause, httpStatus: http.status });
  }
  return new RestInternal('internal error', { cause });
}

/** Any error as a REST error: ours as they are, body-parser's by their status, the rest masked. */
export function toRestError(error: unknown): RestError {
  if (error instanceof RestError) return error;
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
    return new RestInvalidArgument(message, { httpStatus: status, cause: error });
  }
  return new RestInternal('internal error', { cause: error });
}

/**
 * The one Express error handler for REST and for anything no face answered: the Google
 * error body with the error's own headers; 5xx logged with the request id and masked.
 */
export function restErrorHandler(logger: Logger, logMessage: string, options: { resourceMetadataUrl?: string } = {}): ErrorRequestHandler {
  return function restErrorResponse(error, req, res, _next) {
    const restError = toRestError(error);
    if (restError.httpStatus >= 500) logger.error({ err: error, reqId: req.id }, logMessage);
    if (res.headersSent) {
      res.end();
      return;
    }
    const headers = { ...restError.headers };
    // RFC 9728 §5.1: a bearer challenge names the resource's metadata.
    const challenge = headers['WWW-Authenticate'];
    if (challenge && options.resourceMetadataUrl) headers['WWW-Authenticate'] = withResourceMetadata(challenge, options.resourceMetadataUrl);
    res.status(restError.httpStatus).set(headers).json(restError.toBody());
  };
}
