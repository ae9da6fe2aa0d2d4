/**
 * Persisted operations on /graphql: which document a request names, in one of two modes.
 *
 * - Automatic persisted queries (Apollo's APQ wire format, the default). A request may name its
 *   document by `extensions.persistedQuery: { version: 1, sha256Hash }` (or `documentId`,
 *   `sha256:<hex>` or bare hex). Hash alone: the document registered under it, or
 *   PERSISTED_QUERY_NOT_FOUND (404), on which Apollo clients resend with the query. Hash and
 *   query: the query's sha256 must be the hash (else INVALID_ARGUMENT,
 *   PERSISTED_QUERY_HASH_MISMATCH); it is registered and run. The store is a bounded in-memory
 *   LRU per instance: a miss (another instance, an eviction, a restart) costs the client one
 *   retry, so nothing is shared or persisted.
 * - Trusted documents (GRAPHQL_TRUSTED_DOCUMENTS). Only the manifest's documents run, named by
 *   hash or sent as their exact text; nothing is registered. An unknown id is
 *   PERSISTED_QUERY_NOT_IN_LIST (404), any other text PERSISTED_QUERY_ONLY (400).
 *
 * Only HTTP requests go through here: the REST layer builds its documents itself and hands
 * them to the Executor directly, so it works the same in either mode.
 */
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { parse, validate, type GraphQLSchema } from 'graphql';
import { ConfigError } from '../config.js';
import { POLICY } from '../policy.js';
import { GqlPersistedQueryNotFound, GqlPersistedQueryNotInList, GqlPersistedQueryOnly, rejectRequest } from './errors.js';

/** What a request brings: yoga's parameters plus the `documentId` of GraphQL-over-HTTP persisted documents. */
export interface PersistedRequest {
  query?: string | undefined;
  extensions?: Record<string, unknown> | undefined;
  documentId?: unknown;
}

/** Characters of document text the APQ store holds at most, whatever the number of documents. */
const APQ_MAX_TOTAL_LENGTH = 16 * 1024 * 1024;

const SHA256_HEX = /^[0-9a-fA-F]{64}$/;

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** True when the request names a document by id, so its `query` may be absent. */
export function namesPersistedDocument(request: PersistedRequest): boolean {
  return request.documentId != null || request.extensions?.persistedQuery != null;
}

/** The lowercase sha256 hex the request names, if any; a malformed id is refused (400). */
function requestedHash(request: PersistedRequest): string | undefined {
  let hash: string | undefined;
  const persistedQuery = request.extensions?.persistedQuery;
  if (persistedQuery != null) {
    if (typeof persistedQuery !== 'object' || Array.isArray(persistedQuery)) {
      throw rejectRequest('PERSISTED_QUERY_INVALID', 'extensions.persistedQuery must be an object { version: 1, sha256Hash }');
    }
    const { version, sha256Hash } = persistedQuery as { version?: unknown; sha256Hash?: unknown };
    if (version !== 1) {
      throw rejectRequest('PERSISTED_QUERY_VERSION_NOT_SUPPORTED', `extensions.persistedQuery.version must be 1, got ${JSON.stringify(version) ?? 'none'}`);
    }
    if (typeof sha256Hash !== 'string' || !SHA256_HEX.test(sha256Hash)) {
      throw rejectRequest('PERSISTED_QUERY_INVALID', 'extensions.persistedQuery.sha256Hash must be the 64 hex digits of a sha256');
    }
    hash = sha256Hash.toLowerCase();
  }
  if (request.documentId != null) {
    const raw = request.documentId;
    const hex = typeof raw === 'string' ? raw.replace(/^sha256:/, '') : '';
    if (!SHA256_HEX.test(hex)) throw rejectRequest('PERSISTED_QUERY_INVALID', 'documentId must be sha256:<64 hex digits> (or the 64 hex digits alone)');
    if (hash !== undefined && hash !== hex.toLowerCase()) {
      throw rejectRequest('PERSISTED_QUERY_INVALID', 'documentId and extensions.persistedQuery.sha256Hash name different documents');
    }
    hash = hex.toLowerCase();
  }
  return hash;
}

function hashMismatch(): never {
  throw rejectRequest('PERSISTED_QUERY_HASH_MISMATCH', 'the sha256 of the query is not the hash the request names (extensions.persistedQuery.sha256Hash or documentId)');
}

export interface PersistedOperationsOptions {
  schema: GraphQLSchema;
  /** The trusted documents by lowercase sha256 hex (config.graphqlTrustedDocuments); undefined: APQ mode. */
  trustedDocuments?: ReadonlyMap<string, string> | undefined;
  maxDocuments?: number;
  maxQueryLength?: number;
}

export class PersistedOperations {
  readonly mode: 'apq' | 'trusted';
  private readonly trusted: ReadonlyMap<string, string> | undefined;
  private readonly trustedTexts: ReadonlySet<string>;
  private readonly store: LRUCache<string, string>;
  private readonly maxQueryLength: number;

  constructor(options: PersistedOperationsOptions) {
    this.trusted = options.trustedDocuments;
    this.mode = this.trusted ? 'trusted' : 'apq';
    this.trustedTexts = new Set(this.trusted?.values());
    this.maxQueryLength = options.maxQueryLength ?? POLICY.apqMaxQueryLength.value;
    this.store = new LRUCache({
      max: options.maxDocuments ?? POLICY.apqMaxDocuments.value,
      maxSize: APQ_MAX_TOTAL_LENGTH,
      sizeCalculation: (document) => document.length + 1,
    });
    if (this.trusted) checkTrustedDocuments(options.schema, this.trusted);
  }

  /**
   * The text to run for this request, or a GqlError (thrown) that fails it. Without an id in
   * APQ mode the query is returned as it came (the Executor reports a missing or bad one).
   */
  resolve(request: PersistedRequest): string | undefined {
    const hash = requestedHash(request);
    const query = typeof request.query === 'string' && request.query !== '' ? request.query : undefined;
    return this.trusted ? this.resolveTrusted(this.trusted, hash, query) : this.resolveAutomatic(hash, query, request.query);
  }

  private resolveAutomatic(hash: string | undefined, query: string | undefined, asSent: string | undefined): string | undefined {
    if (hash === undefined) return asSent;
    if (query === undefined) {
      const document = this.store.get(hash);
      if (document === undefined) throw new GqlPersistedQueryNotFound();
      return document;
    }
    if (query.length > this.maxQueryLength) {
      throw rejectRequest(
        'PERSISTED_QUERY_TOO_LARGE',
        `a document registered by hash may have at most ${this.maxQueryLength} characters, this one has ${query.length}; send it without extensions.persistedQuery`,
      );
    }
    if (sha256(query) !== hash) hashMismatch();
    this.store.set(hash, query);
    return query;
  }

  private resolveTrusted(trusted: ReadonlyMap<string, string>, hash: string | undefined, query: string | undefined): string {
    if (hash !== undefined) {
      if (query !== undefined && sha256(query) !== hash) hashMismatch();
      const document = trusted.get(hash);
      if (document !== undefined) return document;
      throw query === undefined ? new GqlPersistedQueryNotInList(hash) : new GqlPersistedQueryOnly();
    }
    if (query !== undefined && this.trustedTexts.has(query)) return query;
    throw new GqlPersistedQueryOnly();
  }
}

/** A manifest document that does not parse or validate against the schema fails start-up. */
function checkTrustedDocuments(schema: GraphQLSchema, documents: ReadonlyMap<string, string>): void {
  for (const [hash, text] of documents) {
    let problem: string | undefined;
    try {
      problem = validate(schema, parse(text))[0]?.message;
    } catch (error) {
      problem = (error as Error).message;
    }
    if (problem !== undefined) throw new ConfigError('GRAPHQL_TRUSTED_DOCUMENTS', `the document ${hash} is not valid against the schema: ${problem}`);
  }
}
