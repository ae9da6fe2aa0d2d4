/** RFC 9068 JWTs, ES256, verified locally on every resource request, then checked against revocations. */
import { jwtVerify, decodeProtectedHeader, errors as joseErrors } from 'jose';
import { randomUUID } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { KeyStore, VerificationKey } from './signing-keys.js';
import type { Revocations } from './revocation.js';
import type { GrantOwners } from './grant-owners.js';
import { InvalidToken } from '../oauth/errors.js';
import { parseScope } from '../oauth/scopes.js';
import { POLICY } from '../policy.js';

export const ACCESS_TOKEN_TYP = 'at+jwt';

export interface AccessTokenGrant {
  /** Null for a client acting for itself (client_credentials): `sub` is then its client_id (RFC 9068 §2.2). */
  userId: number | null;
  clientId: string;
  scope: string;
  grantId: string;
  /**
   * The `sub` of a user's token (the user id when absent): a pairwise client gets its identifier for the user (OIDC
   * Core §8.1), so it cannot read the real id from its token. The resource side finds that user through the grant.
   */
  subject?: string;
  /** RFC 9449 §6.1: thumbprint of the DPoP key the token is bound to (`cnf.jkt`). */
  jkt?: string;
  audience?: readonly string[];
}

export interface IssuedAccessToken {
  token: string;
  jti: string;
  expiresIn: number;
  expiresAt: Date;
}

export interface Principal {
  /** Null when the client acts for itself (client_credentials): there is no user, and no user's data. */
  userId: number | null;
  clientId: string;
  scopes: ReadonlySet<string>;
  grantId: string;
  jti: string;
  audience: readonly string[];
  issuedAt: Date;
  expiresAt: Date;
  /** Set for a DPoP-bound token: only a proof signed by this key may present it. */
  jkt?: string;
}

export interface AccessTokenOptions {
  issuer: string;
  audience: string | readonly string[];
  ttlSeconds: number;
}

/**
 * Client ids are never decimal (see ClientStore), so a client_credentials `sub` cannot be read as a user id; any other
 * `sub` is a pairwise identifier, whose user only the grant knows (undefined here).
 */
function subjectUser(sub: string, clientId: string): number | null | undefined {
  if (/^[1-9][0-9]{0,15}$/.test(sub)) {
    const userId = Number(sub);
    if (Number.isSafeInteger(userId)) return userId;
  }
  if (sub === clientId) return null;
  return undefined;
}

/** What may sign an access token: our ES256 keys (EdDSA for keys made before ES256); an RS256 key signs only ID Tokens. */
const ACCESS_TOKEN_ALGS: ReadonlySet<string> = new Set(['ES256', 'EdDSA']);

const VERIFIED_CACHE_SIZE = POLICY.verifiedTokenCacheEntries.value;

/** A verified token's principal, and the key it was signed with: a withdrawn key voids the entry. */
interface VerifiedToken {
  principal: Principal;
  kid: string | undefined;
}

export class AccessTokens {
  /**
   * A token's signature and claims cannot change, so a verified one is remembered by its exact text until its `exp`;
   * revocation is still checked on every request.
   */
  private readonly verified = new LRUCache<string, VerifiedToken>({ max: VERIFIED_CACHE_SIZE });

  constructor(
    private readonly keys: KeyStore,
    private readonly revocations: Revocations,
    private readonly options: AccessTokenOptions,
    private readonly owners: GrantOwners,
  ) {}

  async issue(grant: AccessTokenGrant): Promise<IssuedAccessToken> {
    const key = await this.keys.signingKey();
    const jti = randomUUID();
    const now = Math.floor(Date.now() / 1000);
    const exp = now + this.options.ttlSeconds;
    const audience = grant.audience?.length ? grant.audience : typeof this.options.audience === 'string' ? [this.options.audience] : this.options.audience;
    const token = key.sign(
      {
        iss: this.options.issuer,
        sub: grant.userId === null ? grant.clientId : (grant.subject ?? String(grant.userId)),
        aud: audience.length === 1 ? audience[0] : [...audience],
        jti,
        iat: now,
        exp,
        client_id: grant.clientId,
        scope: grant.scope,
        grant_id: grant.grantId,
        ...(grant.jkt === undefined ? {} : { cnf: { jkt: grant.jkt } }),
      },
      ACCESS_TOKEN_TYP,
    );
    return { token, jti, expiresIn: this.options.ttlSeconds, expiresAt: new Date(exp * 1000) };
  }

  async verifySignature(token: string): Promise<Principal> {
    const cached = this.verified.get(token);
    // A token of a withdrawn key is verified afresh, and so refused.
    if (cached && this.keys.knows(cached.kid)) {
      if (cached.principal.expiresAt.getTime() > Date.now()) return cached.principal;
      this.verified.delete(token);
      throw new InvalidToken('the access token expired');
    }
    const verified = await this.verifyUncached(token);
    this.verified.set(token, verified);
    return verified.principal;
  }

  private async verifyUncached(token: string): Promise<VerifiedToken> {
    let kid: string | undefined;
    try {
      kid = decodeProtectedHeader(token).kid;
    } catch {
      throw new InvalidToken('the access token is malformed');
    }
    const key = await this.keys.verificationKey(kid);
    if (!key) throw new InvalidToken('the access token was not signed by a key of this server');
    if (!ACCESS_TOKEN_ALGS.has(key.alg)) throw new InvalidToken('the access token was not signed by an access-token key of this server');
    const { userId, ...claims } = await this.verifyClaims(token, key);
    // Outside the claim checks, so a database failure is a server error and not a refused token.
    const principal = { ...claims, userId: userId === undefined ? await this.pairwiseUser(claims.grantId, claims.clientId) : userId };
    return { principal, kid };
  }

  /** `userId` is undefined for a pairwise `sub`: only the grant knows that user. */
  private async verifyClaims(token: string, key: VerificationKey): Promise<Omit<Principal, 'userId'> & { userId: number | null | undefined }> {
    try {
      const { payload } = await jwtVerify(token, key.publicKey, {
        issuer: this.options.issuer,
        typ: ACCESS_TOKEN_TYP,
        algorithms: [key.alg],
        requiredClaims: ['sub', 'aud', 'jti', 'exp', 'iat', 'client_id', 'scope', 'grant_id'],
      });
      if (typeof payload.client_id !== 'string' || typeof payload.grant_id !== 'string') {
        throw new InvalidToken('the access token has malformed claims');
      }
      const userId = subjectUser(payload.sub!, payload.client_id);
      const audience = typeof payload.aud === 'string' ? [payload.aud] : (payload.aud ?? []);
      const cnf = payload.cnf as { jkt?: unknown } | undefined;
      if (cnf !== undefined && (typeof cnf !== 'object' || cnf === null || typeof cnf.jkt !== 'string')) {
        throw new InvalidToken('the access token has malformed claims');
      }
      return {
        ...(cnf === undefined ? {} : { jkt: cnf.jkt as string }),
        userId,
        clientId: payload.client_id,
        scopes: new Set(parseScope(typeof payload.scope === 'string' ? payload.scope : '')),
        grantId: payload.grant_id,
        jti: payload.jti!,
        audience,
        issuedAt: new Date(payload.iat! * 1000),
        expiresAt: new Date(payload.exp! * 1000),
      };
    } catch (error) {
      if (error instanceof InvalidToken) throw error;
      if (error instanceof joseErrors.JWTExpired) throw new InvalidToken('the access token expired', { cause: error });
      if (error instanceof joseErrors.JWTClaimValidationFailed) {
        throw new InvalidToken(`the access token is not valid here (${error.claim})`, { cause: error });
      }
      throw new InvalidToken('the access token is invalid', { cause: error });
    }
  }

  /** The user of a pairwise token's grant: one read per grant and instance, never for a public-subject token. */
  private async pairwiseUser(grantId: string, clientId: string): Promise<number> {
    const owner = await this.owners.find(grantId);
    if (!owner) throw new InvalidToken('the access token has been revoked');
    if (owner.clientId !== clientId || owner.userId === null) throw new InvalidToken('the access token has malformed claims');
    return owner.userId;
  }

  /** Undefined whenever `verify` has to run (and give any refusal). */
  verifyFromCache(token: string, resource?: string): Principal | undefined {
    const cached = this.verified.get(token);
    if (!cached || !this.keys.knows(cached.kid)) return undefined;
    const { principal } = cached;
    if (principal.expiresAt.getTime() <= Date.now()) return undefined;
    if (resource !== undefined && !principal.audience.includes(resource)) return undefined;
    return this.revocations.cachedAnswer(principal.grantId, principal.jti) === false ? principal : undefined;
  }

  /** RFC 8707: a token for another resource is refused. */
  async verify(token: string, resource?: string): Promise<Principal> {
    const principal = await this.verifySignature(token);
    if (resource !== undefined && !principal.audience.includes(resource)) {
      throw new InvalidToken('the access token was not issued for this resource');
    }
    if (await this.revocations.isRevoked(principal.grantId, principal.jti)) {
      throw new InvalidToken('the access token has been revoked');
    }
    return principal;
  }
}
