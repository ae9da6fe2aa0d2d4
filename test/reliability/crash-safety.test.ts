/**
 * No acknowledged write is lost, on the embedded PGlite data directory and on
 * PostgreSQL: a stream of order creations and PATCHes runs against a `fieldgate serve` process
 * that is killed with SIGKILL in the middle of it; after a restart every change that got a 2xx
 * is in the data. And a SIGTERM under load lets the requests already in the server finish with
 * complete responses, refuses new connections and exits 0.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import postgres from 'postgres';
import { DATABASE_KINDS } from '../support/databases.js';
import { startServerProcess, type ServerProcess } from '../support/processes.js';
import { issueTestToken } from '../support/tokens.js';
import { connectionRefused, eventually, keepAliveAgent, parseJson, send, sleep } from '../support/reliability/http.js';
import { OrderApi, type OrderView } from '../support/reliability/orders.js';
import { createStorage, seedProducts, withSetupRuntime, type Storage } from '../support/reliability/setup.js';

const ISSUER = 'http://fieldgate.test';
const WRITERS = 6;
/** Acknowledged writes before the kill: enough for a stream, small enough for CI. */
const KILL_AFTER_ACKNOWLEDGED = 120;
/** Generous bound for a drained shutdown (README: in-flight requests get at most 10 s). */
const SHUTDOWN_BOUND_MS = 15_000;

type Change = { memo: string } | { status: 'paid' };

interface TrackedOrder {
  id: number;
  /** The state after the last acknowledged write. */
  acknowledged: { memo: string; status: string };
  /** A write sent but never answered (the server died under it): it may or may not have landed. */
  unanswered?: Change;
}

interface WriterResult {
  orders: TrackedOrder[];
  /** The memo of a creation that was sent but never answered. */
  unansweredCreate?: string;
  /** How the stream ended for this writer. */
  ending: string;
  /** Answers that were neither the expected 2xx nor a dead connection. */
  unexpected: string[];
}

function isConnectionLoss(error: unknown): 'cut' | 'refused' | undefined {
  const code = (error as NodeJS.ErrnoException).code;
  const message = (error as Error).message;
  if (code === 'ECONNREFUSED') return 'refused';
  if (code === 'ECONNRESET' || code === 'EPIPE' || /socket hang up|cut off|before it was complete/.test(message)) return 'cut';
  return undefined;
}

for (const kind of DATABASE_KINDS) {
  describe(`crash safety [${kind}]`, () => {
    let storage: Storage;
    let env: Record<string, string>;
    let token: string;
    let productId: number;
    const servers: ServerProcess[] = [];
    const start = async () => {
      const server = await startServerProcess(env);
      servers.push(server);
      return server;
    };

    beforeAll(async () => {
      storage = await createStorage(kind);
      env = { ...storage.env, ISSUER, DEMO: 'false' };
      await withSetupRuntime(env, async (runtime) => {
        productId = (await seedProducts(runtime, 1))[0]!;
        token = (await issueTestToken(runtime, { scope: 'orders:read orders:write' })).token;
      });
    });

    afterEach(async () => {
      // A failed test must not leave its server holding the data directory for the next one.
      for (const server of servers.splice(0)) await server.stop('SIGKILL');
    });

    afterAll(async () => {
      await storage?.destroy();
    });

    it('keeps every acknowledged order creation and PATCH across a SIGKILL in the middle of a write stream', async () => {
      const server = await start();
      const api = new OrderApi(server.url, token);
      let acknowledged = 0;
      let killed = false;

      const writer = async (w: number): Promise<WriterResult> => {
        const result: WriterResult = { orders: [], ending: 'running', unexpected: [] };
        for (let n = 0; !killed || n === 0; n++) {
          const memo = `w${w}-o${n}-v0`;
          let reply;
          try {
            reply = await api.create(productId, memo);
          } catch (error) {
            const loss = isConnectionLoss(error);
            if (!loss) throw error;
            result.unansweredCreate = memo;
            result.ending = `${loss} while creating`;
            return result;
          }
          if (reply.status !== 201) {
            result.unexpected.push(`POST /orders ${reply.status} ${reply.body.slice(0, 200)}`);
            return result;
          }
          const order: TrackedOrder = { id: parseJson<OrderView>(reply).id, acknowledged: { memo, status: 'pending' } };
          result.orders.push(order);
          if (++acknowledged >= KILL_AFTER_ACKNOWLEDGED && !killed) {
            killed = true;
            server.child.kill('SIGKILL');
          }
          for (let v = 1; v <= 3; v++) {
            const change: Change = v === 2 ? { status: 'paid' } : { memo: `w${w}-o${n}-v${v}` };
            try {
              reply = await api.patch(order.id, change);
            } catch (error) {
              const loss = isConnectionLoss(error);
              if (!loss) throw error;
              order.unanswered = change;
              result.ending = `${loss} while patching`;
              return result;
            }
            if (reply.status !== 200) {
              result.unexpected.push(`PATCH /orders/${order.id} ${reply.status} ${reply.body.slice(0, 200)}`);
              return result;
            }
            Object.assign(order.acknowledged, change);
            if (++acknowledged >= KILL_AFTER_ACKNOWLEDGED && !killed) {
              killed = true;
              server.child.kill('SIGKILL');
            }
          }
        }
        result.ending = 'stopped after the kill';
        return result;
      };

      const results = await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
      expect(results.flatMap((result) => result.unexpected)).toEqual([]);
      expect(killed).toBe(true);
      expect(await server.exited).toBeNull(); // killed by the signal, not exited on its own
      // The kill hit requests in flight, not a quiet moment between them.
      expect(results.filter((result) => result.ending.startsWith('cut')).length).toBeGreaterThan(0);

      const restarted = await start();
      const after = new OrderApi(restarted.url, token);
      const stored = new Map((await after.list()).map((order) => [order.id, order]));
      const tracked = results.flatMap((result) => result.orders);
      expect(acknowledged).toBeGreaterThanOrEqual(KILL_AFTER_ACKNOWLEDGED);

      const lost: string[] = [];
      for (const order of tracked) {
        const row = stored.get(order.id);
        if (!row) {
          lost.push(`order ${order.id} (${order.acknowledged.memo}) is missing`);
          continue;
        }
        const allowed = [order.acknowledged, { ...order.acknowledged, ...order.unanswered }];
        if (!allowed.some((state) => state.memo === row.memo && state.status === row.status)) {
          lost.push(`order ${order.id}: stored ${row.status}/${row.memo}, acknowledged ${order.acknowledged.status}/${order.acknowledged.memo}`);
        }
      }
      expect(lost).toEqual([]);

      // Nothing appeared that was never sent: any order not acknowledged is an unanswered creation.
      const trackedIds = new Set(tracked.map((order) => order.id));
      const unansweredCreates = new Set(results.map((result) => result.unansweredCreate).filter(Boolean));
      for (const row of stored.values()) {
        if (!trackedIds.has(row.id)) expect(unansweredCreates.has(row.memo ?? '')).toBe(true);
      }

      // And the restarted server takes writes again.
      expect((await after.create(productId, 'after the crash')).status).toBe(201);
      expect(await restarted.stop('SIGTERM')).toBe(0);
    });

    // A request blocked on a row lock held elsewhere outlives the drain; the driver can then only half-close its
    // connection, which the backend answers once the statement ends — never, without a statement timeout.
    it('on SIGTERM exits 0 although a statement of its own is still blocked in PostgreSQL', async () => {
      if (kind !== 'postgres') return; // PGlite runs in the process: nothing outside can hold a lock on it
      const server = await startServerProcess({ ...env, DATABASE_STATEMENT_TIMEOUT_MS: '0' });
      servers.push(server);
      const order = parseJson(await new OrderApi(server.url, token).create(productId, 'locked')) as OrderView;
      const holder = postgres(env.DATABASE_URL!, { max: 2, onnotice: () => {} }); // one holds the lock, one watches
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let locked!: () => void;
      const lockTaken = new Promise<void>((resolve) => (locked = resolve));
      const holding = holder.begin(async (tx) => {
        await tx`select id from orders where id = ${order.id} for update`;
        locked();
        await released;
      });
      try {
        await lockTaken;
        const blocked = new OrderApi(server.url, token)
          .patch(order.id, { memo: 'after the lock' })
          .catch((error: unknown) => error);
        await eventually('the PATCH waits on the lock', 20_000, async () => {
          const waiting = await holder`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query ilike 'update%'`;
          return waiting[0]!.n > 0 ? true : undefined;
        });
        server.child.kill('SIGTERM');
        let lockReleased = false;
        const fallback = setTimeout(() => {
          lockReleased = true;
          release();
        }, 45_000);
        const code = await server.exited;
        clearTimeout(fallback);
        expect(lockReleased, 'the process waited for the lock to go').toBe(false);
        expect(code).toBe(0);
        await blocked;
      } finally {
        release();
        await holding.catch(() => {});
        await holder.end();
      }
    }, 90_000);

    it('on SIGTERM under load finishes the requests in flight, refuses new connections and exits 0', async () => {
      const server = await start();
      const authorization = `Bearer ${token}`;

      // Background load on keep-alive connections: reads with `fields` and order creations.
      const agent = keepAliveAgent(8);
      const api = new OrderApi(server.url, token, agent);
      const outcomes = { complete: 0, serverErrors: [] as string[], truncated: [] as string[], connectionErrors: 0 };
      let loading = true;
      const loader = async (i: number) => {
        while (loading) {
          try {
            const reply =
              i % 2
                ? await send(`${server.url}/products?fields=id,name,seller(name),reviews(rating)&limit=20`, { headers: { authorization }, agent })
                : await api.create(productId, `load ${i}`);
            parseJson(reply); // a complete JSON body, whatever the status
            if (reply.status >= 500) outcomes.serverErrors.push(`${reply.status} ${reply.body.slice(0, 200)}`);
            outcomes.complete++;
          } catch (error) {
            if (/cut off|before it was complete|expected JSON/.test((error as Error).message)) outcomes.truncated.push((error as Error).message);
            else if (isConnectionLoss(error)) outcomes.connectionErrors++;
            else throw error;
            await sleep(20);
          }
        }
      };
      const loaders = Array.from({ length: 8 }, (_, i) => loader(i));
      await eventually('the background load gets going', 30_000, async () => (outcomes.complete >= 40 ? true : undefined), 20);

      // Requests the server has certainly begun: it answered `Expect: 100-continue`, so the
      // request is in the app, which waits for the body we hold back until after the SIGTERM.
      const inFlight = Array.from({ length: 6 }, (_, i) => {
        const body = JSON.stringify({ items: [{ productId, quantity: 1 }], memo: `in-flight ${i}` });
        let continued!: () => void;
        const accepted = new Promise<void>((resolve) => (continued = resolve));
        const req = http.request({
          host: '127.0.0.1',
          port: server.port,
          method: 'POST',
          path: '/orders?fields=id,memo',
          agent: false,
          headers: { authorization, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), expect: '100-continue' },
        });
        const response = new Promise<{ status: number; connection: string | undefined; body: string; complete: boolean }>((resolve, reject) => {
          req.on('response', (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => (text += chunk));
            res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, body: text, complete: res.complete }));
            res.on('error', reject);
          });
          req.on('error', reject);
        });
        req.on('continue', continued);
        req.flushHeaders();
        return { req, body, accepted, response };
      });
      await Promise.all(inFlight.map((request) => request.accepted));

      const signalledAt = Date.now();
      server.child.kill('SIGTERM');
      // The listener closes at once, while the held requests are still open.
      await eventually('new connections are refused', 5_000, async () => ((await connectionRefused(server.port)) ? true : undefined), 20);

      for (const request of inFlight) request.req.end(request.body);
      const answers = await Promise.all(inFlight.map((request) => request.response));
      for (const answer of answers) {
        expect(answer.complete).toBe(true);
        expect(answer.status, answer.body).toBe(201);
        expect(answer.connection).toBe('close');
        expect((JSON.parse(answer.body) as OrderView).memo).toMatch(/^in-flight \d$/);
      }

      const code = await Promise.race([server.exited, sleep(SHUTDOWN_BOUND_MS).then(() => 'still running')]);
      expect(code).toBe(0);
      expect(Date.now() - signalledAt).toBeLessThan(SHUTDOWN_BOUND_MS);
      loading = false;
      await Promise.all(loaders);
      agent.destroy();
      expect(outcomes.serverErrors).toEqual([]);
      expect(outcomes.truncated).toEqual([]);
      expect(server.stdout()).toContain('"msg":"shutting down"');

      // What the in-flight requests were told was created, was.
      const restarted = await start();
      const stored = new Map((await new OrderApi(restarted.url, token).list()).map((order) => [order.id, order]));
      for (const answer of answers) {
        const created = JSON.parse(answer.body) as OrderView;
        expect(stored.get(created.id)?.memo).toBe(created.memo);
      }
      expect(await restarted.stop('SIGTERM')).toBe(0);
    });
  });
}
