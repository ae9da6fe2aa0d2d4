/**
 * DPoP proofs (RFC 9449), checked alike at the token endpoint and at every resource. Nonces (§8, §9) are stateless,
 * an HMAC of the current minute, so instances share nothing but the key; the neighbouring windows are still accepted
 * across a boundary or clock skew.
 */
import { calculateJwkThumbprint, EmbeddedJWK, jwtVerify, errors as joseErrors, type JWK } from 'jose';
import { createHash } from 'node:crypto';
import { constantTimeEqual, hmacSha256 } from '../crypto/secrets.js';
import { InvalidDpopProof, UseDpopNonce } from '../oauth/errors.js';
import type { JtiReplayStore } from './jti-replay.js';

/** HS* and none never are. `Ed25519` is the fully-specified name of EdDSA over Ed25519 (RFC 9864). */
export const DPOP_ALGORITHMS = ['ES256', 'EdDSA', 'Ed25519', 'RS256'] as const;

/** Longest `DPoP` header accepted: a proof with a 4096-bit RSA key is under 2 KiB. */
const MAX_PROOF_LENGTH = 8192;
const MAX_JTI_LENGTH = 256;
const NONCE_WINDOW_SECONDS = 60;
const PRIVATE_JWK_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];

export interface DpopOptions {
  /** Seconds a proof's `iat` may lie before or after the server's clock. */
  proofMaxAge: number;
  /** Key the stateless nonces are derived from, shared by every instance. */
  nonceKey: string;
}

export interface DpopRequest {
  header: string | string[] | undefined;
  method: string;
  url: string;
  /** At a resource: the access token the proof must be bound to (`ath`). */
  accessToken?: string;
  requireNonce: boolean;
}

export interface DpopProof {
  /** RFC 7638 SHA-256 thumbprint of the proof's key: the `cnf.jkt` of tokens bound to it. */
  jkt: string;
}

const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

/** RFC 3986 §6.2.2.1–2, which the WHATWG parser leaves alone: escapes of unreserved characters decoded, others upper case. */
function normalizePercentEncoding(path: string): string {
  return path.replace(/%[0-9A-Fa-f]{2}/g, (escape) => {
    const char = String.fromCharCode(Number.parseInt(escape.slice(1), 16));
    return UNRESERVED.test(char) ? char : escape.toUpperCase();
  });
}

/** The URL without query and fragment, normalized as the WHATWG parser does and as RFC 3986 §6.2.2 asks (§4.3 step 9). */
function htuOf(raw: string): string | undefined {
  try {
    const url = new URL(raw);
    url.search = '';
    url.hash = '';
    url.pathname = normalizePercentEncoding(url.pathname);
    return url.href;
  } catch {
    return undefined;
  }
}

export class DpopVerifier {
  constructor(
    private readonly replay: JtiReplayStore,
    private readonly options: DpopOptions,
  ) {}

  currentNonce(now = Date.now()): string {
    return this.nonceFor(Math.floor(now / 1000 / NONCE_WINDOW_SECONDS));
  }

  private nonceFor(window: number): string {
    return `${window.toString(36)}.${hmacSha256(this.options.nonceKey, `dpop-nonce:${window}`).slice(0, 32)}`;
  }

  /** The window a valid nonce was issued in; undefined for anything else. */
  private nonceWindow(nonce: unknown, now = Date.now()): number | undefined {
    if (typeof nonce !== 'string' || nonce.length > 64) return undefined;
    const current = Math.floor(now / 1000 / NONCE_WINDOW_SECONDS);
    return [current, current - 1, current + 1].find((window) => constantTimeEqual(nonce, this.nonceFor(window)));
  }

  /** Undefined when the request carries none; InvalidDpopProof or UseDpopNonce (with a fresh nonce) otherwise. */
  async verify(request: DpopRequest): Promise<DpopProof | undefined> {
    const { header } = request;
    if (header === undefined) return undefined;
    if (Array.isArray(header) || header.includes(',')) throw new InvalidDpopProof('send exactly one DPoP header');
    if (header.length > MAX_PROOF_LENGTH) throw new InvalidDpopProof('the DPoP proof is too long');

    let payload;
    let jwk: JWK;
    try {
      const verified = await jwtVerify(header, EmbeddedJWK, { typ: 'dpop+jwt', algorithms: [...DPOP_ALGORITHMS] });
      payload = verified.payload;
      jwk = verified.protectedHeader.jwk!;
    } catch (error) {
      throw new InvalidDpopProof(proofFailure(error, header), { cause: error });
    }
    if (PRIVATE_JWK_MEMBERS.some((member) => member in jwk)) throw new InvalidDpopProof('the jwk of a DPoP proof must be a public key');

    const { htm, htu, iat, jti } = payload as Record<string, unknown>;
    if (typeof jti !== 'string' || jti.length === 0 || jti.length > MAX_JTI_LENGTH) {
      throw new InvalidDpopProof('the DPoP proof needs a jti of at most 256 characters');
    }
    if (htm !== request.method) throw new InvalidDpopProof('the DPoP proof htm does not match the HTTP method');
    if (typeof htu !== 'string' || htuOf(htu) !== htuOf(request.url)) {
      throw new InvalidDpopProof('the DPoP proof htu does not match the request URL');
    }
    if (typeof iat !== 'number' || !Number.isFinite(iat)) throw new InvalidDpopProof('the DPoP proof needs a numeric iat');
    if (request.accessToken !== undefined) {
      const ath = createHash('sha256').update(request.accessToken).digest('base64url');
      if (typeof payload.ath !== 'string' || !constantTimeEqual(payload.ath, ath)) {
        throw new InvalidDpopProof('the DPoP proof ath does not match the access token');
      }
    }
    const nonceWindow = this.nonceWindow(payload.nonce);
    if ((payload.nonce !== undefined || request.requireNonce) && nonceWindow === undefined) {
      throw new UseDpopNonce('the DPoP proof must carry the nonce from the DPoP-Nonce header', this.currentNonce());
    }
    // §4.3 step 11: a proof carrying our nonce is dated by it, so a client whose clock is off still uses DPoP.
    if (nonceWindow === undefined && Math.abs(Math.floor(Date.now() / 1000) - iat) > this.options.proofMaxAge) {
      throw new InvalidDpopProof('the DPoP proof iat is outside the accepted window; check the clock');
    }

    const jkt = await calculateJwkThumbprint(jwk, 'sha256');
    // Kept until no proof with this iat, or this nonce, can be accepted any more.
    const lastAccepted = nonceWindow === undefined ? iat + this.options.proofMaxAge : (nonceWindow + 2) * NONCE_WINDOW_SECONDS;
    const expiresAt = new Date((lastAccepted + 1) * 1000);
    if (!(await this.replay.use(`dpop:${jkt}`, jti, expiresAt))) {
      throw new InvalidDpopProof('this DPoP proof has already been used');
    }
    return { jkt };
  }
}

function proofFailure(error: unknown, header: string): string {
  if (error instanceof joseErrors.JOSEAlgNotAllowed) return `the DPoP proof must be signed with ${DPOP_ALGORITHMS.join(', ')}`;
  if (error instanceof joseErrors.JWTClaimValidationFailed && error.claim === 'typ') return 'the DPoP proof must have typ dpop+jwt';
  if (error instanceof joseErrors.JWSSignatureVerificationFailed) return 'the DPoP proof signature does not verify';
  if (error instanceof joseErrors.JWSInvalid && /"jwk"|Embedded JWK/.test(error.message)) {
    return 'the DPoP proof must carry the public key that signed it in jwk';
  }
  if (header.split('.').length !== 3) return 'the DPoP header is not a JWT';
  return 'the DPoP proof is not a valid signed JWT';
}
