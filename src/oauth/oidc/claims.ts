/** The user's claims per OIDC scope (Core §5.4), from the user record. */
import type { User } from '../stores/users.js';

export interface UserClaims {
  name?: string;
  preferred_username?: string;
  email?: string;
  email_verified?: boolean;
}

/** OIDC `claims_supported` beyond the ID Token's own. */
export const PROFILE_CLAIMS = ['name', 'preferred_username', 'email', 'email_verified'] as const;

export function userClaims(user: Pick<User, 'username' | 'displayName' | 'email' | 'emailVerified'>, scopes: ReadonlySet<string>): UserClaims {
  const claims: UserClaims = {};
  if (scopes.has('profile')) {
    claims.preferred_username = user.username;
    if (user.displayName) claims.name = user.displayName;
  }
  if (scopes.has('email') && user.email) {
    claims.email = user.email;
    claims.email_verified = user.emailVerified;
  }
  return claims;
}
