/** Security events carry identifiers only, never a password, secret, code or token, so the log can go to a SIEM as it is. */
import type { Request } from 'express';
import type { Logger } from '../logger.js';
import { securityEventCounter } from '../http/metrics.js';

export type SecurityEventName =
  | 'login_succeeded'
  | 'login_failed'
  | 'login_throttled'
  | 'consent_granted'
  | 'consent_denied'
  | 'csrf_rejected'
  | 'code_issued'
  | 'code_redeemed'
  | 'code_replayed'
  | 'code_rejected'
  | 'client_authentication_failed'
  | 'refresh_token_rotated'
  | 'refresh_token_reuse_detected'
  | 'refresh_token_reuse_within_grace'
  | 'refresh_token_rejected'
  | 'token_revoked'
  | 'consent_revoked'
  | 'sessions_ended'
  | 'password_changed'
  | 'logout'
  | 'backchannel_logout_failed'
  | 'client_registered'
  | 'client_deleted'

  | 'client_credentials_issued'
  | 'device_code_issued'
  | 'device_code_approved'
  | 'device_code_denied'
  | 'device_code_redeemed'
  | 'device_code_rejected'
  | 'device_code_throttled';

export interface SecurityEventFields {
  clientId?: string | undefined;
  userId?: number | undefined;
  grantId?: string | undefined;
  reason?: string | undefined;
  tokenType?: 'access_token' | 'refresh_token' | undefined;
  /** Free-text detail for the operator (not a metric label), e.g. why a client assertion failed. */
  detail?: string | undefined;
}

export type SecurityEvents = (req: Request, event: SecurityEventName, fields?: SecurityEventFields) => void;

const WARNINGS = new Set<SecurityEventName>([
  'login_throttled',
  'csrf_rejected',
  'code_replayed',
  'refresh_token_reuse_detected',
  'device_code_throttled',
]);

export function securityEvents(logger: Logger): SecurityEvents {
  const log = logger.child({ component: 'oauth' });
  return (req, event, fields = {}) => {
    const record = { event, ...fields, reqId: req.id, ip: req.ip };
    securityEventCounter.inc({ event, reason: fields.reason ?? '' });
    if (WARNINGS.has(event)) log.warn(record, `security event ${event}`);
    else log.info(record, `security event ${event}`);
  };
}
