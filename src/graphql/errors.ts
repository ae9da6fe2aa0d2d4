/**
 * The errors the GraphQL API shows its clients. Each class fixes its `extensions.code`; errors
 * that fail a whole request also carry `extensions.http` (status and headers), which
 * graphql-yoga turns into the HTTP status line and headers of /graphql and the REST layer
 * reads from `execute()` results. Anything else that escapes a resolver is masked by
 * `maskError` as INTERNAL_SERVER_ERROR, so no stack trace or SQL reaches a client.
 *
 * @example
 *   throw new GqlNotFound(`no order ${id}`);
 *   throw new GqlFailedPrecondition('cannot move an order from delivered to paid', {
 *     extensions: { reason: 'ILLEGAL_STATUS_MOVE', from: 'DELIVERED', to: 'PAID' },
 *   });
 */
import { GraphQLError, type ExecutionResult, type GraphQLFormattedError } from 'graphql';
import { InsufficientScope, type InvalidToken } from '../oauth/errors.js';
import { challengeHeaders, wwwAuthenticate } from '../tokens/bearer.js';
import { DATABASE_RETRY_AFTER_SECONDS, DEADLINE_EXCEEDED_MESSAGE, isDatabaseUnavailable, isStatementTimeout } from '../db/errors.js';
import type { Logger } from '../logger.js';

export type GqlErrorCode =
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'INVALID_ARGUMENT'
  | 'FAILED_PRECONDITION'
  | 'ABORTED'
  | 'INTERNAL_SERVER_ERROR'
  // The database is out of reach: the same request may succeed shortly.
  | 'UNAVAILABLE'
  // A statement ran past the database's statement timeout: the same request will again (narrow the filter).
  | 'DEADLINE_EXCEEDED'
  // Persisted operations (src/graphql/persisted-operations.ts), in the codes Apollo clients know
  | 'PERSISTED_QUERY_NOT_FOUND'
  | 'PERSISTED_QUERY_NOT_IN_LIST'
  | 'PERSISTED_QUERY_ONLY';

/** Why an INVALID_ARGUMENT request was refused before execution (`extensions.reason`). */
export type RequestRejection =
  | 'GRAPHQL_PARSE_FAILED'
  | 'GRAPHQL_VALIDATION_FAILED'
  | 'BAD_USER_INPUT'
  | 'OPERATION_RESOLUTION_FAILURE'
  | 'MAX_TOKENS'
  | 'MAX_DEPTH'
  | 'MAX_ALIASES'
  | 'MAX_DIRECTIVES'
  | 'MAX_COST'
  | 'METHOD_NOT_ALLOWED'
  | 'NOT_ACCEPTABLE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'BODY_TOO_LARGE'
  | 'URL_TOO_LONG'
  | 'BODY_UNREADABLE'
  | 'INVALID_JSON'
  | 'DUPLICATE_JSON_MEMBER'
  | 'BODY_NOT_AN_OBJECT'
  | 'BATCHING_NOT_SUPPORTED'
  | 'INVALID_PARAMETER'
  | 'PERSISTED_QUERY_INVALID'
  | 'PERSISTED_QUERY_VERSION_NOT_SUPPORTED'
  | 'PERSISTED_QUERY_HASH_MISMATCH'
  | 'PERSISTED_QUERY_TOO_LARGE';

export interface HttpExtension {
  status: number;
  headers?: Record<string, string>;
}

export interface GqlErrorOptions {
  cause?: unknown;
  /** Extra `extensions` members (reason, field, from/to…). */
  extensions?: Record<string, unknown>;
  /** Set when the error fails the whole request rather than one field. */
  http?: HttpExtension;
  /** A GraphQL error (syntax, validation) whose locations in the document this one keeps. */
  locatedAt?: GraphQLError;
}

/** Base of every error this API reports on purpose; anything that is not one is masked. */
export abstract class GqlError extends GraphQLError {
  /** Each subclass fixes its code here, so it is known before `super()` builds the extensions. */
  static readonly code: GqlErrorCode;

  constructor(message: string, options: GqlErrorOptions = {}) {
    const code = (new.target as unknown as { code: GqlErrorCode }).code;
    const at = options.locatedAt;
    super(message, {
      extensions: { code, ...options.extensions, ...(options.http ? { http: options.http } : {}) },
      ...(options.cause instanceof Error ? { originalError: options.cause } : {}),
      ...(at ? { nodes: at.nodes, source: at.source, positions: at.positions } : {}),
    });
  }

  get code(): GqlErrorCode {
    return (this.constructor as unknown as { code: GqlErrorCode }).code;
  }
}

export class GqlUnauthenticated extends GqlError {
  static override readonly code = 'UNAUTHENTICATED';

  /** From the bearer check's refusal, carrying the RFC 6750 challenge for the 401. */
  static fromInvalidToken(error: InvalidToken): GqlUnauthenticated {
    return new GqlUnauthenticated(error.message, {
      cause: error,
      http: { status: 401, headers: challengeHeaders(error) },
    });
  }
}

export class GqlForbidden extends GqlError {
  static override readonly code = 'FORBIDDEN';
  readonly requiredScope: string;

  /**
   * `scopes` are those the token lacks; the challenge names them all (RFC 6750 §3: space-delimited), under the scheme
   * the token came with (`dpop`).
   */
  constructor(scopes: readonly string[], options: Omit<GqlErrorOptions, 'http'> & { dpop?: boolean } = {}) {
    const requiredScope = scopes.join(' ');
    const { dpop, ...rest } = options;
    const refusal = new InsufficientScope(requiredScope, { dpop: dpop ?? false });
    super(refusal.message, {
      ...rest,
      extensions: { ...rest.extensions, requiredScope },
      http: { status: 403, headers: { 'WWW-Authenticate': wwwAuthenticate(refusal) } },
    });
    this.requiredScope = requiredScope;
  }
}

/**
 * A token with no user (client_credentials) asking for what belongs to a user: FORBIDDEN
 * whatever its scopes, since no scope can give it a user's orders. HTTP 403.
 */
export class GqlUserRequired extends GqlError {
  static override readonly code = 'FORBIDDEN';

  constructor(what: string) {
    super(`${what} belong to a user, and this access token was issued to a client acting for itself (client_credentials), with no user`, {
      extensions: { reason: 'USER_REQUIRED' },
      http: { status: 403 },
    });
  }
}

export class GqlNotFound extends GqlError {
  static override readonly code = 'NOT_FOUND';
}

export class GqlInvalidArgument extends GqlError {
  static override readonly code = 'INVALID_ARGUMENT';
}

export class GqlFailedPrecondition extends GqlError {
  static override readonly code = 'FAILED_PRECONDITION';
}

/** A concurrency conflict: retry later (an idempotency key whose first request is still running). */
export class GqlAborted extends GqlError {
  static override readonly code = 'ABORTED';
}

export class GqlInternalServerError extends GqlError {
  static override readonly code = 'INTERNAL_SERVER_ERROR';
}

export const UNAVAILABLE_MESSAGE = 'The service is unavailable for a moment; try again shortly.';

/** The database is out of reach. Failing the whole request (the token check), it is a 503 with Retry-After. */
export class GqlUnavailable extends GqlError {
  static override readonly code = 'UNAVAILABLE';

  static forRequest(cause: unknown): GqlUnavailable {
    return new GqlUnavailable(UNAVAILABLE_MESSAGE, { cause, http: { status: 503, headers: { 'Retry-After': String(DATABASE_RETRY_AFTER_SECONDS) } } });
  }

  /** The answer to a request whose bearer check could not reach the database, logged once. */
  static resultFor(cause: unknown, logger: Logger): ExecutionResult {
    logger.warn({ err: cause }, 'graphql request failed: the database is unavailable');
    return { errors: [GqlUnavailable.forRequest(cause)] };
  }
}

/**
 * APQ: the hash is not (or no longer) in this instance's store. Apollo clients read the code (or
 * the message, which is the protocol's literal) and resend with the full query. HTTP 404.
 */
export class GqlPersistedQueryNotFound extends GqlError {
  static override readonly code = 'PERSISTED_QUERY_NOT_FOUND';

  constructor() {
    super('PersistedQueryNotFound', { http: { status: 404 } });
  }
}

/** Trusted-documents mode: the hash or document id is not in the manifest. HTTP 404. */
export class GqlPersistedQueryNotInList extends GqlError {
  static override readonly code = 'PERSISTED_QUERY_NOT_IN_LIST';

  constructor(id: string) {
    super(`no trusted document has the id ${JSON.stringify(id)}`, { http: { status: 404 } });
  }
}

/** Trusted-documents mode: a document that is not in the manifest, sent as text. HTTP 400. */
export class GqlPersistedQueryOnly extends GqlError {
  static override readonly code = 'PERSISTED_QUERY_ONLY';

  constructor() {
    super('this server only runs trusted documents: send the id of a document from its manifest (extensions.persistedQuery.sha256Hash or documentId) or its exact text', {
      http: { status: 400 },
    });
  }
}

/**
 * A request refused before execution: bad syntax, failed validation, a limit exceeded (HTTP 400),
 * or an HTTP-level refusal (`http`: 405 with `Allow`, 406, 413, 415).
 */
export function rejectRequest(
  reason: RequestRejection,
  message: string,
  options: { locatedAt?: GraphQLError; extensions?: Record<string, unknown>; http?: HttpExtension } = {},
): GqlInvalidArgument {
  return new GqlInvalidArgument(message, {
    ...(options.locatedAt ? { locatedAt: options.locatedAt } : {}),
    extensions: { reason, ...options.extensions },
    http: options.http ?? { status: 400 },
  });
}

/**
 * graphql-yoga's request checks (codes BAD_REQUEST, REQUEST_ENTITY_TOO_LARGE), told apart by status
 * and words (yoga gives them no other mark). Words yoga changes fall back to INVALID_PARAMETER,
 * still INVALID_ARGUMENT with yoga's status; test/graphql/errors.test.ts holds each one.
 */
function yogaRejection(status: number, message: string): { reason: RequestRejection; field?: string } {
  if (status === 405) return { reason: 'METHOD_NOT_ALLOWED' };
  if (status === 413) return { reason: 'BODY_TOO_LARGE' };
  if (message === 'POST body sent invalid JSON.') return { reason: 'INVALID_JSON' };
  if (message.startsWith('Batching is not supported')) return { reason: 'BATCHING_NOT_SUPPORTED' };
  if (message.startsWith('POST body is expected to be object') || message.startsWith('Expected params to be an object')) return { reason: 'BODY_NOT_AN_OBJECT' };
  if (message.startsWith('Content-Length')) return { reason: 'BODY_UNREADABLE' };
  if (message === 'Must provide query string.') return { reason: 'INVALID_PARAMETER', field: 'query' };
  const named = /^Expected "(query|variables|operationName|extensions)" param/.exec(message) ?? /^Unexpected parameter "([^"]{1,64})"/.exec(message);
  return named ? { reason: 'INVALID_PARAMETER', field: named[1]! } : { reason: 'INVALID_PARAMETER' };
}

const YOGA_REQUEST_CODES = new Set(['BAD_REQUEST', 'REQUEST_ENTITY_TOO_LARGE']);

/** What /graphql serves (RFC 9110 §10.2.1): yoga's GET and POST, HEAD as GET (http.ts' headAsGet), and OPTIONS. */
export const GRAPHQL_METHODS = 'GET, HEAD, POST, OPTIONS';

/**
 * An error of a result graphql-yoga is about to send, in this API's terms. Yoga's own refusals
 * of the HTTP request (codes BAD_REQUEST, REQUEST_ENTITY_TOO_LARGE) become INVALID_ARGUMENT with
 * a `reason` (and `field` naming a parameter), as this API's own refusals are, keeping their
 * status but not yoga's `spec` mark (which would turn it into 200 for `Accept: application/json`);
 * `Allow` goes only with a 405. An unexpected error yoga has masked (and logged) is
 * INTERNAL_SERVER_ERROR with its 500. Anything else — ours, a field's — is left as it is.
 */
export function asRequestError(error: GraphQLError): GraphQLError {
  if (error instanceof GqlError) return error;
  const code = error.extensions?.code;
  if (typeof code !== 'string') return error;
  if (YOGA_REQUEST_CODES.has(code)) {
    const status = (error.extensions.http as { status?: unknown } | undefined)?.status;
    const httpStatus = typeof status === 'number' && status >= 400 && status < 500 ? status : 400;
    const { reason, field } = yogaRejection(httpStatus, error.message);
    return rejectRequest(reason, error.message, {
      ...(field && { extensions: { field } }),
      http: httpStatus === 405 ? { status: 405, headers: { Allow: GRAPHQL_METHODS } } : { status: httpStatus },
    });
  }
  if (code === 'INTERNAL_SERVER_ERROR' && error.extensions.unexpected === true && error.path === undefined) {
    return new GqlInternalServerError(error.message, { http: { status: 500 } });
  }
  return error;
}

/**
 * An error as the body shows it: GraphQL's JSON form, with `extensions.http` reduced to its
 * `status` (headers go in the response head only).
 */
export function formatError(error: GraphQLError): GraphQLFormattedError {
  const json = error.toJSON();
  const { http, ...extensions } = (json.extensions ?? {}) as { http?: { status?: unknown } };
  if (typeof http?.status === 'number') return { ...json, extensions: { ...extensions, http: { status: http.status } } };
  const { extensions: _all, ...rest } = json;
  return Object.keys(extensions).length > 0 ? { ...rest, extensions } : rest;
}

/**
 * An error at a field's path without `extensions.http`: the operation ran, and its other fields
 * keep their data, so the request's status stays 200 (GraphQL over HTTP: a response whose `data`
 * is not null is 2xx). A revoked token found mid-mutation is still UNAUTHENTICATED at its path.
 */
export function asFieldError(error: GraphQLError): GraphQLError {
  const { http, ...extensions } = error.extensions ?? {};
  if (error.path === undefined || http === undefined) return error;
  return new GraphQLError(error.message, { nodes: error.nodes, path: error.path, originalError: error.originalError, extensions });
}

/** The status a request-level error answers with, if it is one (`extensions.http.status`). */
export function httpStatusOf(error: GraphQLError): number | undefined {
  const status = (error.extensions?.http as { status?: unknown } | undefined)?.status;
  return typeof status === 'number' ? status : undefined;
}

/**
 * The error as a client may see it: our own errors and graphql-js' own (a null in a non-null
 * field…) as they are, an argument value graphql-js refuses at run time as INVALID_ARGUMENT;
 * anything a resolver threw that is not a GqlError — a driver error, a
 * bug, a plugin's internal error — replaced by INTERNAL_SERVER_ERROR at the same path, so no
 * stack or SQL leaves the server. `onMasked` receives the original to log it.
 */
export function maskError(error: GraphQLError, onMasked: (original: unknown) => void): GraphQLError {
  const original = error.originalError;
  if (error instanceof GqlError || original instanceof GqlError) return error;
  // Refused while collecting the root fields (`@include(if: $nullable)`), graphql-js' error is not wrapped.
  const refused = original ?? error;
  if (isArgumentValueError(refused)) {
    return new GraphQLError(refused.message, {
      nodes: error.nodes,
      path: error.path,
      extensions: { code: 'INVALID_ARGUMENT', reason: 'BAD_USER_INPUT' },
    });
  }
  if (original == null) return error;
  onMasked(original);
  if (isStatementTimeout(original)) {
    return new GraphQLError(DEADLINE_EXCEEDED_MESSAGE, { nodes: error.nodes, path: error.path, extensions: { code: 'DEADLINE_EXCEEDED' } });
  }
  if (isDatabaseUnavailable(original)) return new GraphQLError(UNAVAILABLE_MESSAGE, { nodes: error.nodes, path: error.path, extensions: { code: 'UNAVAILABLE' } });
  return new GraphQLError('Unexpected error.', {
    nodes: error.nodes,
    path: error.path,
    extensions: { code: 'INTERNAL_SERVER_ERROR' },
  });
}

/**
 * graphql-js' own refusal of an argument's value at execution: a null sent for a nullable
 * variable with a default that stands in a non-null argument (validation allows it). Its words
 * name only the argument, its type and the client's own variable or literal.
 */
const ARGUMENT_VALUE_ERROR = /^Argument "[_A-Za-z][_0-9A-Za-z]*" (of non-null type|of required type|has invalid value)/;

function isArgumentValueError(error: Error): error is GraphQLError {
  return error instanceof GraphQLError && error.originalError == null && ARGUMENT_VALUE_ERROR.test(error.message);
}
