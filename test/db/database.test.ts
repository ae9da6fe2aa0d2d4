import { createConnection, createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { openDatabase } from '../../src/db/database.js';
import { createPostgresDatabase, TEST_DATABASE_URL } from '../support/databases.js';

/** A TCP relay on the IPv6 loopback to the test server, which listens on IPv4 only on these machines. */
async function relayOnIpv6Loopback(target: URL): Promise<{ server: Server; port: number; connections: () => number }> {
  let connections = 0;
  const server = createServer((client) => {
    connections += 1;
    const upstream = createConnection({ host: target.hostname, port: Number(target.port || 5432) });
    client.pipe(upstream).pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '::1', resolve));
  return { server, port: (server.address() as { port: number }).port, connections: () => connections };
}

describe.skipIf(!TEST_DATABASE_URL)('DATABASE_URL with an IPv6 literal host', () => {
  let relay: Awaited<ReturnType<typeof relayOnIpv6Loopback>>;
  let database: Awaited<ReturnType<typeof createPostgresDatabase>>;

  beforeAll(async () => {
    database = await createPostgresDatabase();
    relay = await relayOnIpv6Loopback(new URL(database.url));
  });
  afterAll(async () => {
    relay?.server.close();
    await database?.drop();
  });

  it('connects to postgres://…@[::1]:PORT/db, migrates and answers queries', async () => {
    const url = new URL(database.url);
    url.host = `[::1]:${relay.port}`;
    const opened = await openDatabase({ databaseUrl: url.href, poolSize: 2 });
    try {
      await opened.migrate();
      const result = await opened.db.execute(sql`select current_database() as name`);
      const rows = ((result as { rows?: unknown[] }).rows ?? result) as { name: string }[];
      expect(rows[0]!.name).toBe(new URL(database.url).pathname.slice(1));
      expect(opened.location).toContain(`[::1]:${relay.port}`);
      expect(relay.connections()).toBeGreaterThanOrEqual(2);
    } finally {
      await opened.close();
    }
  });
});
