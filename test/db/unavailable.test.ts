/**
 * A statement that fails because the database went away is told apart from one that fails for what it asked, so the
 * faces can answer 503 (try again) rather than 500. The database really goes away here: the embedded one is closed, and
 * PostgreSQL is reached through a TCP relay that is cut and restored, as a network partition or a server restart would.
 */
import { describe, expect, it } from 'vitest';
import net from 'node:net';
import { sql } from 'drizzle-orm';
import { openDatabase } from '../../src/db/database.js';
import { isDatabaseUnavailable } from '../../src/db/errors.js';
import { createPostgresDatabase, TEST_DATABASE_URL } from '../support/databases.js';

const failure = (promise: Promise<unknown>) => promise.then(() => undefined, (error: unknown) => error);

/** Relays TCP to PostgreSQL until cut: then every connection is dropped and new ones are refused, until restored. */
async function relay(target: URL) {
  const sockets = new Set<net.Socket>();
  let server: net.Server | undefined;
  let port = 0;
  const open = () =>
    new Promise<void>((resolve) => {
      server = net.createServer((client) => {
        const upstream = net.connect(Number(target.port || 5432), target.hostname);
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on('error', () => {});
          socket.on('close', () => (client.destroy(), upstream.destroy()));
        }
        client.pipe(upstream).pipe(client);
      });
      server.listen(port, '127.0.0.1', () => {
        port = (server!.address() as net.AddressInfo).port;
        resolve();
      });
    });
  await open();
  return {
    get port() {
      return port;
    },
    cut: () =>
      new Promise<void>((resolve) => {
        server!.close(() => resolve());
        for (const socket of sockets) socket.destroy();
        sockets.clear();
      }),
    restore: open,
  };
}

describe('telling an unavailable database from a failed statement', () => {
  it('recognises a statement on a closed embedded database, and not a statement that is wrong', async () => {
    const database = await openDatabase({ dataDir: 'memory://' });
    const wrong = await failure(database.db.execute(sql`select * from no_such_table`));
    expect(wrong).toBeInstanceOf(Error);
    expect(isDatabaseUnavailable(wrong)).toBe(false);
    await database.close();
    const closed = await failure(database.db.execute(sql`select 1`));
    expect(closed).toBeInstanceOf(Error);
    expect(isDatabaseUnavailable(closed)).toBe(true);
  });

  // A standby after a failover, or a role set to default_transaction_read_only: writes may work again once the
  // primary is back, so they are a 503 with Retry-After, not a 500.
  it.runIf(TEST_DATABASE_URL)('recognises a server that takes no writes (read-only transactions)', async () => {
    const created = await createPostgresDatabase();
    const database = await openDatabase({ databaseUrl: created.url, poolSize: 1 });
    try {
      await database.migrate();
      const readOnly = await failure(
        database.db.transaction(async (tx) => tx.execute(sql`insert into instance_secrets (name, value) values ('probe', 'x')`), { accessMode: 'read only' }),
      );
      expect(isDatabaseUnavailable(readOnly)).toBe(true);
    } finally {
      await database.close();
      await created.drop();
    }
  });

  it.runIf(TEST_DATABASE_URL)('recognises a PostgreSQL server that went away, and not a constraint violation', async () => {
    const created = await createPostgresDatabase();
    const target = new URL(created.url);
    const tcp = await relay(target);
    const url = new URL(created.url);
    url.host = `127.0.0.1:${tcp.port}`;
    const database = await openDatabase({ databaseUrl: url.href, poolSize: 2 });
    try {
      await database.migrate();
      await database.db.execute(sql`create table probe (id int primary key)`);
      await database.db.execute(sql`insert into probe values (1)`);
      const duplicate = await failure(database.db.execute(sql`insert into probe values (1)`));
      expect(isDatabaseUnavailable(duplicate)).toBe(false);

      await tcp.cut();
      const away = await failure(database.db.execute(sql`select 1`));
      expect(away).toBeInstanceOf(Error);
      expect(isDatabaseUnavailable(away)).toBe(true);

      await tcp.restore();
      await expect(database.db.execute(sql`select 1`)).resolves.toBeDefined();
    } finally {
      await database.close();
      await tcp.cut();
      await created.drop();
    }
  });
});
