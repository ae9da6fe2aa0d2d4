/**
 * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document): an https client_id names a JSON document
 * of its metadata. Fetching a URL an anonymous caller chose is an SSRF risk, so the fetch connects only to the public
 * address it checked, follows no redirect, and is bounded in size and time. It is also bounded in number: each client IP
 * may cause so many fetches (each one stores a client), a document that just failed is not fetched again at once, and
 * only so many fetches are under way at a time, so the server can be used neither to fill its own client table nor to
 * send a stream of requests at someone else's host.
 */
import { lookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { LRUCache } from 'lru-cache';
import { isSpecialPurposeAddress } from '../http/special-purpose-addresses.js';
import { rootCertificates } from 'node:tls';
import { readClientMetadata, type ClientMetadata } from './client-metadata.js';
import { InvalidClientMetadata, OAuthError, RateLimited, ServiceBusy } from './errors.js';
import type { IpRequestThrottle } from './ip-request-throttle.js';
import type { Client, ClientStore } from './stores/clients.js';

export interface ClientMetadataDocumentOptions {
  /** Development only: private and loopback addresses, and http URLs, are allowed. */
  allowPrivate: boolean;
  ca?: string | undefined;
  /** The whole fetch, name resolution included. */
  timeoutMs?: number;
  /** How a host name is resolved; the system resolver unless a test needs another. */
  resolveHost?: (hostname: string) => Promise<{ address: string; family: number }[]>;
  maxBytes?: number;
  minCacheSeconds?: number;
  maxCacheSeconds?: number;
  /** Counts each fetch against the requesting client IP (CIMD_FETCH_RATE_LIMIT); no limit without one. */
  throttle?: Pick<IpRequestThrottle, 'count'>;
  maxConcurrentFetches?: number;
  /** How long a document that failed is answered with its failure instead of being fetched again. */
  failureCacheSeconds?: number;
}

export const MAX_DOCUMENT_BYTES = 5 * 1024;
const DEFAULT_TIMEOUT_MS = 3_000;
const MIN_CACHE_SECONDS = 60;
const MAX_CACHE_SECONDS = 86_400;
const DEFAULT_CACHE_SECONDS = 3_600;
const MAX_URL_LENGTH = 2_000;
const MAX_CONCURRENT_FETCHES = 16;
const FAILURE_CACHE_SECONDS = 10;
const MAX_REMEMBERED_FAILURES = 1_000;

export function looksLikeMetadataDocumentUrl(id: string): boolean {
  return id.startsWith('https://') || id.startsWith('http://');
}

function refuse(reason: string, cause?: unknown): never {
  throw new InvalidClientMetadata(`the client metadata document ${reason}`, cause === undefined ? {} : { cause });
}

function documentUrl(id: string, allowPrivate: boolean): URL {
  if (id.length > MAX_URL_LENGTH) refuse('URL is too long');
  let url: URL;
  try {
    url = new URL(id);
  } catch {
    return refuse('URL is not a valid URL');
  }
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) refuse('URL must use https');
  if (url.href !== id) refuse('URL must be in normalized form (no dot segments, default port or uppercase host)');
  if (url.hash || id.includes('#') || url.username || url.password) refuse('URL must not carry a fragment or credentials');
  if (url.pathname === '/') refuse('URL must have a path');
  return url;
}

/** The draft's §5: `application/json`, or a more specific `application/…+json`; any other type is an error. */
function isJsonMediaType(contentType: string | undefined): boolean {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  return type === 'application/json' || /^application\/[a-z0-9!#$&^_.-]+\+json$/.test(type);
}

function cacheSeconds(cacheControl: string | undefined, min: number, max: number): number {
  const directives = (cacheControl ?? '').toLowerCase();
  let seconds = DEFAULT_CACHE_SECONDS;
  if (/\b(no-store|no-cache)\b/.test(directives)) seconds = 0;
  else {
    const maxAge = /\bmax-age\s*=\s*"?(\d+)/.exec(directives);
    if (maxAge) seconds = Number(maxAge[1]);
  }
  return Math.min(max, Math.max(min, seconds));
}

export class ClientMetadataDocuments {
  private readonly inFlight = new Map<string, Promise<Client>>();
  private readonly recentFailures: LRUCache<string, InvalidClientMetadata>;
  private readonly timeoutMs: number;
  private readonly maxBytes: number;
  private readonly minCache: number;
  private readonly maxCache: number;

  constructor(
    private readonly clients: ClientStore,
    private readonly options: ClientMetadataDocumentOptions,
  ) {
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.maxBytes = options.maxBytes ?? MAX_DOCUMENT_BYTES;
    this.minCache = options.minCacheSeconds ?? MIN_CACHE_SECONDS;
    this.maxCache = options.maxCacheSeconds ?? MAX_CACHE_SECONDS;
    this.recentFailures = new LRUCache({ max: MAX_REMEMBERED_FAILURES, ttl: (options.failureCacheSeconds ?? FAILURE_CACHE_SECONDS) * 1000 });
  }

  /** The client `id` names: `stored` while its document is fresh, else fetched for the client at `requesterIp`. */
  async resolve(id: string, stored?: Client, requesterIp?: string): Promise<Client> {
    const url = documentUrl(id, this.options.allowPrivate);
    if (stored && (stored.registrationType !== 'metadata_document' || (stored.metadataExpiresAt && stored.metadataExpiresAt > new Date()))) return stored;
    const pending = this.inFlight.get(id);
    if (pending) return pending;
    const failure = this.recentFailures.get(id);
    if (failure) throw failure;
    if (this.options.throttle) {
      const state = await this.options.throttle.count(requesterIp);
      if (!state.allowed) throw new RateLimited('this address has caused too many client metadata document fetches; try again later', state.retryAfterSeconds);
    }
    // Counted after the await above: a fetch that started meanwhile is joined rather than refused.
    const joined = this.inFlight.get(id);
    if (joined) return joined;
    if (this.inFlight.size >= (this.options.maxConcurrentFetches ?? MAX_CONCURRENT_FETCHES)) {
      throw new ServiceBusy('too many client metadata documents are being fetched right now; try again in a moment', 1);
    }
    const fetching = this.fetchAndStore(id, url)
      .catch((error: unknown) => {
        if (error instanceof InvalidClientMetadata) this.recentFailures.set(id, error);
        throw error;
      })
      .finally(() => this.inFlight.delete(id));
    this.inFlight.set(id, fetching);
    return fetching;
  }

  private async fetchAndStore(id: string, url: URL): Promise<Client> {
    const { body, cacheControl } = await this.fetchDocument(url);
    let document: unknown;
    try {
      document = JSON.parse(body);
    } catch (error) {
      refuse('is not valid JSON', error);
    }
    if (typeof document !== 'object' || document === null || Array.isArray(document)) refuse('must be a JSON object');
    const fields = document as Record<string, unknown>;
    if (fields.client_id !== id) refuse('must contain a client_id equal to its own URL');
    // A document is public: a secret in it is no secret, and a client using one is misconfigured.
    if ('client_secret' in fields || 'client_secret_expires_at' in fields) refuse('must not contain a client_secret');
    let metadata: ClientMetadata;
    try {
      metadata = readClientMetadata(fields, { defaultAuthMethod: 'none' });
    } catch (error) {
      // invalid_redirect_uri included: for a document, everything wrong is the document's fault.
      if (error instanceof OAuthError) refuse(`is invalid: ${error.message}`, error);
      throw error;
    }
    if (metadata.tokenEndpointAuthMethod !== 'none') refuse('must use token_endpoint_auth_method none');
    const expiresAt = new Date(Date.now() + cacheSeconds(cacheControl, this.minCache, this.maxCache) * 1000);
    return this.clients.upsertMetadataDocument(id, metadata, expiresAt);
  }

  /** The address to connect to: resolved here and checked, so a rebinding DNS answer cannot slip a private one in. */
  private async address(hostname: string, signal: AbortSignal): Promise<{ address: string; family: number }> {
    const literal = hostname.replace(/^\[|\]$/g, '');
    let addresses: { address: string; family: number }[];
    if (isIP(literal)) addresses = [{ address: literal, family: isIP(literal) }];
    else {
      const resolve = this.options.resolveHost ?? ((host: string) => lookup(host, { all: true, verbatim: true }));
      // A resolver cannot be cancelled, but the request need not wait for one that does not answer.
      const timedOut = new Promise<never>((_resolve, reject) => {
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
      try {
        addresses = await Promise.race([resolve(literal), timedOut]);
      } catch (error) {
        if (signal.aborted) return refuse(`did not arrive within ${this.timeoutMs} ms`, error);
        return refuse('host does not resolve', error);
      }
    }
    if (addresses.length === 0) refuse('host does not resolve');
    if (!this.options.allowPrivate && addresses.some((a) => isSpecialPurposeAddress(a.address))) {
      refuse('host resolves to a private, loopback or link-local address');
    }
    return addresses[0]!;
  }

  private async fetchDocument(url: URL): Promise<{ body: string; cacheControl: string | undefined }> {
    const signal = AbortSignal.timeout(this.timeoutMs);
    const pinned = await this.address(url.hostname, signal);
    const pinnedLookup: LookupFunction = (_host, options, callback) => {
      if ((options as { all?: boolean }).all) (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [pinned]);
      else callback(null, pinned.address, pinned.family);
    };
    const transport = url.protocol === 'https:' ? https : http;
    return new Promise((resolve, reject) => {
      const fail = (reason: string, cause?: unknown) => {
        try {
          refuse(reason, cause);
        } catch (error) {
          reject(error);
        }
      };
      const request = transport.get(
        url,
        {
          lookup: pinnedLookup,
          headers: { accept: 'application/json', 'user-agent': 'fieldgate' },
          ...(url.protocol === 'https:' && this.options.ca ? { ca: [...rootCertificates, this.options.ca] } : {}),
          agent: false,
        },
        (response) => {
          const status = response.statusCode ?? 0;
          if (status >= 300 && status < 400) {
            response.resume();
            return fail('URL answered with a redirect, which is not followed');
          }
          if (status !== 200) {
            response.resume();
            return fail(`URL answered HTTP ${status}`);
          }
          if (!isJsonMediaType(response.headers['content-type'])) {
            request.destroy();
            return fail(`must be served as application/json, not ${response.headers['content-type'] ? `"${response.headers['content-type'].slice(0, 100)}"` : 'without a Content-Type'}`);
          }
          const declared = Number(response.headers['content-length']);
          if (Number.isFinite(declared) && declared > this.maxBytes) {
            request.destroy();
            return fail(`is larger than ${this.maxBytes} bytes`);
          }
          const chunks: Buffer[] = [];
          let size = 0;
          response.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > this.maxBytes) {
              request.destroy();
              fail(`is larger than ${this.maxBytes} bytes`);
              return;
            }
            chunks.push(chunk);
          });
          response.on('end', () => {
            if (size > this.maxBytes) return;
            try {
              resolve({ body: new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks)), cacheControl: response.headers['cache-control'] });
            } catch (error) {
              fail('is not valid UTF-8', error);
            }
          });
          response.on('error', (error) => fail('could not be read', error));
        },
      );
      const timeUp = () => {
        request.destroy();
        fail(`did not arrive within ${this.timeoutMs} ms`);
      };
      if (signal.aborted) timeUp();
      signal.addEventListener('abort', timeUp, { once: true });
      request.on('close', () => signal.removeEventListener('abort', timeUp));
      request.on('error', (error) => fail('could not be fetched', error));
    });
  }
}
