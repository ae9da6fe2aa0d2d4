/**
 * Authorization codes. A code is 256 random bits handed to the browser once; only its SHA-256
 * is stored. Issuing a code also creates its grant (the family every token redeemed from it
 * belongs to), in one statement. Redeeming is one atomic UPDATE, so of any number of
 * concurrent redemptions exactly one gets the row.
 */
import { and, eq, gt, isNull, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../../db/database.js';
import { authorizationCodes, consents, grants, users } from '../../db/schema.js';
import { insertRefreshTokenFrom } from './refresh-tokens.js';
import { isForeignKeyViolation } from '../../db/errors.js';
import { randomToken, sha256 } from '../../crypto/secrets.js';
import { queryRows } from './rows.js';
import { parseScope } from '../scopes.js';
import type { SignedInUser } from './consents.js';

export interface NewAuthorizationCode {
  clientId: string;
  userId: number;
  scope: string;
  /** RFC 8707 resources the user authorizes (stored on the grant); empty: the default audience. */
  resources?: readonly string[];
  /** The redirect_uri sent to /authorize, or null when the request relied on the only registered one. */
  redirectUri: string | null;
  codeChallenge: string | null;
  codeChallengeMethod: 'S256' | null;
}

export interface RedeemedCode {
  grantId: string;
  userId: number;
  scope: string;
  /** The grant's RFC 8707 resources; empty: the default audience. */
  resources: string[];
  redirectUri: string | null;
  codeChallenge: string | null;
  codeChallengeMethod: string | null;
}

/** Why a code could not be redeemed, for the error and the security log. */
/** A refresh token to store with the redemption, in the same statement (one round trip, one commit). */
export interface NewRefreshToken {
  tokenHash: string;
  ttlSeconds: number;
}

export type CodeRejection =
  | { reason: 'unknown' }
  | { reason: 'replayed'; grantId: string; clientId: string; userId: number }
  | { reason: 'client_mismatch'; clientId: string; userId: number }
  | { reason: 'expired'; userId: number }
  | { reason: 'grant_revoked'; userId: number };

/** A text[] parameter that both drivers bind the same way. */
function textArray(values: readonly string[] | undefined): SQL {
  return sql`string_to_array(${(values ?? []).join(' ')}, ' ')`;
}

export class AuthorizationCodeStore {
  constructor(
    private readonly db: Db,
    private readonly ttlSeconds: number,
  ) {}

  /** Creates the grant and its code; returns the code (shown once) and the grant id. */
  async issue(input: NewAuthorizationCode): Promise<{ code: string; grantId: string }> {
    const code = randomToken(32);
    const grantId = randomToken(16);
    await this.db.execute(sql`
      with new_grant as (
        insert into ${grants} (id, client_id, user_id, scope, resources)
        values (${grantId}, ${input.clientId}, ${input.userId}, ${input.scope}, ${textArray(input.resources)})
        returning id
      )
      insert into ${authorizationCodes}
        (code_hash, grant_id, client_id, user_id, redirect_uri, scope, code_challenge, code_challenge_method, expires_at)
      select ${sha256(code)}, new_grant.id, ${input.clientId}, ${input.userId}, ${input.redirectUri}, ${input.scope},
             ${input.codeChallenge}, ${input.codeChallengeMethod}, now() + make_interval(secs => ${this.ttlSeconds})
      from new_grant`);
    return { code, grantId };
  }

  /**
   * Marks the code used and returns it, if it belongs to `clientId`, is unused, unexpired and
   * its grant is not revoked — all in one UPDATE. Undefined otherwise (see `diagnose`).
   */
  /**
   * The signed-in user's authorization step in one statement: reads the user and their consent
   * for this client and, when the consent covers every requested scope, creates the grant and
   * the code. Without a user the caller shows the login page; without enough consent, the
   * consent page (and nothing was written).
   */
  async issueIfConsented(
    input: NewAuthorizationCode,
  ): Promise<{ user?: SignedInUser; issued?: { code: string; grantId: string } }> {
    const code = randomToken(32);
    const grantId = randomToken(16);
    const [row] = await queryRows<{ id: number; username: string; scope: string | null; issued: boolean }>(
      this.db,
      sql`
        with signed_in as (
          select u.id, u.username, c.scope
          from ${users} u left join ${consents} c on c.user_id = u.id and c.client_id = ${input.clientId}
          where u.id = ${input.userId}
        ), consented as (
          select id from signed_in
          where string_to_array(coalesce(scope, ''), ' ') @> string_to_array(${input.scope}, ' ')
        ), new_grant as (
          insert into ${grants} (id, client_id, user_id, scope, resources)
          select ${grantId}, ${input.clientId}, id, ${input.scope}, ${textArray(input.resources)} from consented
          returning id
        ), new_code as (
          insert into ${authorizationCodes}
            (code_hash, grant_id, client_id, user_id, redirect_uri, scope, code_challenge, code_challenge_method, expires_at)
          select ${sha256(code)}, new_grant.id, ${input.clientId}, ${input.userId}, ${input.redirectUri}, ${input.scope},
                 ${input.codeChallenge}, ${input.codeChallengeMethod}, now() + make_interval(secs => ${this.ttlSeconds})
          from new_grant
          returning 1
        )
        select id, username, scope, exists(select 1 from consented) as issued from signed_in`,
    ).catch((error: unknown) => {
      // The user (or client) was deleted while this ran: the session's account is gone.
      if (isForeignKeyViolation(error)) return [];
      throw error;
    });
    if (!row) return {};
    const user = { userId: row.id, username: row.username, consentedScopes: new Set(parseScope(row.scope)) };
    return row.issued ? { user, issued: { code, grantId } } : { user };
  }

  async redeem(code: string, clientId: string, refreshToken?: NewRefreshToken): Promise<RedeemedCode | undefined> {
    const [row] = await queryRows<{
      grant_id: string;
      user_id: number;
      scope: string;
      redirect_uri: string | null;
      code_challenge: string | null;
      code_challenge_method: string | null;
      resources: string[] | null;
    }>(
      this.db,
      sql`
        with redeemed as (
          update ${authorizationCodes} set consumed_at = now()
          where code_hash = ${sha256(code)} and client_id = ${clientId}
            and consumed_at is null and expires_at > now()
            and not exists (select 1 from ${grants} g where g.id = ${authorizationCodes.grantId} and g.revoked_at is not null)
          returning grant_id, client_id, user_id, scope, redirect_uri, code_challenge, code_challenge_method
        )${refreshToken ? sql`, issued as (${insertRefreshTokenFrom(sql`redeemed`, refreshToken)})` : sql``}
        select r.grant_id, r.user_id, r.scope, r.redirect_uri, r.code_challenge, r.code_challenge_method, g.resources
        from redeemed r join ${grants} g on g.id = r.grant_id`,
    );
    if (!row) return undefined;
    return {
      grantId: row.grant_id,
      userId: row.user_id,
      scope: row.scope,
      resources: row.resources ?? [],
      redirectUri: row.redirect_uri,
      codeChallenge: row.code_challenge,
      codeChallengeMethod: row.code_challenge_method,
    };
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
