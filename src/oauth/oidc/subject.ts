/**
 * Subject identifiers (OIDC Core §8): `public` is the user id; `pairwise` is an HMAC of the client's sector (§8.1) and the
 * user id, so clients on different hosts cannot correlate a user while one host always sees the same value.
 */
import { hmacSha256 } from '../../crypto/secrets.js';
import type { Client } from '../stores/clients.js';

export const SUBJECT_TYPES = ['public', 'pairwise'] as const;
export type SubjectType = (typeof SUBJECT_TYPES)[number];

export function isSubjectType(value: string): value is SubjectType {
  return (SUBJECT_TYPES as readonly string[]).includes(value);
}

export function sectorOf(redirectUris: readonly string[]): string | undefined {
  const hosts = new Set(redirectUris.map((uri) => new URL(uri).hostname));
  return hosts.size === 1 ? [...hosts][0] : undefined;
}

export function subjectFor(client: Pick<Client, 'subjectType' | 'redirectUris'>, userId: number, pairwiseKey: string): string {
  if (client.subjectType !== 'pairwise') return String(userId);
  // Registration refuses pairwise clients spanning several hosts; the first host is the fallback.
  const sector = sectorOf(client.redirectUris) ?? new URL(client.redirectUris[0]!).hostname;
  return hmacSha256(pairwiseKey, `${sector}\n${userId}`);
}
