/**
 * DEMO=true on PostgreSQL, several instances started at the same moment on an empty database: the demo seed checks
 * before it writes (is there a demo user, are there products), so without taking turns all but one instance died with
 * "the username demo is taken" and the catalogue could be inserted twice.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import postgres from 'postgres';
import { createPostgresDatabase, TEST_DATABASE_URL } from '../support/databases.js';
import { runCli, startServerProcess, type ServerProcess } from '../support/processes.js';
import { DEMO_PRODUCT_COUNT } from '../../src/demo/seed.js';
import { openDatabase } from '../../src/db/database.js';

describe.runIf(TEST_DATABASE_URL)('the demo seed on one PostgreSQL database from several processes at once', () => {
  let database: { url: string; drop(): Promise<void> };
  let sql: postgres.Sql;
  let servers: ServerProcess[] = [];

  beforeAll(async () => {
    database = await createPostgresDatabase();
    sql = postgres(database.url, { max: 1, onnotice: () => {} });
  });
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop('SIGKILL')));
    await sql?.end();
    await database?.drop();
  });

  async function expectOneDemo(on = sql): Promise<void> {
    const [counts] = await on`select (select count(*)::int from products) as products, (select count(*)::int from users) as users,
                                      (select count(*)::int from clients where id = 'demo-client') as clients`;
    expect(counts).toEqual({ products: DEMO_PRODUCT_COUNT, users: 1, clients: 1 });
  }

  it('three `serve` processes started together on an empty database all come up, with one demo data set', async () => {
    const env = { DATABASE_URL: database.url, DEMO: 'true', ISSUER: 'http://localhost:3999' };
    const started = await Promise.allSettled([startServerProcess(env), startServerProcess(env), startServerProcess(env)]);
    servers = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    expect(started.map((result) => (result.status === 'fulfilled' ? 'up' : String(result.reason).split('\n').slice(-3).join(' ')))).toEqual(['up', 'up', 'up']);
    const secrets = new Set(servers.map((server) => /Demo client secret: (\S+)/.exec(server.stderr())?.[1]));
    expect(secrets.size).toBe(1);
    await expectOneDemo();
  });

  it('`seed --demo` run by several processes at once on a migrated, empty database adds the demo data once', async () => {
    const fresh = await createPostgresDatabase();
    const freshSql = postgres(fresh.url, { max: 1, onnotice: () => {} });
    try {
      expect((await runCli(['migrate'], { DATABASE_URL: fresh.url })).code).toBe(0);
      const results = await Promise.all(Array.from({ length: 3 }, () => runCli(['seed', '--demo', '--json'], { DATABASE_URL: fresh.url })));
      expect(results.map((result) => [result.code, result.stderr])).toEqual(Array.from({ length: 3 }, () => [0, '']));
      await expectOneDemo(freshSql);
    } finally {
      await freshSql.end();
      await fresh.drop();
    }
  });

  it('exclusively runs one caller at a time across connections, and the next once the first is done', async () => {
    const [first, second] = await Promise.all([openDatabase({ databaseUrl: database.url, poolSize: 1 }), openDatabase({ databaseUrl: database.url, poolSize: 1 })]);
    try {
      const events: string[] = [];
      let release!: () => void;
      const holding = new Promise<void>((resolve) => (release = resolve));
      let entered!: () => void;
      const firstInside = new Promise<void>((resolve) => (entered = resolve));
      const one = first.exclusively(async () => {
        events.push('first in');
        entered();
        await holding;
        events.push('first out');
      });
      await firstInside;
      const two = second.exclusively(async () => {
        events.push('second in');
        // The pool is usable inside: the lock lives on a connection of its own.
        await second.ping();
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(events).toEqual(['first in']);
      release();
      await Promise.all([one, two]);
      expect(events).toEqual(['first in', 'first out', 'second in']);
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
  });
});
