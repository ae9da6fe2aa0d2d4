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
}

export abstract class ApiError extends Error {
  abstract readonly status: ApiStatus;
  protected abstract readonly defaultHttpStatus: number;
  private readonly httpStatusOverride: number | undefined;

  constructor(message: string, options: ApiErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.httpStatusOverride = options.httpStatus;
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

export class Internal extends ApiError {
  readonly status = 'INTERNAL';
  protected readonly defaultHttpStatus = 500;
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
