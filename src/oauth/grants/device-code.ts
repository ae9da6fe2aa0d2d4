/**
 * RFC 8628 §3.4, §3.5. A code polled again after it was redeemed is refused without revoking the tokens: with polling,
 * a late duplicate from the rightful device is the usual cause.
 */
import { AuthorizationPending, DeviceAccessDenied, ExpiredToken, InvalidGrant, SlowDown } from '../errors.js';
import { DEVICE_CODE_GRANT_TYPE } from '../stores/clients.js';
import { issuesRefreshTokens, refreshTokenJkt, refuseResourcesOutsideGrant, requestedAudience, tokenResponse, type GrantRequest, type TokenResponse } from './grant.js';

export const grantType = DEVICE_CODE_GRANT_TYPE;

export const parameters = ['device_code'] as const;

async function refuse({ oauth, client, req }: GrantRequest, deviceCode: string): Promise<never> {
  const poll = await oauth.deviceCodes.poll(deviceCode, client.id);
  // Unknown and another client's read the same: the caller learns nothing about others' codes.
  if (!poll) throw new InvalidGrant('the device code is not valid');
  if (poll.expired) throw new ExpiredToken('the device code has expired; start a new device authorization request');
  switch (poll.status) {
    case 'pending':
      if (poll.tooFast) {
        oauth.events(req, 'device_code_rejected', { clientId: client.id, reason: 'slow_down' });
        throw new SlowDown(`polling too fast: wait at least ${poll.interval} seconds between requests`);
      }
      throw new AuthorizationPending('the user has not yet approved or denied the request');
    case 'denied':
      throw new DeviceAccessDenied('the user denied the request');
    case 'consumed':
      oauth.events(req, 'device_code_rejected', { clientId: client.id, reason: 'already_used' });
      throw new InvalidGrant('the device code has already been used');
    case 'approved':
      // The user approved after this poll's redeem looked (a deleted user's code is gone with them): not the terminal
      // invalid_grant, which would make the device give up on a code the user has just approved; the next poll redeems it.
      throw new AuthorizationPending('the user has just approved the request; poll again for the tokens');
  }
}

export async function handler(request: GrantRequest): Promise<TokenResponse> {
  const { oauth, client, params, req, dpop } = request;
  const deviceCode = params.require('device_code');
  // RFC 8707: within the resources of the device authorization request, as the code grant is within its grant's.
  await refuseResourcesOutsideGrant(oauth, params, () => oauth.deviceCodes.requestedResources(deviceCode, client.id));
  // RFC 9449 §5: a public client's refresh token is bound to the key of the proof it was issued with, as at the code grant.
  const refreshToken = issuesRefreshTokens(client) ? oauth.refreshTokens.mint(refreshTokenJkt(client, dpop)) : undefined;
  const redeemed = await oauth.deviceCodes.redeem(deviceCode, client.id, refreshToken);
  if (!redeemed) return refuse(request, deviceCode);
  // Already checked before redeeming (a device code's resources do not change), so this only computes the audience.
  const audience = requestedAudience(oauth, params, redeemed.resources);
  const grant = { grantId: redeemed.grantId, userId: redeemed.userId, scope: redeemed.scope, audience };
  oauth.events(req, 'device_code_redeemed', { clientId: client.id, userId: redeemed.userId, grantId: redeemed.grantId });
  return tokenResponse(oauth, client, grant, refreshToken?.token, dpop);
}
