/**
 * `private_key_jwt` client authentication (RFC 7523 §2.2, §3): `iss` = `sub` = client_id, `aud` = our issuer (or the
 * token endpoint), `exp` at most five minutes ahead and a `jti` never used on any instance. Asymmetric algorithms only:
 * a shared-secret JWT would need the secret we do not store. A key missing from a cached remote set refetches early.
 */
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify, errors as joseErrors, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import { LRUCache } from 'lru-cache';
import type { Client } from './stores/clients.js';
import type { JtiReplayStore } from '../tokens/jti-replay.js';
import { fetchJwks } from './jwks-fetch.js';

export const CLIENT_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

export const ASSERTION_ALGORITHMS = ['ES256', 'ES384', 'EdDSA', 'Ed25519', 'PS256', 'RS256'] as const;

export const MAX_ASSERTION_LIFETIME_SECONDS = 300;
const CLOCK_TOLERANCE_SECONDS = 30;
const MAX_ASSERTION_LENGTH = 8192;
const JWKS_CACHE_MS = 5 * 60_000;
const JWKS_REFETCH_COOLDOWN_MS = 30_000;
/** Signature checks one kid-less assertion may cost: a registered `jwks` holds at most 10 keys; a `jwks_uri` set may hold more. */
const MAX_KIDLESS_CANDIDATES = 10;

/** Why an assertion was refused: logged, never shown (every failure is invalid_client). */
export class AssertionRejected extends Error {
  override readonly name = 'AssertionRejected';
}

export function assertionClientId(assertion: string): string | undefined {
  if (assertion.length > MAX_ASSERTION_LENGTH) return undefined;
  try {
    const { sub, iss } = decodeJwt(assertion);
    return typeof sub === 'string' ? sub : typeof iss === 'string' ? iss : undefined;
  } catch {
    return undefined;
  }
}

interface CachedKeySet {
  keys: JWTVerifyGetKey;
  refetchedAt: number | undefined;
}

export interface ClientAssertionOptions {
  issuer: string;
  replay: JtiReplayStore;
  allowPrivateJwksUri: boolean;
}

export class ClientAssertions {
  private readonly remote = new LRUCache<string, CachedKeySet>({ max: 1_000, ttl: JWKS_CACHE_MS });
  /** The fetch under way per URI: concurrent assertions share it, so a burst of them (unknown kids) is one request out. */
  private readonly fetching = new Map<string, Promise<CachedKeySet>>();

  constructor(private readonly options: ClientAssertionOptions) {}

  private async remoteKeySet(uri: string, refresh: boolean): Promise<CachedKeySet> {
    const cached = this.remote.get(uri);
    if (cached && (!refresh || (cached.refetchedAt !== undefined && Date.now() - cached.refetchedAt < JWKS_REFETCH_COOLDOWN_MS))) return cached;
    let pending = this.fetching.get(uri);
    if (!pending) {
      pending = this.fetchKeySet(uri, refresh).finally(() => this.fetching.delete(uri));
      this.fetching.set(uri, pending);
    }
    return pending;
  }

  private async fetchKeySet(uri: string, refresh: boolean): Promise<CachedKeySet> {
    const jwks = await fetchJwks(uri, { allowPrivate: this.options.allowPrivateJwksUri });
    const entry = { keys: localKeySet(jwks), refetchedAt: refresh ? Date.now() : undefined };
    this.remote.set(uri, entry);
    return entry;
  }

  private async verifyWith(client: Client, assertion: string, keys: JWTVerifyGetKey) {
    const { issuer } = this.options;
    const options = {
      issuer: client.id,
      subject: client.id,
      audience: [issuer, `${issuer}/token`],
      // OIDC Registration §2: a client that registered token_endpoint_auth_signing_alg is held to it.
      algorithms: registeredAlgorithm(client) ?? [...ASSERTION_ALGORITHMS],
      requiredClaims: ['exp', 'jti'],
      clockTolerance: CLOCK_TOLERANCE_SECONDS,
    };
    try {
      return await jwtVerify(assertion, keys, options);
    } catch (error) {
      // `kid` is optional (RFC 7515 §4.1.4; authlib sends none for a PEM key): with several keys of the assertion's
      // algorithm — the old and the new during a rotation — each is tried, as jose leaves to its caller.
      if (!(error instanceof joseErrors.JWKSMultipleMatchingKeys)) throw error;
      let tried = 0;
      for await (const key of error) {
        if (++tried > MAX_KIDLESS_CANDIDATES) break;
        try {
          return await jwtVerify(assertion, key, options);
        } catch (attempt) {
          if (!(attempt instanceof joseErrors.JWSSignatureVerificationFailed)) throw attempt;
        }
      }
      throw new joseErrors.JWSSignatureVerificationFailed();
    }
  }

  async verify(client: Client, assertion: string): Promise<void> {
    if (assertion.length > MAX_ASSERTION_LENGTH) throw new AssertionRejected('the assertion is too long');
    let payload;
    try {
      if (client.jwksUri !== null) {
        try {
          ({ payload } = await this.verifyWith(client, assertion, (await this.remoteKeySet(client.jwksUri, false)).keys));
        } catch (error) {
          // A key the cached set lacks: named by an unknown kid, or, without a kid, a signature none of the keys checks.
          const newKey = error instanceof joseErrors.JWKSNoMatchingKey || (error instanceof joseErrors.JWSSignatureVerificationFailed && !namesKid(assertion));
          if (!newKey) throw error;
          ({ payload } = await this.verifyWith(client, assertion, (await this.remoteKeySet(client.jwksUri, true)).keys));
        }
      } else {
        ({ payload } = await this.verifyWith(client, assertion, localKeySet(client.jwks)));
      }
    } catch (error) {
      if (error instanceof joseErrors.JOSEError) throw new AssertionRejected(`the assertion is not valid: ${error.code}`, { cause: error });
      throw new AssertionRejected('the client keys could not be read', { cause: error });
    }
    const now = Math.floor(Date.now() / 1000);
    // jose checks iat only for age; one from the future is a clock off or an assertion minted ahead to outlive its key.
    if (payload.iat !== undefined && payload.iat > now + CLOCK_TOLERANCE_SECONDS) throw new AssertionRejected('the assertion was issued in the future');
    // Accepted for at most MAX_ASSERTION_LIFETIME_SECONDS. Some libraries sign for longer (authlib: an hour); such an
    // assertion is held to that time from its iat instead, so it is no longer accepted, nor its jti kept, than a short one.
    let acceptedUntil = payload.exp!;
    if (acceptedUntil > now + MAX_ASSERTION_LIFETIME_SECONDS + CLOCK_TOLERANCE_SECONDS) {
      if (payload.iat === undefined) throw new AssertionRejected('the assertion expires too far in the future and carries no iat');
      acceptedUntil = payload.iat + MAX_ASSERTION_LIFETIME_SECONDS;
      if (acceptedUntil + CLOCK_TOLERANCE_SECONDS < now) throw new AssertionRejected(`the assertion was issued more than ${MAX_ASSERTION_LIFETIME_SECONDS} seconds ago`);
    }
    if (typeof payload.jti !== 'string' || payload.jti.length === 0 || payload.jti.length > 256) {
      throw new AssertionRejected('the assertion jti is missing or too long');
    }
    if (!(await this.options.replay.use(`client:${client.id}`, payload.jti, new Date((acceptedUntil + CLOCK_TOLERANCE_SECONDS) * 1000)))) {
      throw new AssertionRejected('the assertion has already been used');
    }
  }
}

function registeredAlgorithm(client: Client): string[] | undefined {
  const alg = client.registrationMetadata?.token_endpoint_auth_signing_alg;
  return typeof alg === 'string' ? [alg] : undefined;
}

function namesKid(assertion: string): boolean {
  try {
    return decodeProtectedHeader(assertion).kid !== undefined;
  } catch {
    return true;
  }
}

function localKeySet(jwks: unknown): JWTVerifyGetKey {
  const set = jwks as JSONWebKeySet | null;
  if (typeof set !== 'object' || set === null || !Array.isArray(set.keys)) throw new AssertionRejected('the client JWK Set is malformed');
  return createLocalJWKSet(set);
}
