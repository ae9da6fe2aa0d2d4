import type { GraphQLFormattedError } from 'graphql';
import type { ErrorRequestHandler } from 'express';
import type { GqlErrorCode } from '../graphql/errors.js';
import type { Logger } from '../logger.js';
import { challengeHeaders, withResourceMetadata, wwwAuthenticate } from '../tokens/bearer.js';
import { InsufficientScope, InvalidToken, OAuthError } from '../oauth/errors.js';
import { DATABASE_RETRY_AFTER_SECONDS, DATABASE_UNAVAILABLE, DEADLINE_EXCEEDED_MESSAGE, isDatabaseUnavailable, isStatementTimeout } from '../db/errors.js';

// REST errors in Google's JSON shape (AIP-193): every body carries a google.rpc.ErrorInfo, so clients
// switch on (domain, reason) instead of parsing messages.
export type RestStatus =
  | 'INVALID_ARGUMENT'
  | 'UNAUTHENTICATED'
  | 'PERMISSION_DENIED'
  | 'NOT_FOUND'
  | 'FAILED_PRECONDITION'
  | 'ABORTED'
  | 'RESOURCE_EXHAUSTED'
  | 'UNAVAILABLE'
  | 'DEADLINE_EXCEEDED'
  | 'INTERNAL';

export const ERROR_DOMAIN = 'fieldgate.dev';
export const ERROR_INFO_TYPE = 'type.googleapis.com/google.rpc.ErrorInfo';
export const BAD_REQUEST_TYPE = 'type.googleapis.com/google.rpc.BadRequest';

export interface FieldViolation {
  field: string;
  description: string;
}

export interface ErrorInfoDetail {
  '@type': typeof ERROR_INFO_TYPE;
  reason: string;
  domain: string;
  metadata: Record<string, string>;
}

export interface BadRequestDetail {
  '@type': typeof BAD_REQUEST_TYPE;
  fieldViolations: FieldViolation[];
}

export interface RestErrorBody {
  error: { code: number; status: RestStatus; message: string; details: (ErrorInfoDetail | BadRequestDetail)[] };
}

export interface RestErrorOptions {
  cause?: unknown;
  httpStatus?: number;
  headers?: Record<string, string>;
  /** `ErrorInfo.reason` (UPPER_SNAKE_CASE); the class's default when absent. */
  reason?: string;
  metadata?: Record<string, string>;
  fieldViolations?: FieldViolation[];
}

export abstract class RestError extends Error {
  abstract readonly status: RestStatus;
  protected abstract readonly defaultHttpStatus: number;
  protected abstract readonly defaultReason: string;
  private readonly httpStatusOverride: number | undefined;
  private readonly reasonOverride: string | undefined;
  readonly headers: Readonly<Record<string, string>>;
  readonly metadata: Readonly<Record<string, string>>;
  readonly fieldViolations: readonly FieldViolation[];

  constructor(message: string, options: RestErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.httpStatusOverride = options.httpStatus;
    this.reasonOverride = options.reason;
    this.headers = options.headers ?? {};
    this.metadata = options.metadata ?? {};
    this.fieldViolations = options.fieldViolations ?? [];
  }

  get httpStatus(): number {
    return this.httpStatusOverride ?? this.defaultHttpStatus;
  }

  get reason(): string {
    return this.reasonOverride ?? this.defaultReason;
  }

  toBody(): RestErrorBody {
    const details: (ErrorInfoDetail | BadRequestDetail)[] = [
      { '@type': ERROR_INFO_TYPE, reason: this.reason, domain: ERROR_DOMAIN, metadata: { ...this.metadata } },
    ];
    if (this.fieldViolations.length) details.push({ '@type': BAD_REQUEST_TYPE, fieldViolations: [...this.fieldViolations] });
    return { error: { code: this.httpStatus, status: this.status, message: this.message, details } };
  }
}

export class RestInvalidArgument extends RestError {
  readonly status = 'INVALID_ARGUMENT';
  protected readonly defaultHttpStatus = 400;
  protected readonly defaultReason: string = 'INVALID_ARGUMENT';
}

export class RestUnauthenticated extends RestError {
  readonly status = 'UNAUTHENTICATED';
  protected readonly defaultHttpStatus = 401;
  protected readonly defaultReason: string = 'INVALID_TOKEN';
}

export class RestPermissionDenied extends RestError {
  readonly status = 'PERMISSION_DENIED';
  protected readonly defaultHttpStatus = 403;
  protected readonly defaultReason: string = 'INSUFFICIENT_SCOPE';
}

export class RestNotFound extends RestError {
  readonly status = 'NOT_FOUND';
  protected readonly defaultHttpStatus = 404;
  protected readonly defaultReason: string = 'NOT_FOUND';
}

export class RestFailedPrecondition extends RestError {
  readonly status = 'FAILED_PRECONDITION';
  protected readonly defaultHttpStatus = 409;
  protected readonly defaultReason: string = 'FAILED_PRECONDITION';
}

/** A concurrency conflict the client resolves by re-reading and retrying (AIP-154 etag, a request in progress). */
export class RestAborted extends RestError {
  readonly status = 'ABORTED';
  protected readonly defaultHttpStatus = 409;
  protected readonly defaultReason: string = 'ABORTED';
}

/** The database is out of reach (down, restarting): retry after `Retry-After` seconds. */
export class RestUnavailable extends RestError {
  readonly status = 'UNAVAILABLE';
  protected readonly defaultHttpStatus = 503;
  protected readonly defaultReason: string = 'DATABASE_UNAVAILABLE';
  constructor(message = DATABASE_UNAVAILABLE, options: RestErrorOptions = {}) {
    super(message, { ...options, headers: { 'Retry-After': String(DATABASE_RETRY_AFTER_SECONDS), ...options.headers } });
  }
}

/** The database cancelled the request's statement at its statement timeout: retrying as it is will not help. */
export class RestDeadlineExceeded extends RestError {
  readonly status = 'DEADLINE_EXCEEDED';
  protected readonly defaultHttpStatus = 504;
  protected readonly defaultReason: string = 'STATEMENT_TIMEOUT';
}

export class RestInternal extends RestError {
  readonly status = 'INTERNAL';
  protected readonly defaultHttpStatus = 500;
  protected readonly defaultReason: string = 'INTERNAL';
}

/** A bearer refusal: 401/403 with the RFC 6750 challenge beside the Google error body. */
export function fromOAuthError(error: OAuthError): RestError {
  const headers = challengeHeaders(error);
  if (error instanceof InsufficientScope) {
    return new RestPermissionDenied(error.message, { cause: error, headers, metadata: { requiredScope: error.requiredScope } });
  }
  if (error instanceof InvalidToken) {
    return new RestUnauthenticated(error.message, { cause: error, headers, reason: error.missing ? 'MISSING_TOKEN' : 'INVALID_TOKEN' });
  }
  return error.status < 500
    ? new RestInvalidArgument(error.message, { cause: error, httpStatus: error.status, reason: error.code.toUpperCase() })
    : new RestInternal('internal error', { cause: error });
}

const LIMIT_REASONS = new Set(['MAX_COST', 'MAX_DEPTH', 'MAX_ALIASES', 'MAX_TOKENS', 'MAX_DIRECTIVES']);

type RestErrorClass = new (message: string, options?: RestErrorOptions) => RestError;

/** GraphQL `extensions.code` → REST error; codes not here are masked. */
const REST_ERROR_FOR_CODE: ReadonlyMap<string, RestErrorClass> = new Map<GqlErrorCode | 'BAD_USER_INPUT' | 'GRAPHQL_VALIDATION_FAILED' | 'GRAPHQL_PARSE_FAILED', RestErrorClass>([
  ['UNAUTHENTICATED', RestUnauthenticated],
  ['FORBIDDEN', RestPermissionDenied],
  ['NOT_FOUND', RestNotFound],
  ['FAILED_PRECONDITION', RestFailedPrecondition],
  ['ABORTED', RestAborted],
  ['INVALID_ARGUMENT', RestInvalidArgument],
  ['BAD_USER_INPUT', RestInvalidArgument],
  ['GRAPHQL_VALIDATION_FAILED', RestInvalidArgument],
  ['GRAPHQL_PARSE_FAILED', RestInvalidArgument],
  ['UNAVAILABLE', RestUnavailable],
  ['DEADLINE_EXCEEDED', RestDeadlineExceeded],
]);

const HTTP_STATUS_FOR_REASON: Record<string, number> = {
  // draft-ietf-httpapi-idempotency-key-header §2.7: a key reused with another payload is 422.
  IDEMPOTENCY_KEY_REUSED: 422,
};

const NOT_METADATA = new Set(['code', 'reason', 'http', 'field']);

function metadataOf(extensions: Record<string, unknown>): Record<string, string> {
  const metadata: Record<string, string> = {};
  for (const [name, value] of Object.entries(extensions)) {
    if (NOT_METADATA.has(name)) continue;
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') metadata[name] = String(value);
  }
  return metadata;
}

/**
 * Anything without a known client-error code is masked as INTERNAL. `dpop`: the request's token came under the DPoP
 * scheme, so a scope refusal's challenge is a DPoP one (RFC 9449 §7.1), as GraphQL's own answer would be.
 */
export function fromGraphQLErrors(errors: readonly GraphQLFormattedError[], { dpop = false } = {}): RestError {
  const error = errors[0];
  if (!error) return new RestInternal('internal error');
  const extensions = (error.extensions ?? {}) as Record<string, unknown>;
  const code = typeof extensions.code === 'string' ? extensions.code : undefined;
  const message = error.message;
  const cause = error;
  // Bearer refusals keep their RFC 6750 challenge.
  if (code === 'UNAUTHENTICATED') return fromOAuthError(new InvalidToken(message, { cause }));
  if (code === 'FORBIDDEN' && typeof extensions.requiredScope === 'string' && extensions.requiredScope) {
    return fromOAuthError(new InsufficientScope(extensions.requiredScope, { cause, dpop }));
  }
  const reason = typeof extensions.reason === 'string' ? extensions.reason : undefined;
  if (code === 'INVALID_ARGUMENT' && reason && LIMIT_REASONS.has(reason)) {
    return new RestInvalidArgument('the response would be too large: ask for fewer fields or a smaller limit', {
      cause,
      reason: 'RESPONSE_TOO_LARGE',
      metadata: { limit: reason },
    });
  }
    // AIP-154: a stale etag is ABORTED (409); If-Match turns it into 412 (see orders.ts).
  const RestClass = reason === 'ETAG_MISMATCH' ? RestAborted : code === undefined ? undefined : REST_ERROR_FOR_CODE.get(code);
  const field = typeof extensions.field === 'string' ? extensions.field : undefined;
  const details = {
    cause,
    ...(reason ? { reason } : {}),
    metadata: metadataOf(extensions),
    ...(field ? { fieldViolations: [{ field, description: message }] } : {}),
  };
  if (RestClass) return new RestClass(message, { ...details, ...(reason && Object.hasOwn(HTTP_STATUS_FOR_REASON, reason) ? { httpStatus: HTTP_STATUS_FOR_REASON[reason] } : {}) });
  const http = extensions.http as { status?: unknown } | undefined;
  if (typeof http?.status === 'number' && http.status >= 400 && http.status < 500) {
    return new RestInvalidArgument(message, { ...details, httpStatus: http.status });
  }
  return new RestInternal('internal error', { cause });
}

const BODY_PARSER_ERRORS: Record<string, [message: string, reason: string, status?: number]> = {
  'entity.too.large': ['the request body is too large', 'BODY_TOO_LARGE'],
  // Thrown by http.ts' verify step (these two), which body-parser answers with 403 whatever the error says.
  'entity.charset.malformed': ['the request body is not valid UTF-8', 'INVALID_UTF8', 400],
  'entity.missing': ['a JSON object request body is required', 'MISSING_BODY', 400],
  'entity.parse.failed': ['the request body is not valid JSON', 'INVALID_JSON'],
  'encoding.unsupported': ['the request body encoding is not supported', 'UNSUPPORTED_ENCODING'],
  'charset.unsupported': ['the request body charset is not supported: send UTF-8', 'UNSUPPORTED_ENCODING'],
};

export function toRestError(error: unknown): RestError {
  if (error instanceof RestError) return error;
  if (isDatabaseUnavailable(error)) return new RestUnavailable(undefined, { cause: error });
  if (isStatementTimeout(error)) return new RestDeadlineExceeded(DEADLINE_EXCEEDED_MESSAGE, { cause: error });
  const status = (error as { status?: unknown; statusCode?: unknown })?.status ?? (error as { statusCode?: unknown })?.statusCode;
  // A path parameter that does not percent-decode (the route table's, as Express's, URIError).
  if (error instanceof URIError && status === 400) return invalidUrlEncoding('the URL path is not valid percent-encoded UTF-8', error);
  if (typeof status === 'number' && status >= 400 && status < 500) {
    const type = (error as { type?: string }).type;
    const [message, reason, ownStatus] = (type !== undefined && Object.hasOwn(BODY_PARSER_ERRORS, type) ? BODY_PARSER_ERRORS[type] : undefined) ?? [
      'the request is not valid',
      'INVALID_REQUEST',
    ];
    return new RestInvalidArgument(message, { httpStatus: ownStatus ?? status, cause: error, reason });
  }
  return new RestInternal('internal error', { cause: error });
}

/** A client's text as an error message quotes it: at most 64 characters, then an ellipsis. */
export function shownInMessage(text: string): string {
  return text.length > 64 ? `${text.slice(0, 64)}…` : text;
}

/** A URL whose percent-encoding does not decode to UTF-8 (`%E0%A4%A`, `%ZZ`); `parameter` names a query parameter. */
export function invalidUrlEncoding(message: string, cause?: unknown, parameter?: string): RestInvalidArgument {
  return new RestInvalidArgument(message, {
    ...(cause !== undefined && { cause }),
    reason: 'INVALID_URL_ENCODING',
    ...(parameter !== undefined && { metadata: { parameter }, fieldViolations: [{ field: parameter, description: message }] }),
  });
}

/** Headers a route sets for the representation it answers with, never for an error. */
const REPRESENTATION_HEADERS = ['ETag', 'Link', 'Next-Page-Token', 'Location', 'Idempotent-Replayed'];

/** The one error handler for REST and for anything no face answered; 5xx are logged and masked. */
export function restErrorHandler(logger: Logger, logMessage: string, options: { resourceMetadataUrl?: string } = {}): ErrorRequestHandler {
  return function restErrorResponse(error, req, res, _next) {
    const restError = toRestError(error);
    if (restError.httpStatus >= 500) logger.error({ err: error, reqId: req.id }, logMessage);
    if (res.headersSent) {
      res.end();
      return;
    }
    // An error is not the representation the route was about to send: its validator, paging and location go with it
    // (a list refused by If-Match must not name a next page).
    for (const name of REPRESENTATION_HEADERS) res.removeHeader(name);
    const headers = { ...restError.headers };
    // RFC 9728 §5.1: a bearer challenge names the resource's metadata.
    const challenge = headers['WWW-Authenticate'];
    if (challenge && options.resourceMetadataUrl) headers['WWW-Authenticate'] = withResourceMetadata(challenge, options.resourceMetadataUrl);
    res.status(restError.httpStatus).set(headers).json(restError.toBody());
  };
}
