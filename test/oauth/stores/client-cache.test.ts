/**
 * The client cache: a change made through this instance (an RFC 7592 update or delete) forgets the cached client, and
 * a read that was under way when it did — and so may hold the row as it was — does not put the old client back.
 */
import { expect, it } from 'vitest';
import { ClientCache } from '../../../src/oauth/stores/client-cache.js';
import type { ClientStore, Client } from '../../../src/oauth/stores/clients.js';
import { readClientMetadata } from '../../../src/oauth/client-metadata.js';
import { describeEachDatabase } from '../../support/runtime.js';
import { buildClient } from '../../support/oauth.js';

describeEachDatabase('client cache', (context) => {
  /** A store whose next read returns its row only when released: the row as it was when read. */
  function storeWithHeldRead(): { store: ClientStore; readDone: Promise<void>; release(): void } {
    const stored = context().runtime.clients;
    const store = Object.create(stored) as ClientStore;
    const find = stored.find.bind(stored);
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let readDone!: () => void;
    const done = new Promise<void>((resolve) => (readDone = resolve));
    let held = true;
    store.find = async (id: string): Promise<Client | undefined> => {
      const row = await find(id);
      if (held) {
        held = false;
        readDone();
        await released;
      }
      return row;
    };
    return { store, readDone: done, release };
  }

  it('does not cache a client read before a forget() that came while the read was under way', async () => {
    const { runtime } = context();
    const client = await buildClient(runtime, { name: 'Before' });
    const { store, readDone, release } = storeWithHeldRead();
    const cache = new ClientCache(store);

    const inFlight = cache.find(client.id);
    await readDone;
    await runtime.clients.update(client.id, { name: 'After' });
    cache.forget(client.id);
    release();
    expect((await inFlight)?.name).toBe('Before');

    expect((await cache.find(client.id))?.name).toBe('After');
  });

  it('knows no client from a metadata document once CLIENT_ID_METADATA_DOCUMENTS is off, though its row stays', async () => {
    const { runtime } = context();
    const url = `https://agent-${Date.now()}.example/client.json`;
    const metadata = readClientMetadata({ client_id: url, redirect_uris: ['https://agent.example/cb'], token_endpoint_auth_method: 'none' }, { defaultAuthMethod: 'none' });
    await runtime.clients.upsertMetadataDocument(url, metadata, new Date(Date.now() + 60_000));
    // A cache with no documents to fetch is how a server with the setting off is built (context.ts).
    const off = new ClientCache(runtime.clients);
    expect(await off.find(url)).toBeUndefined();
    expect(await off.resolve(url)).toBeUndefined();
    expect(await runtime.clients.find(url)).toBeDefined();
  });
});
