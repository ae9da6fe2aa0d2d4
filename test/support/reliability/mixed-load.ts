/**
 * A mixed load against one running server, shared by the CI-sized test
 * (test/reliability/load.test.ts) and the sustained benchmark (bench/load/sustained.ts).
 *
 * `concurrency` workers each loop over a weighted mix of what real clients do — code flows
 * (mostly with a signed-in browser session, sometimes a fresh sign-in with the password),
 * refresh-token rotations, REST reads with `fields`, order creations, contended PATCHes and
 * GraphQL queries — and record every answer. Every write is accounted for, so after the run
 * `verify` can prove nothing acknowledged was lost:
 *
 * - counters: a few shared orders whose memo is a number; a worker reads the order and its
 *   ETag and PATCHes memo = n + 1 with If-Match. A 200 is an acknowledged increment, a 412 a
 *   lost race (retried later). Afterwards each memo must equal its acknowledged increments —
 *   a lost update (two increments from the same n both acknowledged) shows as a shortfall.
 * - creations: orders created with a `load-` memo; afterwards their number must equal the
 *   acknowledged 201s.
 * - refresh chains: each worker rotates its own refresh token; afterwards its last token must
 *   still rotate (an acknowledged rotation the server forgot would break the chain).
 */
import { readFileSync } from 'node:fs';
import type http from 'node:http';
import { keepAliveAgent, parseJson, send, type Reply } from './http.js';
import { OrderApi, type OrderView } from './orders.js';
import { always, authorize, Browser, redeemCode, refreshRequest, type FlowClient, type FlowUser, type TokenSet } from './oauth.js';
import type { Runtime } from '../../../src/runtime.js';
import { ALL_SCOPES } from '../../../src/oauth/scopes.js';
import { buildOrder } from '../factories.js';
import { issueTestToken } from '../tokens.js';
import { registerClient, registerUser, seedProducts } from './setup.js';

export type Operation = 'flow' | 'login-flow' | 'refresh' | 'rest-read' | 'create-order' | 'increment' | 'graphql';

const OPERATIONS: readonly Operation[] = ['flow', 'login-flow', 'refresh', 'rest-read', 'create-order', 'increment', 'graphql'];

/** Relative weights of the operations in the mix. */
export const DEFAULT_MIX: Readonly<Record<Operation, number>> = {
  flow: 12,
  'login-flow': 1,
  refresh: 12,
  'rest-read': 25,
  'create-order': 10,
  increment: 20,
  graphql: 20,
};

export interface MixedLoadTarget {
  baseUrl: string;
  client: FlowClient;
  /** Users the flows sign in as (worker i uses users[i % length]). */
  users: FlowUser[];
  /** An access token of the user who owns `counterOrders`, for REST and GraphQL calls. */
  ownerToken: string;
  /** Orders of that user whose memo counts acknowledged increments (start at memo "0"). */
  counterOrders: number[];
  productIds: number[];
}

/**
 * Registers what a run needs through a runtime on the server's database: a confidential
 * client, `users` users for the flows, `products` products, and one owner with a long-lived
 * token and `counters` counter orders (memo "0"). `baseUrl` is filled in by the caller.
 */
export async function prepareMixedLoad(
  runtime: Runtime,
  sizes: { users: number; products: number; counters: number },
): Promise<Omit<MixedLoadTarget, 'baseUrl'>> {
  const productIds = await seedProducts(runtime, sizes.products);
  const client = await registerClient(runtime, { name: 'Load client' });
  const users = [];
  for (let i = 0; i < sizes.users; i++) users.push(await registerUser(runtime, 'load'));
  const owner = await issueTestToken(runtime, { scope: ALL_SCOPES.join(' ') });
  const counterOrders = [];
  for (let i = 0; i < sizes.counters; i++) {
    counterOrders.push((await buildOrder(runtime, { userId: owner.userId, memo: '0', items: [{ productId: productIds[i % productIds.length]! }] })).id);
  }
  return { client, users, ownerToken: owner.token, counterOrders, productIds };
}

export interface MixedLoadOptions {
  durationMs: number;
  concurrency: number;
  mix?: Readonly<Record<Operation, number>>;
  /** Process id of the server, to sample its resident memory (Linux /proc). */
  serverPid?: number;
  /** RSS samples in the first `warmupMs` make the warm-up reference (`rssMiB.warmupPeak`). */
  warmupMs?: number;
  /** Called once a second with the running totals. */
  onProgress?: (report: MixedLoadReport) => void;
}

export interface MixedLoadReport {
  durationMs: number;
  /** HTTP requests answered, by status. */
  statuses: Record<number, number>;
  /** Completed operations, by kind. */
  operations: Record<Operation, number>;
  /** Answers no client should get (5xx, or a status the operation never answers), with context. */
  unexpected: string[];
  /** Requests that got no complete answer at all. */
  transportErrors: string[];
  /** Lost races on the counters (412), retried: normal under contention. */
  conflicts: number;
  acknowledged: { increments: Map<number, number>; creations: number };
  /** Each worker's latest refresh token at the end (the head of its rotation chain). */
  refreshChainHeads: string[];
  /**
   * Resident set size of the server in MiB, sampled once a second: the highest sample of the
   * warm-up (the footprint the process grew to for this load), the highest overall, and the last.
   */
  rssMiB?: { warmupPeak: number | undefined; peak: number; end: number; samples: number[] };
}

export interface Verification {
  /** Human-readable descriptions of every acknowledged change not found in the data. */
  lost: string[];
  counters: { id: number; acknowledged: number; stored: number }[];
  creations: { acknowledged: number; stored: number };
  refreshChainsChecked: number;
}

/** RSS of a process in MiB from /proc (undefined where there is none). */
export function rssMiB(pid: number): number | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1];
    return kib === undefined ? undefined : Number(kib) / 1024;
  } catch {
    return undefined;
  }
}

function pick(mix: Readonly<Record<Operation, number>>, random: number): Operation {
  const entries = Object.entries(mix) as [Operation, number][];
  const total = entries.reduce((sum, [, weight]) => sum + weight, 0);
  let point = random * total;
  for (const [operation, weight] of entries) {
    point -= weight;
    if (point < 0) return operation;
  }
  return entries[entries.length - 1]![0];
}

const READ_PATHS = [
  '/products?fields=id,name,priceCents&limit=20',
  '/products?fields=id,name,seller(name,rating),reviews(rating,author)&limit=10',
  '/products?fields=id,seller.name,shippingPolicy(minDays,maxDays)&limit=50&offset=0',
  '/orders?fields=id,status,memo&limit=20',
];

const GRAPHQL_QUERIES = [
  '{ products(limit: 20) { id name seller { name } reviews { rating } } }',
  '{ orders(limit: 10) { id status memo totalCents } }',
  'query One($id: Int!) { product(id: $id) { id name priceCents shippingPolicy { regions } } }',
];

/** One worker's state: its browser session, its refresh chain, its latest access token. */
interface Worker {
  index: number;
  user: FlowUser;
  browser: Browser | undefined;
  tokens: TokenSet | undefined;
  sequence: number;
}

export async function runMixedLoad(target: MixedLoadTarget, options: MixedLoadOptions): Promise<MixedLoadReport> {
  const mix = options.mix ?? DEFAULT_MIX;
  const agent = keepAliveAgent(options.concurrency * 2);
  const owner = new OrderApi(target.baseUrl, target.ownerToken, agent);
  const report: MixedLoadReport = {
    durationMs: 0,
    statuses: {},
    operations: { flow: 0, 'login-flow': 0, refresh: 0, 'rest-read': 0, 'create-order': 0, increment: 0, graphql: 0 },
    unexpected: [],
    transportErrors: [],
    conflicts: 0,
    acknowledged: { increments: new Map(target.counterOrders.map((id) => [id, 0])), creations: 0 },
    refreshChainHeads: [],
  };
  const started = Date.now();
  const deadline = started + options.durationMs;

  /** Records an answer; false (and a note) when its status is not one of `expected`. */
  const check = (what: string, reply: Reply, expected: number[]): boolean => {
    report.statuses[reply.status] = (report.statuses[reply.status] ?? 0) + 1;
    if (expected.includes(reply.status)) return true;
    if (report.unexpected.length < 50) report.unexpected.push(`${what}: ${reply.status} ${reply.body.slice(0, 200)}`);
    else report.unexpected.push(`${what}: ${reply.status}`);
    return false;
  };

  async function flow(worker: Worker, freshLogin: boolean): Promise<void> {
    if (freshLogin || !worker.browser) worker.browser = new Browser(always(target.baseUrl), agent);
    const result = await authorize({ client: target.client, user: worker.user, route: always(target.baseUrl), browser: worker.browser, agent });
    const reply = await redeemCode(target.baseUrl, target.client, result.code, result.verifier, agent);
    if (check('POST /token (code)', reply, [200])) worker.tokens = parseJson<TokenSet>(reply);
  }

  async function refresh(worker: Worker): Promise<void> {
    if (!worker.tokens?.refresh_token) await flow(worker, false);
    if (!worker.tokens?.refresh_token) return;
    const reply = await refreshRequest(target.baseUrl, target.client, worker.tokens.refresh_token, agent);
    if (check('POST /token (refresh)', reply, [200])) worker.tokens = parseJson<TokenSet>(reply);
  }

  async function restRead(worker: Worker): Promise<void> {
    const path = READ_PATHS[worker.sequence % READ_PATHS.length]!;
    const single = worker.sequence % 5 === 0 ? `/products/${target.productIds[worker.sequence % target.productIds.length]}?fields=id,name,reviews(rating)` : path;
    const reply = await send(`${target.baseUrl}${single}`, { headers: { authorization: `Bearer ${target.ownerToken}` }, agent });
    if (check(`GET ${single.split('?')[0]}`, reply, [200])) parseJson(reply);
  }

  async function createOrder(worker: Worker): Promise<void> {
    const productId = target.productIds[worker.sequence % target.productIds.length]!;
    const reply = await owner.create(productId, `load-${worker.index}-${worker.sequence}`);
    if (check('POST /orders', reply, [201])) report.acknowledged.creations++;
  }

  async function increment(worker: Worker): Promise<void> {
    const id = target.counterOrders[worker.sequence % target.counterOrders.length]!;
    const read = await owner.get(id);
    if (!check(`GET /orders/${id}`, read, [200])) return;
    const etag = read.headers.etag;
    const value = Number(parseJson<OrderView>(read).memo);
    const reply = await owner.patch(id, { memo: String(value + 1) }, typeof etag === 'string' ? etag : undefined);
    if (reply.status === 412) {
      report.statuses[412] = (report.statuses[412] ?? 0) + 1;
      report.conflicts++;
      return;
    }
    if (check(`PATCH /orders/${id}`, reply, [200])) {
      report.acknowledged.increments.set(id, report.acknowledged.increments.get(id)! + 1);
    }
  }

  async function graphql(worker: Worker): Promise<void> {
    // The worker's own token from its flows when it has one (its user has no orders, which is fine).
    const token = worker.tokens && worker.sequence % 2 ? worker.tokens.access_token : target.ownerToken;
    const query = GRAPHQL_QUERIES[worker.sequence % GRAPHQL_QUERIES.length]!;
    const reply = await send(`${target.baseUrl}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query, variables: { id: target.productIds[0] } }),
      agent,
    });
    if (!check('POST /graphql', reply, [200])) return;
    const body = parseJson<{ errors?: unknown[] }>(reply);
    if (body.errors) report.unexpected.push(`POST /graphql: errors ${JSON.stringify(body.errors).slice(0, 200)}`);
  }

  async function work(worker: Worker): Promise<void> {
    while (Date.now() < deadline) {
      worker.sequence++;
      // Each worker's first operation is a different kind, so even a short run covers the whole mix.
      const operation = worker.sequence === 1 ? OPERATIONS[worker.index % OPERATIONS.length]! : pick(mix, Math.random());
      try {
        if (operation === 'flow') await flow(worker, false);
        else if (operation === 'login-flow') await flow(worker, true);
        else if (operation === 'refresh') await refresh(worker);
        else if (operation === 'rest-read') await restRead(worker);
        else if (operation === 'create-order') await createOrder(worker);
        else if (operation === 'increment') await increment(worker);
        else await graphql(worker);
        report.operations[operation]++;
      } catch (error) {
        report.transportErrors.push(`${operation}: ${(error as Error).message}`);
        // A flow that failed half-way leaves the browser in an unknown state.
        worker.browser = undefined;
      }
    }
  }

  const rssSamples: number[] = [];
  let warmupPeak: number | undefined;
  const sampler = setInterval(() => {
    if (options.serverPid !== undefined) {
      const rss = rssMiB(options.serverPid);
      if (rss !== undefined) {
        rssSamples.push(rss);
        if (Date.now() - started <= (options.warmupMs ?? 0) || warmupPeak === undefined) warmupPeak = Math.max(warmupPeak ?? 0, rss);
      }
    }
    report.durationMs = Date.now() - started;
    options.onProgress?.(report);
  }, 1000);

  const workers: Worker[] = Array.from({ length: options.concurrency }, (_, index) => ({
    index,
    user: target.users[index % target.users.length]!,
    browser: undefined,
    tokens: undefined,
    sequence: 0,
  }));
  try {
    await Promise.all(workers.map(work));
  } finally {
    clearInterval(sampler);
    report.durationMs = Date.now() - started;
  }
  if (options.serverPid !== undefined) {
    const end = rssMiB(options.serverPid) ?? Number.NaN;
    report.rssMiB = { warmupPeak, peak: Math.max(end, ...rssSamples), end, samples: rssSamples };
  }
  report.refreshChainHeads = workers.flatMap((worker) => (worker.tokens?.refresh_token ? [worker.tokens.refresh_token] : []));
  agent.destroy();
  return report;
}

/** Checks the data against everything the run acknowledged (see the module comment). */
export async function verifyMixedLoad(target: MixedLoadTarget, report: MixedLoadReport, agent?: http.Agent): Promise<Verification> {
  const owner = new OrderApi(target.baseUrl, target.ownerToken, agent);
  const lost: string[] = [];
  const counters: Verification['counters'] = [];
  for (const [id, acknowledged] of report.acknowledged.increments) {
    const reply = await owner.get(id);
    const stored = Number(parseJson<OrderView>(reply).memo);
    counters.push({ id, acknowledged, stored });
    if (stored !== acknowledged) lost.push(`order ${id}: ${acknowledged} increments acknowledged, memo is ${stored}`);
  }
  const stored = (await owner.list()).filter((order) => order.memo?.startsWith('load-')).length;
  if (stored !== report.acknowledged.creations) lost.push(`${report.acknowledged.creations} orders acknowledged, ${stored} stored`);

  let refreshChainsChecked = 0;
  for (const [index, head] of report.refreshChainHeads.entries()) {
    const reply = await refreshRequest(target.baseUrl, target.client, head, agent);
    refreshChainsChecked++;
    if (reply.status !== 200) lost.push(`refresh chain ${index}: its last token no longer rotates (${reply.status} ${reply.body.slice(0, 120)})`);
  }
  return { lost, counters, creations: { acknowledged: report.acknowledged.creations, stored }, refreshChainsChecked };
}

/** A one-paragraph summary of a run, for logs and docs/LOAD.md. */
export function describeRun(report: MixedLoadReport, verification?: Verification): string {
  const total = Object.values(report.statuses).reduce((sum, count) => sum + count, 0);
  const serverErrors = Object.entries(report.statuses)
    .filter(([status]) => Number(status) >= 500)
    .reduce((sum, [, count]) => sum + count, 0);
  const lines = [
    `duration ${(report.durationMs / 1000).toFixed(1)} s, ${total} HTTP answers (${(total / (report.durationMs / 1000)).toFixed(0)}/s), 5xx: ${serverErrors}, transport errors: ${report.transportErrors.length}, unexpected answers: ${report.unexpected.length}`,
    `statuses: ${JSON.stringify(report.statuses)}`,
    `operations: ${JSON.stringify(report.operations)}, counter conflicts (412, retried): ${report.conflicts}`,
  ];
  if (verification) {
    lines.push(
      `verified: ${verification.counters.map((c) => `order ${c.id} ${c.stored}/${c.acknowledged}`).join(', ')}; creations ${verification.creations.stored}/${verification.creations.acknowledged}; refresh chains ${verification.refreshChainsChecked}; lost: ${verification.lost.length}`,
    );
  }
  if (report.rssMiB) {
    lines.push(
      `server RSS: warm-up peak ${report.rssMiB.warmupPeak?.toFixed(0) ?? '?'} MiB, run peak ${report.rssMiB.peak.toFixed(0)} MiB, end ${report.rssMiB.end.toFixed(0)} MiB`,
    );
  }
  return lines.join('\n');
}
