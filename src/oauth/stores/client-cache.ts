// Clients are cached for CLIENT_CACHE_MS, so a CLI change reaches a running server within that time; unknown ids are
// never cached, so a new client works at once.
import { LRUCache } from 'lru-cache';
import { POLICY } from '../../policy.js';
import type { Client, ClientStore } from './clients.js';
import { looksLikeMetadataDocumentUrl, type ClientMetadataDocuments } from '../client-metadata-documents.js';

export const CLIENT_CACHE_MS = POLICY.clientCacheMs.value;
const MAX_CACHED_CLIENTS = POLICY.clientCacheEntries.value;
/** Longer ids are not looked up at all: ours are 22 characters, the demo's 11; metadata document URLs up to 2000. */
const MAX_CLIENT_ID_LENGTH = 200;
const MAX_URL_CLIENT_ID_LENGTH = 2_000;

export class ClientCache {
  private readonly cache = new LRUCache<string, Client>({ max: MAX_CACHED_CLIENTS, ttl: CLIENT_CACHE_MS });
  /** Counts forget() calls: a read under way when one happens may have read the old row, so it is not cached. */
  private generation = 0;

  constructor(
    private readonly clients: ClientStore,
    private readonly documents?: ClientMetadataDocuments,
  ) {}

  async find(id: string): Promise<Client | undefined> {
    const maxLength = looksLikeMetadataDocumentUrl(id) ? MAX_URL_CLIENT_ID_LENGTH : MAX_CLIENT_ID_LENGTH;
    if (id.length > maxLength || id.includes('\0')) return undefined;
    const client = this.cache.get(id) ?? (await this.reread(id));
    // With CLIENT_ID_METADATA_DOCUMENTS=false such clients are unknown; their rows stay, for when it is turned on again.
    if (client?.registrationType === 'metadata_document' && !this.documents) return undefined;
    return client;
  }

  /**
   * The stored client, read past the cache and cached again: on a miss, and for an answer the cached copy would refuse (a
   * secret rotated on another instance is new here), so the refusal is never the cache's doing.
   */
  async reread(id: string): Promise<Client | undefined> {
    const generation = this.generation;
    const client = await this.clients.find(id);
    if (generation === this.generation) {
      if (client) this.cache.set(id, client);
      else this.cache.delete(id);
    }
    return client;
  }

  /** A registered client, or the one a client ID metadata document describes (fetched for the client at `requesterIp`). */
  async resolve(id: string, requesterIp?: string): Promise<Client | undefined> {
    const stored = await this.find(id);
    if (!this.documents || !looksLikeMetadataDocumentUrl(id)) return stored;
    const client = await this.documents.resolve(id, stored, requesterIp);
    if (client !== stored) this.cache.set(id, client);
    return client;
  }

  forget(id: string): void {
    this.generation++;
    this.cache.delete(id);
  }

  verifySecret(client: Client, secret: string): boolean {
    return this.clients.verifySecret(client, secret);
  }

}
