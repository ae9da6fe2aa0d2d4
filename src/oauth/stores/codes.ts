/**
 * Authorization codes are sealed, not stored: the code carries its authorization, encrypted and authenticated under a
 * deployment key (crypto/sealed.ts), so issuing one writes nothing. Redeeming creates the code's grant under the id
 * sealed in it, in one statement that also checks that the browser session which authorized it is still signed in and
 * the consent still covers it. The grant's primary key is the code's single-use mark: of any number of concurrent
 * redemptions exactly one inserts it, and the code presented again finds it (a replay). The janitor keeps every grant at
 * least as long as a code lives (janitor.ts), so the mark outlives the code.
 */
import { sql, type Placeholder, type SQL } from 'drizzle-orm';
import type { PgAsyncRaw } from 'drizzle-orm/pg-core/async/raw';
import type { Db } from '../../db/database.js';
import { consents, grants, users } from '../../db/schema.js';
import { Sealer } from '../../crypto/sealed.js';
import { whileOwnerExists } from './consumable.js';
import { insertRefreshTokenFrom } from './refresh-tokens.js';
import { randomToken } from '../../crypto/secrets.js';
import { queryRows, rowsOf } from './rows.js';
import { parseScope } from '../scopes.js';
import type { ConsentStore, SignedInUser } from './consents.js';
import { notEnded, type SessionCheck } from './ended-sessions.js';

export interface NewAuthorizationCode {
  clientId: string;
  userId: number;
  scope: string;
  /** RFC 8707 resources the user authorizes (stored on the grant); empty: the default audience. */
  resources?: readonly string[];
  redirectUri: string | null;
  codeChallenge: string | null;
  codeChallengeMethod: 'S256' | null;
  /** RFC 9449 §10: the `dpop_jkt` of the authorization request, if it sent one. */
  dpopJkt?: string | null;
  nonce?: string | null;
  authTime?: number | null;
  /** The ID Tokens' `sid` (see oidc/session-id.ts), stored on the grant. */
  sid?: string | null;
}

/** The browser session that authorizes a code: it must still be signed in when the code is redeemed. */
export type AuthorizingSession = Omit<SessionCheck, 'userId'>;

export interface RedeemedCode {
  grantId: string;
  userId: number;
  scope: string;
  resources: string[];
  redirectUri: string | null;
  codeChallenge: string | null;
  codeChallengeMethod: string | null;
  dpopJkt: string | null;
  nonce: string | null;
  authTime: number | null;
  sid: string | null;
}

export interface NewRefreshToken {
  tokenHash: string;
  ttlSeconds: number;
  dpopJkt: string | null;
}

export type CodeRejection =
  | { reason: 'unknown' }
  | { reason: 'replayed'; grantId: string; clientId: string; userId: number }
  | { reason: 'client_mismatch'; clientId: string; userId: number }
  | { reason: 'expired'; userId: number }
  | { reason: 'grant_revoked'; userId: number };

/**
 * What a code carries, under short keys so that the code stays short in a redirect URL. Optional values are left out
 * when null or empty.
 */
interface SealedCode {
  /** The grant its redemption creates. */
  g: string;
  c: string;
  u: number;
  /** The authorizing session: the user's session epoch and the session cookie's id. */
  e: number;
  s: string;
  sc: string;
  /** RFC 8707 resources. */
  r?: string[];
  ru?: string;
  cc?: string;
  cm?: 'S256';
  dj?: string;
  n?: string;
  at?: number;
  sid?: string;
  /** Expiry, in seconds since the epoch. */
  x: number;
}

function isSealedCode(value: unknown): value is SealedCode {
  const code = value as Partial<SealedCode> | null;
  return typeof code === 'object' && code !== null && typeof code.g === 'string' && typeof code.c === 'string' &&
    typeof code.u === 'number' && typeof code.e === 'number' && typeof code.s === 'string' && typeof code.sc === 'string' && typeof code.x === 'number';
}

/** OIDC Core §11: an OpenID request gets a refresh token only when `offline_access` was granted. */
const OFFLINE_CONDITION = sql.raw(
  `not ('openid' = any(string_to_array(scope, ' '))) or 'offline_access' = any(string_to_array(scope, ' '))`,
);

export function refreshTokenAllowed(scopes: readonly string[]): boolean {
  return !scopes.includes('openid') || scopes.includes('offline_access');
}

const p = sql.placeholder;

/** A text[] parameter that both drivers bind the same way: the values joined by spaces. */
function textArray(joined: string | Placeholder): SQL {
  return sql`string_to_array(${joined}, ' ')`;
}

/**
 * The redemption, built once with placeholders: Drizzle then binds values instead of assembling a long text per flow,
 * and the prepared-statement policy sees the same string each time (its hash is computed once).
 */
function redemptionStatements(db: Db) {
  const execute = (statement: SQL) => db.execute(statement) as PgAsyncRaw<unknown>;
  const redeem = (withRefreshToken: boolean) =>
    execute(sql`
        with authorizing as (
          select u.id from ${users} u left join ${consents} c on c.user_id = u.id and c.client_id = ${p('clientId')}
          where u.id = ${p('userId')} and u.session_epoch = ${p('sessionEpoch')} and ${notEnded(p('sessionId'))}
            and string_to_array(coalesce(c.scope, ''), ' ') @> string_to_array(${p('scope')}, ' ')
        ), redeemed as (
          insert into ${grants} (id, client_id, user_id, scope, auth_time, resources, sid, last_used_at)
          select ${p('grantId')}, ${p('clientId')}, id, ${p('scope')}, to_timestamp(${p('authTime')}::double precision), ${textArray(p('resources'))}, ${p('sid')}, now()
          from authorizing
          on conflict (id) do nothing
          returning id as grant_id, client_id, user_id, scope
        )${withRefreshToken ? sql`, issued as (${insertRefreshTokenFrom(sql`(select * from redeemed where ${OFFLINE_CONDITION}) as offline`, { tokenHash: p('tokenHash'), ttlSeconds: p('tokenTtlSeconds'), dpopJkt: p('tokenDpopJkt') })})` : sql``}
        select grant_id from redeemed`);
  return { redeem: redeem(false), redeemIssuingRefreshToken: redeem(true) };
}

const now = () => Math.floor(Date.now() / 1000);

export class AuthorizationCodeStore {
  private readonly statements: ReturnType<typeof redemptionStatements>;
  private readonly sealer: Sealer;

  constructor(
    private readonly db: Db,
    private readonly ttlSeconds: number,
    /** The deployment's `authorization-code` instance secret. */
    secret: string,
    private readonly consents: ConsentStore,
  ) {
    if (ttlSeconds > Sealer.lifetimeSeconds) throw new RangeError(`an authorization code cannot live longer than ${Sealer.lifetimeSeconds} s`);
    this.sealer = new Sealer(secret, 'authorization code');
    this.statements = redemptionStatements(db);
  }

  /** Seals a code for `input`, authorized by `session`; nothing is written until it is redeemed. */
  async issue(input: NewAuthorizationCode, session: AuthorizingSession): Promise<{ code: string; grantId: string }> {
    const grantId = randomToken(16);
    const content: SealedCode = {
      g: grantId,
      c: input.clientId,
      u: input.userId,
      e: session.epoch,
      s: session.sid,
      sc: input.scope,
      ...(input.resources?.length ? { r: [...input.resources] } : {}),
      ...(input.redirectUri !== null ? { ru: input.redirectUri } : {}),
      ...(input.codeChallenge !== null ? { cc: input.codeChallenge } : {}),
      ...(input.codeChallengeMethod !== null ? { cm: input.codeChallengeMethod } : {}),
      ...(input.dpopJkt ? { dj: input.dpopJkt } : {}),
      ...(input.nonce ? { n: input.nonce } : {}),
      ...(input.authTime != null ? { at: input.authTime } : {}),
      ...(input.sid ? { sid: input.sid } : {}),
      x: now() + this.ttlSeconds,
    };
    return { code: this.sealer.seal(content), grantId };
  }

  /**
   * Reads the user and their consent and, when it covers every requested scope, seals the code; `session` is the
   * browser session of `input.userId`, refused when voided or signed out.
   */
  async issueIfConsented(
    input: NewAuthorizationCode,
    session: AuthorizingSession,
  ): Promise<{ user?: SignedInUser; issued?: { code: string; grantId: string } }> {
    const user = await this.consents.lookup({ ...session, userId: input.userId }, input.clientId);
    if (!user) return {};
    if (!parseScope(input.scope).every((scope) => user.consentedScopes.has(scope))) return { user };
    return { user, issued: await this.issue(input, session) };
  }

  /** The code's content when `clientId` may still present it: sealed by this deployment, for this client, not expired. */
  private openFor(code: string, clientId: string): SealedCode | undefined {
    const content = this.sealer.open(code);
    if (!isSealedCode(content) || content.c !== clientId || content.x <= now()) return undefined;
    return content;
  }

  async redeem(code: string, clientId: string, refreshToken?: NewRefreshToken): Promise<RedeemedCode | undefined> {
    const content = this.openFor(code, clientId);
    if (!content) return undefined;
    const values = {
      grantId: content.g,
      clientId,
      userId: content.u,
      sessionEpoch: content.e,
      sessionId: content.s,
      scope: content.sc,
      authTime: content.at ?? null,
      resources: content.r?.join(' ') ?? '',
      sid: content.sid ?? null,
    };
    const redemption = () =>
      refreshToken
        ? this.statements.redeemIssuingRefreshToken.execute({
            ...values,
            tokenHash: refreshToken.tokenHash,
            tokenTtlSeconds: refreshToken.ttlSeconds,
            tokenDpopJkt: refreshToken.dpopJkt,
          })
        : this.statements.redeem.execute(values);
    const [row] = await whileOwnerExists(async () => rowsOf<{ grant_id: string }>(await redemption()));
    if (!row) return undefined;
    return {
      grantId: content.g,
      userId: content.u,
      scope: content.sc,
      resources: content.r ?? [],
      redirectUri: content.ru ?? null,
      codeChallenge: content.cc ?? null,
      codeChallengeMethod: content.cm ?? null,
      dpopJkt: content.dj ?? null,
      nonce: content.n ?? null,
      authTime: content.at ?? null,
      sid: content.sid ?? null,
    };
  }

  private async redeemed(grantId: string): Promise<boolean> {
    const rows = await queryRows<unknown>(this.db, sql`select 1 from ${grants} where id = ${grantId}`);
    return rows.length > 0;
  }

  /**
   * The resources of the grant behind a code this client may still redeem, read before redeeming it (RFC 8707 §2.2);
   * undefined for any other code, which the redemption then refuses for what it is.
   */
  async grantedResources(code: string, clientId: string): Promise<string[] | undefined> {
    const content = this.openFor(code, clientId);
    if (!content || (await this.redeemed(content.g))) return undefined;
    return content.r ?? [];
  }

  async diagnose(code: string, clientId: string): Promise<CodeRejection> {
    const content = this.sealer.open(code);
    if (!isSealedCode(content)) return { reason: 'unknown' };
    // The client binding comes first: another client presenting a used code is not a replay by
    // the code's holder, and must not be able to revoke that holder's tokens.
    if (content.c !== clientId) return { reason: 'client_mismatch', clientId: content.c, userId: content.u };
    if (await this.redeemed(content.g)) return { reason: 'replayed', grantId: content.g, clientId: content.c, userId: content.u };
    if (content.x <= now()) return { reason: 'expired', userId: content.u };
    // Signed out, its consent withdrawn or narrowed, or the account or client deleted since the code was issued.
    return { reason: 'grant_revoked', userId: content.u };
  }
}
