/**
 * OpenID Connect Back-Channel Logout 1.0, fire-and-forget: failures are only logged. Against SSRF our own lookup refuses
 * special-purpose addresses and the connection goes to exactly the address checked, so DNS rebinding cannot swap it.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { isSpecialPurposeAddress } from '../../http/special-purpose-addresses.js';
import { securityEventCounter } from '../../http/metrics.js';
import { randomUUID } from 'node:crypto';
import type { OAuthContext } from '../context.js';
import { subjectFor } from './subject.js';
import { idTokenAlg } from './id-token.js';

export const LOGOUT_TOKEN_TYP = 'logout+jwt';
export const BACKCHANNEL_LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout';
const TIMEOUT_MS = 5_000;

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

function guardedLookup(allowPrivate: boolean) {
  return function lookup(hostname: string, options: object, callback: LookupCallback): void {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '');
      const list = addresses as LookupAddress[];
      const refused = list.find((a) => !allowPrivate && isSpecialPurposeAddress(a.address));
      if (refused || list.length === 0) {
        return callback(Object.assign(new Error(`refusing to connect to ${hostname}: not a public address`), { code: 'EADDRNOTAVAIL' }), '');
      }
      if ((options as { all?: boolean }).all) return callback(null, list);
      callback(null, list[0]!.address, list[0]!.family);
    });
  };
}

export interface DeliveryOptions {
  /** Development only: loopback and private addresses may be reached. */
  allowPrivate: boolean;
  /** For the whole delivery, from the lookup to the status line. */
  timeoutMs?: number;
}

/**
 * POSTs one Logout Token (§2.5) and answers the receiver's status. The deadline covers the whole exchange: a socket
 * timeout alone only measures silence, so a receiver trickling its answer a byte at a time would hold the connection for
 * ever. The body is never read, so none can keep it open either.
 */
export function postLogoutToken(uri: string, logoutToken: string, { allowPrivate, timeoutMs = TIMEOUT_MS }: DeliveryOptions): Promise<number> {
  const url = new URL(uri);
  const body = new URLSearchParams({ logout_token: logoutToken }).toString();
  const transport = url.protocol === 'https:' ? https : http;
  // An IP literal never goes through `lookup`, so it is checked here.
  if (isIP(url.hostname.replace(/^\[|\]$/g, '')) !== 0 && !allowPrivate && isSpecialPurposeAddress(url.hostname)) {
    return Promise.reject(new Error(`refusing to connect to ${url.hostname}: not a public address`));
  }
  return new Promise((resolve, reject) => {
    const req = transport.request(
      url,
      {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Length': Buffer.byteLength(body) },
        lookup: guardedLookup(allowPrivate) as never,
      },
      (res) => {
        resolve(res.statusCode ?? 0);
        res.destroy();
      },
    );
    const deadline = setTimeout(() => req.destroy(new Error(`back-channel logout timed out after ${timeoutMs} ms`)), timeoutMs);
    req.on('close', () => clearTimeout(deadline));
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Which sessions a Logout Token ends at the client. A token without `sid` ends all of the user's sessions there (§2.4),
 * so one browser session's end always names its `sid`; "Sign out everywhere" names none, except to clients that
 * registered backchannel_logout_session_required, which hear of this browser's session (the others' ids are kept nowhere).
 */
export type LogoutScope = { browserSessionId: string; everywhere: boolean };

/**
 * Signs the Logout Token for one client (§2.4): iss, aud, iat, exp, jti, sub, events, and `sid` as above; never a nonce.
 * §2.4 has it signed as ID Tokens are, so with the client's ID Token algorithm.
 */
export async function logoutToken(
  oauth: OAuthContext,
  client: { id: string; subjectType: string; redirectUris: string[]; backchannelLogoutSessionRequired?: boolean; idTokenSignedResponseAlg?: string | null },
  userId: number,
  scope?: LogoutScope,
): Promise<string> {
  const key = await oauth.keys.signingKey(idTokenAlg(client));
  const now = Math.floor(Date.now() / 1000);
  return key.sign(
    {
      iss: oauth.issuer,
      aud: client.id,
      iat: now,
      exp: now + 120,
      jti: randomUUID(),
      sub: subjectFor(client, userId, oauth.pairwiseSecret),
      ...(scope && (!scope.everywhere || client.backchannelLogoutSessionRequired) ? { sid: oauth.sessionIds.forClient(client.id, scope.browserSessionId) } : {}),
      events: { [BACKCHANNEL_LOGOUT_EVENT]: {} },
    },
    LOGOUT_TOKEN_TYP,
  );
}

/**
 * The clients that took part in one browser session: those holding a grant it authorized (Back-Channel Logout has the
 * OP notify the RPs the user logged in to through that session). Another allowed client would read a token for a session it never
 * had as one for the user, and a client that does not track `sid` would end all of the user's sessions there.
 */
async function partOfSession<T extends { id: string }>(oauth: OAuthContext, userId: number, targets: T[], browserSessionId: string): Promise<T[]> {
  const sids = targets.map((target) => oauth.sessionIds.forClient(target.id, browserSessionId));
  const withGrants = await oauth.consents.sessionsWithGrants(userId, sids);
  return targets.filter((_target, i) => withGrants.has(sids[i]!));
}

/**
 * Notifies the clients with a back-channel logout URI that the browser session ended (those that took part in it) or,
 * `everywhere`, that all of the user's sessions did (every allowed client); returns at once, the POSTs happen in the
 * background.
 */
export function notifyBackchannelLogout(oauth: OAuthContext, userId: number, scope?: LogoutScope): Promise<void> {
  const done = (async () => {
    const allowed = await oauth.consents.backchannelLogoutTargets(userId);
    const targets = scope && !scope.everywhere ? await partOfSession(oauth, userId, allowed, scope.browserSessionId) : allowed;
    await Promise.all(
      targets.map(async (target) => {
        try {
          const client = {
            id: target.id,
            subjectType: target.subject_type,
            redirectUris: target.redirect_uris,
            backchannelLogoutSessionRequired: target.backchannel_logout_session_required,
            idTokenSignedResponseAlg: target.id_token_signed_response_alg,
          };
          const token = await logoutToken(oauth, client, userId, scope);
          const status = await postLogoutToken(target.backchannel_logout_uri, token, { allowPrivate: oauth.backchannelLogoutAllowPrivate });
          if (status !== 200 && status !== 204) throw new Error(`answered HTTP ${status}`);
        } catch (error) {
          // In the background, with no request: logged here rather than through oauth.events, and counted as it would.
          securityEventCounter.inc({ event: 'backchannel_logout_failed', reason: '' });
          oauth.logger.warn({ err: error, event: 'backchannel_logout_failed', clientId: target.id }, 'back-channel logout failed');
        }
      }),
    );
  })().catch((error: unknown) => oauth.logger.warn({ err: error }, 'back-channel logout failed'));
  return done;
}
