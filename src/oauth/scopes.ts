/** The scopes Fieldgate knows, with the plain words the consent page shows for each. */
export const SCOPES = {
  'products:read': 'See the product catalogue',
  'orders:read': 'See your orders',
  'orders:write': 'Place orders and change them',
} as const;

export type Scope = keyof typeof SCOPES;

export const ALL_SCOPES = Object.keys(SCOPES) as Scope[];

export function isScope(value: string): value is Scope {
  return Object.hasOwn(SCOPES, value);
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
