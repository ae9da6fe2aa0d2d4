export const SCOPES = {
  'products:read': 'See the product catalogue',
  'orders:read': 'See your orders',
  'orders:write': 'Place orders and change them',
} as const;

/** OIDC Core §5.4, §11: open to every code-flow client; they say who the user is, not what the app may do. */
export const IDENTITY_SCOPES = {
  openid: 'Know who you are when you sign in',
  profile: 'See your name',
  email: 'See your email address',
  offline_access: 'Keep access while you are not using it',
} as const;

export type ApiScope = keyof typeof SCOPES;
export type IdentityScope = keyof typeof IDENTITY_SCOPES;
export type Scope = ApiScope | IdentityScope;

export const ALL_SCOPES = Object.keys(SCOPES) as ApiScope[];

export const SUPPORTED_SCOPES: readonly Scope[] = [...ALL_SCOPES, ...(Object.keys(IDENTITY_SCOPES) as IdentityScope[])];

export function isScope(value: string): value is ApiScope {
  return Object.hasOwn(SCOPES, value);
}

export function isIdentityScope(value: string): value is IdentityScope {
  return Object.hasOwn(IDENTITY_SCOPES, value);
}

/**
 * OIDC Core §5.4's standard scopes this server holds no claims for. In an OpenID request they are dropped, as §3.1.2.1
 * asks of scope values not understood ("SHOULD be ignored"): RPs that ask for every standard scope by default still
 * sign in. Anything else unknown stays invalid_scope.
 */
const UNHELD_OPENID_SCOPES: ReadonlySet<string> = new Set(['address', 'phone']);

export function withoutUnheldOpenIdScopes(requested: readonly string[]): string[] {
  return requested.includes('openid') ? requested.filter((s) => !UNHELD_OPENID_SCOPES.has(s)) : [...requested];
}

/** A scope this server knows (`scopes_supported`): an API scope or an OpenID one. */
export function isSupportedScope(value: string): value is Scope {
  return isScope(value) || isIdentityScope(value);
}

export function describeScope(scope: string): string {
  if (isScope(scope)) return SCOPES[scope];
  if (isIdentityScope(scope)) return IDENTITY_SCOPES[scope];
  return scope;

}

/** A token with no user (client_credentials) is never granted these, and the resource side refuses it what they guard. */
export const USER_SCOPES: readonly Scope[] = ['orders:read', 'orders:write'];

export function needsUser(scope: string): boolean {
  return (USER_SCOPES as readonly string[]).includes(scope);
}

export function parseScope(scope: string | undefined | null): string[] {
  if (!scope) return [];
  return [...new Set(scope.split(' ').filter(Boolean))];
}

export function formatScope(scopes: Iterable<string>): string {
  return [...new Set(scopes)].join(' ');
}
