/**
 * Subject identifiers (OIDC Core §8). `public`: the user id, the same for every client (and
 * the `sub` of access tokens). `pairwise`: HMAC-SHA-256 under a per-deployment key of the
 * client's sector (the host of its redirect URIs, §8.1) and the user id, so two clients on
 * different hosts cannot correlate a user, and one host always sees the same value.
 */
import { hmacSha256 } from '../../crypto/secrets.js';
import type { Client } from '../stores/clients.js';

export const SUBJECT_TYPES = ['public', 'pairwise'] as const;
export type SubjectType = (typeof SUBJECT_TYPES)[number];

export function isSubjectType(value: string): value is SubjectType {
  return (SUBJECT_TYPES as readonly string[]).includes(value);
}

/** The sector of a pairwise client: the one host all its redirect URIs share. */
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
