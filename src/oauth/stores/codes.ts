/**
 * Authorization codes: only their SHA-256 is stored. Redeeming is one atomic UPDATE, so of any number of concurrent
 * redemptions exactly one gets the row.
 */
import { sql, type Placeholder, type SQL } from 'drizzle-orm';
import type { PgAsyncRaw } from 'drizzle-orm/pg-core/async/raw';
import type { Db } from '../../db/database.js';
import { authorizationCodes, consents, grants, users } from '../../db/schema.js';
import { consumeIfUnused, whileOwnerExists } from './consumable.js';
import { insertRefreshTokenFrom } from './refresh-tokens.js';
import { isForeignKeyViolation } from '../../db/errors.js';
import { randomToken, sha256 } from '../../crypto/secrets.js';
import { queryRows, rowsOf } from './rows.js';
import { parseScope } from '../scopes.js';
import type { SignedInUser } from './consents.js';
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

/** OIDC Core §11: an OpenID request gets a refresh token only when `offline_access` was granted. */
const OFFLINE_CONDITION = sql.raw(
  `not ('openid' = any(string_to_array(scope, ' '))) or 'offline_access' = any(string_to_array(scope, ' '))`,
);

export function refreshTokenAllowed(scopes: readonly string[]): boolean {
  return !scopes.includes('openid') || scopes.includes('offline_access');

}

/** A text[] parameter that both drivers bind the same way: the values joined by spaces. */
function textArray(joined: string | Placeholder): SQL {
  return sql`string_to_array(${joined}, ' ')`;
}

function joinedText(values: readonly string[] | undefined): string {
  return (values ?? []).join(' ');
}

const p = sql.placeholder;

/**
 * The two statements of every code flow, built once with placeholders: Drizzle then binds values
 * instead of assembling a long text per flow, and the prepared-statement policy sees the same
 * string each time (its hash is computed once). The texts are those a per-call build produces.
 */
function flowStatements(db: Db, ttlSeconds: number) {
  const execute = (statement: SQL) => db.execute(statement) as PgAsyncRaw<unknown>;
  const redeem = (withRefreshToken: boolean) =>
    execute(sql`
        with redeemed as (${consumeIfUnused({
          table: authorizationCodes,
          hashColumn: authorizationCodes.codeHash,
          hash: p('codeHash'),
          clientId: p('clientId'),
          returning: sql.raw('grant_id, client_id, user_id, scope, redirect_uri, code_challenge, code_challenge_method, dpop_jkt, nonce'),
        })}), touched as (
          update ${grants} set last_used_at = now() where id = (select grant_id from redeemed)
          returning extract(epoch from auth_time)::float8 as auth_time, resources, sid
        )${withRefreshToken ? sql`, issued as (${insertRefreshTokenFrom(sql`(select * from redeemed where ${OFFLINE_CONDITION}) as offline`, { tokenHash: p('tokenHash'), ttlSeconds: p('tokenTtlSeconds'), dpopJkt: p('tokenDpopJkt') })})` : sql``}
        select grant_id, user_id, scope, redirect_uri, code_challenge, code_challenge_method, dpop_jkt, nonce,
               (select auth_time from touched) as auth_time, (select resources from touched) as resources,
               (select sid from touched) as sid
        from redeemed`);
  return {
    issueIfConsented: execute(sql`
        with signed_in as (
          select u.id, u.username, c.scope
          from ${users} u left join ${consents} c on c.user_id = u.id and c.client_id = ${p('clientId')}
          where u.id = ${p('userId')} and u.session_epoch = ${p('sessionEpoch')} and ${notEnded(p('sessionId'))}
        ), consented as (
          select id from signed_in
          where string_to_array(coalesce(scope, ''), ' ') @> string_to_array(${p('scope')}, ' ')
        ), new_grant as (
          insert into ${grants} (id, client_id, user_id, scope, auth_time, resources, sid)
          select ${p('grantId')}, ${p('clientId')}, id, ${p('scope')}, to_timestamp(${p('authTime')}::double precision), ${textArray(p('resources'))}, ${p('sid')}
          from consented
          returning id
        ), new_code as (
          insert into ${authorizationCodes}
            (code_hash, grant_id, client_id, user_id, redirect_uri, scope, code_challenge, code_challenge_method, dpop_jkt, nonce, expires_at)
          select ${p('codeHash')}, new_grant.id, ${p('clientId')}, ${p('userId')}, ${p('redirectUri')}, ${p('scope')},
                 ${p('codeChallenge')}, ${p('codeChallengeMethod')}, ${p('dpopJkt')}, ${p('nonce')}, now() + make_interval(secs => ${ttlSeconds})
          from new_grant
          returning 1
        )
        select id, username, scope, exists(select 1 from consented) as issued from signed_in`),
    redeem: redeem(false),
    redeemIssuingRefreshToken: redeem(true),
  };
}

export class AuthorizationCodeStore {
  private readonly statements: ReturnType<typeof flowStatements>;

  constructor(
    private readonly db: Db,
    private readonly ttlSeconds: number,
  ) {
    this.statements = flowStatements(db, ttlSeconds);
  }

  async issue(input: NewAuthorizationCode): Promise<{ code: string; grantId: string }> {
    const code = randomToken(32);
    const grantId = randomToken(16);
    await this.db.execute(sql`
      with new_grant as (
        insert into ${grants} (id, client_id, user_id, scope, auth_time, resources, sid)
        values (${grantId}, ${input.clientId}, ${input.userId}, ${input.scope}, to_timestamp(${input.authTime ?? null}::double precision), ${textArray(joinedText(input.resources))}, ${input.sid ?? null})
        returning id
      )
      insert into ${authorizationCodes}
        (code_hash, grant_id, client_id, user_id, redirect_uri, scope, code_challenge, code_challenge_method, dpop_jkt, nonce, expires_at)
      select ${sha256(code)}, new_grant.id, ${input.clientId}, ${input.userId}, ${input.redirectUri}, ${input.scope},
             ${input.codeChallenge}, ${input.codeChallengeMethod}, ${input.dpopJkt ?? null}, ${input.nonce ?? null}, now() + make_interval(secs => ${this.ttlSeconds})
      from new_grant`);
    return { code, grantId };
  }

  /**
   * Reads the user and their consent and, when it covers every requested scope, creates the grant and code; `session` is
   * the browser session of `input.userId`, refused when voided or signed out.
   */
  async issueIfConsented(
    input: NewAuthorizationCode,
    session: Omit<SessionCheck, 'userId'>,
  ): Promise<{ user?: SignedInUser; issued?: { code: string; grantId: string } }> {
    const code = randomToken(32);
    const grantId = randomToken(16);
    const result = this.statements.issueIfConsented
      .execute({
        clientId: input.clientId,
        userId: input.userId,
        sessionEpoch: session.epoch,
        sessionId: session.sid,
        scope: input.scope,
        grantId,
        authTime: input.authTime ?? null,
        resources: joinedText(input.resources),
        sid: input.sid ?? null,
        codeHash: sha256(code),
        redirectUri: input.redirectUri ?? null,
        codeChallenge: input.codeChallenge ?? null,
        codeChallengeMethod: input.codeChallengeMethod ?? null,
        dpopJkt: input.dpopJkt ?? null,
        nonce: input.nonce ?? null,
      })
      .then(rowsOf<{ id: number; username: string; scope: string | null; issued: boolean }>)
      .catch((error: unknown) => {
        // The user (or client) was deleted while this ran: the session's account is gone.
        if (isForeignKeyViolation(error)) return [];
        throw error;
      });
    const [row] = await result;
    if (!row) return {};
    const user = { userId: row.id, username: row.username, consentedScopes: new Set(parseScope(row.scope)) };
    return row.issued ? { user, issued: { code, grantId } } : { user };
  }

  async redeem(code: string, clientId: string, refreshToken?: NewRefreshToken): Promise<RedeemedCode | undefined> {
    const values = { codeHash: sha256(code), clientId };
    const redemption = () =>
      refreshToken
        ? this.statements.redeemIssuingRefreshToken.execute({
            ...values,
            tokenHash: refreshToken.tokenHash,
            tokenTtlSeconds: refreshToken.ttlSeconds,
            tokenDpopJkt: refreshToken.dpopJkt,
          })
        : this.statements.redeem.execute(values);
    const [row] = await whileOwnerExists(async () => rowsOf<{
      grant_id: string;
      user_id: number;
      scope: string;
      redirect_uri: string | null;
      code_challenge: string | null;
      code_challenge_method: string | null;
      dpop_jkt: string | null;
      nonce: string | null;
      auth_time: number | null;
      resources: string[] | null;
      sid: string | null;
    }>(await redemption()));
    if (!row) return undefined;
    return {
      grantId: row.grant_id,
      userId: row.user_id,
      scope: row.scope,
      resources: row.resources ?? [],
      redirectUri: row.redirect_uri,
      codeChallenge: row.code_challenge,
      codeChallengeMethod: row.code_challenge_method,
      dpopJkt: row.dpop_jkt,
      nonce: row.nonce,
      authTime: row.auth_time === null ? null : Math.floor(Number(row.auth_time)),
      sid: row.sid,
    };
  }

  /**
   * The resources of the grant behind a code this client may still redeem, read before redeeming it (RFC 8707 §2.2);
   * undefined for any other code, which the redemption then refuses for what it is. A grant's resources never change.
   */
  async grantedResources(code: string, clientId: string): Promise<string[] | undefined> {
    const [row] = await queryRows<{ resources: string[] | null }>(
      this.db,
      sql`select g.resources
          from ${authorizationCodes} c join ${grants} g on g.id = c.grant_id
          where c.code_hash = ${sha256(code)} and c.client_id = ${clientId}
            and c.consumed_at is null and c.expires_at > now() and g.revoked_at is null`,
    );
    return row && (row.resources ?? []);
  }

  async diagnose(code: string, clientId: string): Promise<CodeRejection> {
    const [row] = await queryRows<{
      grant_id: string;
      client_id: string;
      user_id: number;
      consumed: boolean;
      expired: boolean;
      grant_revoked: boolean;
    }>(
      this.db,
      sql`select c.grant_id, c.client_id, c.user_id, c.consumed_at is not null as consumed,
                 c.expires_at <= now() as expired, g.revoked_at is not null as grant_revoked
          from ${authorizationCodes} c join ${grants} g on g.id = c.grant_id
          where c.code_hash = ${sha256(code)}`,
    );
    if (!row) return { reason: 'unknown' };
    // The client binding comes first: another client presenting a used code is not a replay by
    // the code's holder, and must not be able to revoke that holder's tokens.
    if (row.client_id !== clientId) return { reason: 'client_mismatch', clientId: row.client_id, userId: row.user_id };
    if (row.consumed) return { reason: 'replayed', grantId: row.grant_id, clientId: row.client_id, userId: row.user_id };
    if (row.expired) return { reason: 'expired', userId: row.user_id };
    return { reason: 'grant_revoked', userId: row.user_id };
  }
}
