/**
 * The benchmark's server process: Fieldgate exactly as `createApp(runtime)` builds it, with the
 * two baselines mounted into the same Express 5 app, on the same runtime and the same database
 * connection(s) — which is the only way to share an embedded PGlite database:
 *
 *   GET /bench/bare        (a) a fixed small JSON object, ahead of all middleware — the
 *                              framework ceiling
 *   GET /bench/direct/:id  (b) `SELECT id, name FROM products WHERE id = $1` through Drizzle,
 *                              behind the app-wide middleware (request id, access log) that every
 *                              route of the service passes, (c) included
 *
 * Configured by the usual environment variables (PORT, ISSUER, DATABASE_URL or DATA_DIR,
 * LOG_LEVEL). With BENCH_PHASE=setup it only seeds the demo catalogue and registers a bench
 * user and a confidential client, reports them to the orchestrator over IPC, and exits.
 */
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { RequestHandler } from 'express';
import { eq } from 'drizzle-orm';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { openConfiguredDatabase, openRuntime, type Runtime } from '../src/runtime.js';
import { createApp } from '../src/app.js';
import { applyConnectionBounds } from '../src/server.js';
import { createAppServer } from '../src/http/app-server.js';
import { startIdleCollection } from '../src/idle-collection.js';
import { seedDemo } from '../src/demo/seed.js';
import { grants, products } from '../src/db/schema.js';
import { randomToken } from '../src/crypto/secrets.js';
import { ALL_SCOPES } from '../src/oauth/scopes.js';
import { announceFailure, announceReady, serveCalls } from './lib/child.js';
import { profilerCalls } from './lib/profiler.js';

export const BENCH_USERNAME = 'bench';

/**
 * (a): a fixed small JSON object, answered before anything else. The baselines are plain handlers that match their own
 * path rather than routers of their own: a router here would run for every request of (c)–(f) too, a cost that
 * `fieldgate serve` does not have.
 */
function bareRoute(): RequestHandler {
  return function benchBare(req, res, next) {
    if (req.method !== 'GET' || req.path !== '/bench/bare') return next();
    res.json({ id: 1, name: 'Trail Backpack' });
  };
}

const DIRECT_PATH = /^\/bench\/direct\/([^/]+)$/;

/** (b): the same row as (c), read by a hand-written route straight through Drizzle. */
function directRoute(runtime: Runtime): RequestHandler {
  return async function benchDirect(req, res, next) {
    const match = req.method === 'GET' ? DIRECT_PATH.exec(req.path) : null;
    if (!match) return next();
    try {
      const id = Number(match[1]);
      if (!Number.isSafeInteger(id)) {
        res.status(400).json({ error: 'bad id' });
        return;
      }
      const [row] = await runtime.db.select({ id: products.id, name: products.name }).from(products).where(eq(products.id, id));
      if (!row) {
        res.status(404).json({ error: 'not found' });
        return;
      }
      res.json(row);
    } catch (error) {
      next(error);
    }
  };
}

/**
 * Phase one, its own process: seed and register, report the credentials, exit. The measured
 * server is then started fresh on the same database, so its "idle" memory is that of a
 * restarted server, not of one that has just run migrations, a seed and two password hashes.
 */
async function setup(): Promise<void> {
  const config = loadConfig(process.env);
  const runtime = await openRuntime(config, createLogger(config.logLevel));
  await seedDemo(runtime);
  const password = randomToken(16);
  const user = await runtime.users.create(BENCH_USERNAME, password);
  const redirectUri = `${config.issuer}/bench/callback`;
  const client = await runtime.clients.create({ name: 'Fieldgate benchmark', redirectUris: [redirectUri] });
  const [product] = await runtime.db.select({ id: products.id }).from(products).orderBy(products.id).limit(1);
  if (!product) throw new Error('the demo seed created no products');
  serveCalls({}, () => runtime.close());
  announceReady({
    database: runtime.database.kind,
    userId: user.id,
    username: user.username,
    password,
    clientId: client.client_id,
    clientSecret: client.client_secret,
    redirectUri,
    scope: ALL_SCOPES.join(' '),
    productId: product.id,
  });
}

/**
 * What-if changes for profiling findings, applied here without touching src/ (BENCH_EXPERIMENTS,
 * from `--experiment=NAME`). None is defined at present: the last one, `default-heap-growth`,
 * measured what `--heap-growing-percent=20` cost (docs/PERFORMANCE.md, round 4).
 */
const EXPERIMENTS: Record<string, (runtime: Runtime) => void> = {};

/** Phase two: serve Fieldgate and the baselines until the orchestrator says stop. */
async function serve(): Promise<void> {
  const config = loadConfig(process.env);
  const runtime = await openRuntime(config, createLogger(config.logLevel), await openConfiguredDatabase(config, { embeddedThread: true }));
  // As `fieldgate serve` does (startServer), so the measured process holds what a real one holds.
  startIdleCollection({ idleSeconds: config.idleCollectionAfter });
  for (const name of (process.env.BENCH_EXPERIMENTS ?? '').split(',').filter(Boolean)) {
    const experiment = EXPERIMENTS[name];
    if (!experiment) throw new Error(`unknown experiment "${name}"; defined: ${Object.keys(EXPERIMENTS).join(', ') || 'none'}`);
    experiment(runtime);
  }

  // Fieldgate's own app, as `fieldgate serve` builds it, with the baselines mounted into it.
  const app = createApp(runtime, { embedderRoutes: { bare: bareRoute(), served: directRoute(runtime) } });

  const server = createAppServer(app);
  applyConnectionBounds(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  // Statement counting for one probe at a time (off while measuring).
  let stopCounting: (() => void) | undefined;
  const statements = new Map<string, number>();

  const shutdown = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await runtime.close();
  };
  serveCalls(
    {
      memory: () => process.memoryUsage(),
      cpu: () => process.cpuUsage(),
      elu: () => performance.eventLoopUtilization(),
      'sql-start': () => {
        statements.clear();
        stopCounting?.();
        stopCounting = runtime.database.onQuery((query) => {
          const text = query.replace(/\s+/g, ' ').trim();
          statements.set(text, (statements.get(text) ?? 0) + 1);
        });
      },
      'sql-stop': () => {
        stopCounting?.();
        stopCounting = undefined;
        return [...statements].map(([text, count]) => ({ text, count }));
      },
      /**
       * An access token minted in-process through the same AccessTokens service /token uses, for a
       * grant written first (a token of a grant that does not exist counts as revoked).
       * Only a fallback for the read benchmark while the OAuth endpoints cannot issue one.
       */
      'mint-token': async (params: { userId: number; clientId: string }) => {
        const grant = { id: randomToken(16), clientId: params.clientId, userId: params.userId, scope: ALL_SCOPES.join(' ') };
        await runtime.db.insert(grants).values(grant);
        return (await runtime.accessTokens.issue({ ...params, scope: grant.scope, grantId: grant.id })).token;
      },
      ...profilerCalls(process.env.BENCH_PROFILE_DIR || undefined),
    },
    shutdown,
  );
  announceReady({ url: `http://${config.host}:${port}`, database: runtime.database.kind });
}

(process.env.BENCH_PHASE === 'setup' ? setup() : serve()).catch(announceFailure);
