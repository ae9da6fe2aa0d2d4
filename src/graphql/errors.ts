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
import { GraphQLError } from 'graphql';
import { InsufficientScope, type InvalidToken } from '../oauth/errors.js';
import { challengeHeaders, wwwAuthenticate } from '../tokens/bearer.js';

export type GqlErrorCode =
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'INVALID_ARGUMENT'
  | 'FAILED_PRECONDITION'
  | 'ABORTED'
  | 'INTERNAL_SERVER_ERROR'
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
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'BODY_TOO_LARGE'
  | 'BODY_UNREADABLE'
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

  /** `scopes` are those the token lacks; the challenge names them all (RFC 6750 §3: space-delimited). */
  constructor(scopes: readonly string[], options: Omit<GqlErrorOptions, 'http'> = {}) {
    const requiredScope = scopes.join(' ');
    const refusal = new InsufficientScope(requiredScope);
    super(refusal.message, {
      ...options,
      extensions: { ...options.extensions, requiredScope },
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

/** A request refused before execution: bad syntax, failed validation, a limit exceeded. HTTP 400. */
export function rejectRequest(
  reason: RequestRejection,
  message: string,
  options: { locatedAt?: GraphQLError; extensions?: Record<string, unknown> } = {},
): GqlInvalidArgument {
  return new GqlInvalidArgument(message, {
    ...(options.locatedAt ? { locatedAt: options.locatedAt } : {}),
    extensions: { reason, ...options.extensions },
    http: { status: 400 },
  });
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
  if (error instanceof GqlError || original == null || original instanceof GqlError) return error;
  if (isArgumentValueError(original)) {
    return new GraphQLError(original.message, {
      nodes: error.nodes,
      path: error.path,
      extensions: { code: 'INVALID_ARGUMENT', reason: 'BAD_USER_INPUT' },
    });
  }
  onMasked(original);
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
