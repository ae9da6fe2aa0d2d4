/**
 * Each class fixes its RFC error code and HTTP status; one serializer per surface turns it into the response.
 * `expose` is false for anything that is not a client error: those are logged and shown as a bare `server_error`.
 */
import { DATABASE_RETRY_AFTER_SECONDS } from '../db/errors.js';

export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'unsupported_response_type'
  | 'invalid_scope'
  | 'access_denied'
  | 'server_error'
  | 'temporarily_unavailable'
  | 'invalid_token'
  | 'insufficient_scope'
  | 'invalid_dpop_proof'
  | 'use_dpop_nonce'

  // OpenID Connect Core §3.1.2.6
  | 'login_required'
  | 'consent_required'
  | 'interaction_required'
  | 'request_not_supported'
  | 'request_uri_not_supported'
  | 'registration_not_supported'
  // RFC 8707, RFC 7591
  | 'invalid_target'
  | 'invalid_redirect_uri'
  | 'invalid_client_metadata'

  // RFC 8628 §3.5: the device access token response
  | 'authorization_pending'
  | 'slow_down'
  | 'expired_token';

export interface OAuthErrorOptions {
  cause?: unknown;
}

/** Characters RFC 6749 §4.1.2.1 and §5.2 allow in error_description: %x20-21 / %x23-5B / %x5D-7E. */
const NOT_IN_DESCRIPTION_CHARSET = /[^\x20\x21\x23-\x5B\x5D-\x7E]/g;

/** The backstop that keeps a quote, backslash, control or non-ASCII character from going out in a description. */
export function safeDescription(text: string): string {
  return text.replace(NOT_IN_DESCRIPTION_CHARSET, '?');
}

export abstract class OAuthError extends Error {
  abstract readonly code: OAuthErrorCode;
  abstract readonly status: number;
  get expose(): boolean {
    return this.status < 500;
  }
  constructor(description: string, options: OAuthErrorOptions = {}) {
    super(description, options.cause === undefined ? undefined : { cause: options.cause });
  }
  get description(): string {
    return safeDescription(this.message);
  }
  toJSON(): { error: OAuthErrorCode; error_description: string } {
    return { error: this.code, error_description: this.description };
  }
}

export class InvalidRequest extends OAuthError {
  readonly code = 'invalid_request';
  readonly status = 400;
}

export interface InvalidClientOptions extends OAuthErrorOptions {
  /** The client tried the Authorization header: answer 401 with `WWW-Authenticate: Basic`. */
  viaAuthorizationHeader?: boolean;
}

/** 413 or 405, but the code stays `invalid_request`, so strict clients still recognize it. */
export class InvalidHttpRequest extends OAuthError {
  readonly code = 'invalid_request';
  readonly status: number;
  constructor(description: string, options: OAuthErrorOptions & { status?: number } = {}) {
    super(description, options);
    this.status = options.status ?? 400;
  }
}

export class InvalidClient extends OAuthError {
  readonly code = 'invalid_client';
  readonly status: number;
  readonly viaAuthorizationHeader: boolean;
  constructor(description: string, options: InvalidClientOptions = {}) {
    super(description, options);
    this.viaAuthorizationHeader = options.viaAuthorizationHeader ?? false;
    this.status = this.viaAuthorizationHeader ? 401 : 400;
  }
}

export class InvalidGrant extends OAuthError {
  readonly code = 'invalid_grant';
  readonly status = 400;
}

export class UnauthorizedClient extends OAuthError {
  readonly code = 'unauthorized_client';
  readonly status = 400;
}

export class UnsupportedGrantType extends OAuthError {
  readonly code = 'unsupported_grant_type';
  readonly status = 400;
}

export class UnsupportedResponseType extends OAuthError {
  readonly code = 'unsupported_response_type';
  readonly status = 400;
}

export class InvalidScope extends OAuthError {
  readonly code = 'invalid_scope';
  readonly status = 400;
}

export class AccessDenied extends OAuthError {
  readonly code = 'access_denied';
  readonly status = 403;
}

export class ServerError extends OAuthError {
  readonly code = 'server_error';
  readonly status = 500;
}

/** RFC 9449 §4.3: the DPoP proof is missing where required, malformed, stale, replayed or for another request. */
export class InvalidDpopProof extends OAuthError {
  readonly code = 'invalid_dpop_proof';
  readonly status = 400;
}

/** RFC 9449 §8: the proof must carry the server's current nonce, sent in the `DPoP-Nonce` header. */
export class UseDpopNonce extends OAuthError {
  readonly code = 'use_dpop_nonce';
  readonly status = 400;
  constructor(
    description: string,
    readonly nonce: string,
    options: OAuthErrorOptions = {},
  ) {
    super(description, options);
  }
}

export interface DpopChallenge {
  error: 'invalid_token' | 'invalid_dpop_proof' | 'use_dpop_nonce';
  nonce?: string;
}

/** RFC 6750 §3.1: the access token is missing, expired, revoked, malformed or not ours. */
export class InvalidToken extends OAuthError {
  readonly code = 'invalid_token';
  readonly status = 401;
  /** No credentials were sent at all: RFC 6750 says the challenge then carries no error code. */
  readonly missing: boolean;
  readonly dpop: DpopChallenge | undefined;
  constructor(description: string, options: OAuthErrorOptions & { missing?: boolean; dpop?: DpopChallenge } = {}) {
    super(description, options);
    this.missing = options.missing ?? false;
    this.dpop = options.dpop;
  }
}

export class InsufficientScope extends OAuthError {
  readonly code = 'insufficient_scope';
  readonly status = 403;
  /** The token was sent under the DPoP scheme, so the challenge is a DPoP one (RFC 9449 §7.1). */
  readonly dpop: boolean;
  constructor(
    readonly requiredScope: string,
    options: OAuthErrorOptions & { dpop?: boolean } = {},
  ) {
    super(`this request needs the scope ${requiredScope}`, options);
    this.dpop = options.dpop ?? false;
  }
}

export class LoginRequired extends OAuthError {
  readonly code = 'login_required';
  readonly status = 400;
}

export class ConsentRequired extends OAuthError {
  readonly code = 'consent_required';
  readonly status = 400;
}

export class InteractionRequired extends OAuthError {
  readonly code = 'interaction_required';
  readonly status = 400;
}

export class RequestNotSupported extends OAuthError {
  readonly code = 'request_not_supported';
  readonly status = 400;
}

export class RegistrationNotSupported extends OAuthError {
  readonly code = 'registration_not_supported';
  readonly status = 400;
}

export class RequestUriNotSupported extends OAuthError {
  readonly code = 'request_uri_not_supported';
  readonly status = 400;
}

export class InvalidTarget extends OAuthError {
  readonly code = 'invalid_target';
  readonly status = 400;
}

export class InvalidRedirectUri extends OAuthError {
  readonly code = 'invalid_redirect_uri';
  readonly status = 400;
}

export class InvalidClientMetadata extends OAuthError {
  readonly code = 'invalid_client_metadata';
  readonly status: number;
  constructor(description: string, options: OAuthErrorOptions & { status?: number } = {}) {
    super(description, options);
    this.status = options.status ?? 400;
  }
}

/** Too many requests from one client IP (a per-IP limit such as the registration throttle): 429 with Retry-After. */
export class RateLimited extends OAuthError {
  readonly code = 'temporarily_unavailable';
  readonly status: number = 429;
  constructor(
    description: string,
    readonly retryAfterSeconds: number,
    options: OAuthErrorOptions = {},
  ) {
    super(description, options);
  }
}

/** The server holds back work it has too much of at once (a bounded pool of outbound fetches): 503 with Retry-After. */
export class ServiceBusy extends RateLimited {
  override readonly status = 503;
}

/** The database is out of reach (down, restarting): the request may succeed shortly. 503 with Retry-After. */
export class DatabaseUnavailable extends OAuthError {
  readonly code = 'temporarily_unavailable';
  readonly status = 503;
  readonly retryAfterSeconds = DATABASE_RETRY_AFTER_SECONDS;
  // Said to the client as it is: nothing of the cause goes out.
  override get expose(): boolean {
    return true;
  }
}

export class AuthorizationPending extends OAuthError {
  readonly code = 'authorization_pending';
  readonly status = 400;
}

export class SlowDown extends OAuthError {
  readonly code = 'slow_down';
  readonly status = 400;
}

export class ExpiredToken extends OAuthError {
  readonly code = 'expired_token';
  readonly status = 400;
}

/** `access_denied` at the token endpoint is 400, as every §5.2 error; the authorization endpoint's is a 403. */
export class DeviceAccessDenied extends OAuthError {
  readonly code = 'access_denied';
  readonly status = 400;
}
