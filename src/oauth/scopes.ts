/** The scopes Fieldgate knows, with the plain words the consent page shows for each. */
export const SCOPES = {
  'products:read': 'See the product catalogue',
  'orders:read': 'See your orders',
  'orders:write': 'Place orders and change them',
} as const;

/**
 * OpenID Connect scopes (OIDC Core §5.4, §11). Every client that may use the code flow may
 * request them; they say who the user is, not what the app may do in the API.
 */
export const IDENTITY_SCOPES = {
  openid: 'Know who you are when you sign in',
  profile: 'See your name',
  email: 'See your email address',
  offline_access: 'Keep access while you are not using it',
} as const;

export type ApiScope = keyof typeof SCOPES;
export type IdentityScope = keyof typeof IDENTITY_SCOPES;
export type Scope = ApiScope | IdentityScope;

/** The API scopes: what a client may be registered for, and its default. */
export const ALL_SCOPES = Object.keys(SCOPES) as ApiScope[];

/** Every scope this server knows, for the metadata document. */
export const SUPPORTED_SCOPES: readonly Scope[] = [...ALL_SCOPES, ...(Object.keys(IDENTITY_SCOPES) as IdentityScope[])];

export function isScope(value: string): value is ApiScope {
  return Object.hasOwn(SCOPES, value);
}

export function isIdentityScope(value: string): value is IdentityScope {
  return Object.hasOwn(IDENTITY_SCOPES, value);
}

/** The consent page's plain words for a scope. */
export function describeScope(scope: string): string {
  if (isScope(scope)) return SCOPES[scope];
  if (isIdentityScope(scope)) return IDENTITY_SCOPES[scope];
  return scope;

}

/**
 * Scopes over a user's own data. A token with no user (client_credentials) is never granted
 * them, and the resource side refuses what they guard to such a token whatever its scopes.
 */
export const USER_SCOPES: readonly Scope[] = ['orders:read', 'orders:write'];

export function needsUser(scope: string): boolean {
  return (USER_SCOPES as readonly string[]).includes(scope);
}

/** Splits a space-delimited scope string (RFC 6749 §3.3) into its distinct tokens. */
export function parseScope(scope: string | undefined | null): string[] {
  if (!scope) return [];
  return [...new Set(scope.split(' ').filter(Boolean))];
}

export function formatScope(scopes: Iterable<string>): string {
  return [...new Set(scopes)].join(' ');
}
