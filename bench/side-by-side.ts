/**
 * Whether a change pays for itself in code flows, as issue 19's method asks (keep a change only when a
 * back-to-back run shows its gain): a bench server from each of two trees, side by side on one fresh PostgreSQL
 * database, 16 concurrent code flows sent to each in turn in short bursts, and for every burst the server's
 * CPU, its event loop's busy time and the PostgreSQL processes' CPU per flow, with flows/s:
 *
 *   node bin/run-ts.js bench/side-by-side.ts BEFORE [AFTER] [--sessions=4] [--bursts=12] [--seconds=3] [--client=undici|node]
 *
 * BEFORE and AFTER (default: this checkout) are trees with `node_modules`, such as
 * `git worktree add /tmp/before <commit>` with `ln -s "$PWD/node_modules" /tmp/before/node_modules`
 * (install what the older commit needs with `npm install --no-save`). Wrap it in `flock /tmp/fieldgate-bench.lock`.
 *
 * Run with the same tree twice, one session of this (two fresh servers, alternating bursts) put one server
 * 50–90 µs of PostgreSQL CPU and 15–35 µs of server CPU per flow ahead of the other, either one, by more than its
 * bursts' own spread could explain (docs/PERFORMANCE.md, round 19): two server processes differ by as much as the
 * changes it judges. So it runs several sessions, each on a fresh database with fresh servers and the trees in
 * alternating places, and judges the change by the spread of the sessions' means, not of the bursts.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Child } from './lib/child.js';
import { signInAndConsent } from './lib/browser.js';
import { createSender, type ClientStack } from './lib/drivers.js';
import { oauthTarget, runFlow, type OAuthTarget, type ServerInfo } from './lib/oauth-client.js';
import { createBenchStorage } from './lib/storage.js';
import { freePort } from '../test/support/processes.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    sessions: { type: 'string', default: '4' },
    bursts: { type: 'string', default: '12' },
    seconds: { type: 'string', default: '3' },
    client: { type: 'string', default: 'undici' },
  },
});
const [beforeTree, afterTree = '.'] = positionals.map((tree) => path.resolve(tree));
if (!beforeTree) throw new Error('usage: bench/side-by-side.ts BEFORE [AFTER] [--sessions=4] [--bursts=12] [--seconds=3] [--client=undici|node]');
const sessions = Number(values.sessions);
const bursts = Number(values.bursts);
const burstMs = Number(values.seconds) * 1000;
const client = values.client as ClientStack;
if (!Number.isInteger(sessions) || sessions < 2 || !Number.isInteger(bursts) || bursts < 2 || !(burstMs > 0) || !['undici', 'node'].includes(client)) throw new Error('bad --sessions, --bursts, --seconds or --client');
const CONCURRENCY = 16;

const METRICS = ['serverCpu', 'eventLoop', 'postgresCpu', 'flowsPerSecond'] as const;
type Metric = (typeof METRICS)[number];
type Burst = Record<Metric, number>;
const LABELS: Record<Metric, string> = {
  serverCpu: 'server CPU µs/flow',
  eventLoop: 'event loop busy µs/flow',
  postgresCpu: 'PostgreSQL CPU µs/flow',
  flowsPerSecond: 'flows/s',
};

/** CPU ticks of every PostgreSQL process on the host (Linux); NaN where /proc cannot tell. */
function postgresTicks(): number {
  let ticks = 0;
  try {
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      try {
        if (!readFileSync(`/proc/${pid}/cmdline`, 'latin1').startsWith('postgres')) continue;
        const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        ticks += Number(fields[11]) + Number(fields[12]); // utime + stime
      } catch {
        // The process ended between the listing and the read.
      }
    }
  } catch {
    return Number.NaN;
  }
  return ticks;
}
const MICROSECONDS_PER_TICK = 1e6 / 100; // USER_HZ

/** Each tree's own bench/lib/child.js, so each server starts from its own tree. */
async function childClassOf(tree: string): Promise<typeof Child> {
  return ((await import(path.join(tree, 'bench/lib/child.js'))) as { Child: typeof Child }).Child;
}

type Role = 'before' | 'after';
const TREES: Record<Role, string> = { before: beforeTree, after: afterTree };

interface Slot {
  role: Role;
  server: Child;
  target: OAuthTarget;
  sender: ReturnType<typeof createSender>;
}

async function burst(slot: Slot): Promise<Burst> {
  const eventLoopMs = () => slot.server.call<{ active: number }>('elu').then((elu) => elu.active, () => Number.NaN); // older trees lack `elu`
  const cpu0 = await slot.server.call<NodeJS.CpuUsage>('cpu');
  const loop0 = await eventLoopMs();
  const postgres0 = postgresTicks();
  const end = Date.now() + burstMs;
  let flows = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (Date.now() < end) {
        await runFlow(slot.target, slot.sender.send);
        flows++;
      }
    }),
  );
  const cpu1 = await slot.server.call<NodeJS.CpuUsage>('cpu');
  const loop1 = await eventLoopMs();
  return {
    serverCpu: (cpu1.user + cpu1.system - cpu0.user - cpu0.system) / flows,
    eventLoop: ((loop1 - loop0) * 1000) / flows,
    postgresCpu: ((postgresTicks() - postgres0) * MICROSECONDS_PER_TICK) / flows,
    flowsPerSecond: flows / (burstMs / 1000),
  };
}

/** One session: a fresh database, a server per tree in the given places, alternating bursts. */
async function session(roles: [Role, Role]): Promise<Record<Role, Burst[]>> {
  const created = await createBenchStorage('postgres');
  if ('skipped' in created) throw new Error(created.skipped);
  const slots: Slot[] = [];
  const running: Child[] = [];
  const senders: Slot['sender'][] = [];
  try {
    const ports = [await freePort(), await freePort()];
    const env = (port: number) => ({ PORT: String(port), HOST: '127.0.0.1', ISSUER: `http://127.0.0.1:${port}`, LOG_LEVEL: 'info', NODE_ENV: 'production', ...created.env });
    const setup = (await childClassOf(TREES[roles[0]])).start({ entry: 'bench/server.ts', env: { ...env(ports[0]!), BENCH_PHASE: 'setup' } });
    const credentials = (await setup.ready) as unknown as Omit<ServerInfo, 'url'>;
    await setup.stop();
    for (const [index, role] of roles.entries()) {
      const server = (await childClassOf(TREES[role])).start({ entry: 'bench/server.ts', env: env(ports[index]!) });
      running.push(server);
      const { url } = (await server.ready) as unknown as { url: string };
      const base = oauthTarget(role, { ...credentials, url });
      const target: OAuthTarget = { ...base, cookie: (await signInAndConsent(base, credentials.username, credentials.password)).cookie };
      const sender = createSender(client, CONCURRENCY);
      senders.push(sender);
      slots.push({ role, server, sender, target });
    }
    for (const slot of slots) await burst(slot); // warm-up
    const measured: Record<Role, Burst[]> = { before: [], after: [] };
    for (let pair = 0; pair < bursts; pair++) {
      // ABBA order, so neither server always follows the other.
      for (const slot of pair % 2 ? [...slots].reverse() : slots) measured[slot.role].push(await burst(slot));
    }
    return measured;
  } finally {
    for (const sender of senders) await sender.close();
    for (const server of running) await server.stop();
    await created.drop();
  }
}

const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;
const standardError = (values: number[]) => Math.sqrt(values.reduce((sum, value) => sum + (value - mean(values)) ** 2, 0) / (values.length - 1) / values.length);
const signed = (value: number) => (Number.isNaN(value) ? 'n/a' : `${value >= 0 ? '+' : '−'}${Math.abs(value).toFixed(1)}`);

console.log(
  `before ${beforeTree}\nafter  ${afterTree}\n${client}, ${CONCURRENCY} concurrent flows; ${sessions} sessions of ${bursts} bursts of ${burstMs / 1000} s per tree`,
);
if (beforeTree === afterTree) console.log('(the same tree twice: an A/A run, which shows the method’s own noise)');
const measured: Record<Role, Burst[]>[] = [];
for (let index = 0; index < sessions; index++) {
  measured.push(await session(index % 2 ? ['after', 'before'] : ['before', 'after']));
  const last = measured.at(-1)!;
  console.log(`session ${index + 1}: after − before ${METRICS.map((metric) => `${signed(mean(last.after.map((b) => b[metric])) - mean(last.before.map((b) => b[metric])))} ${LABELS[metric]}`).join(', ')}`);
}
for (const metric of METRICS) {
  const differences = measured.map((one) => mean(one.after.map((b) => b[metric])) - mean(one.before.map((b) => b[metric])));
  const pairs = measured.flatMap((one) => one.after.map((b, index) => b[metric] - one.before[index]![metric]));
  const before = mean(measured.flatMap((one) => one.before.map((b) => b[metric])));
  const after = mean(measured.flatMap((one) => one.after.map((b) => b[metric])));
  console.log(
    `${LABELS[metric]}: before ${before.toFixed(0)}, after ${after.toFixed(0)}; change ${signed(mean(differences))} ± ${(2 * standardError(differences)).toFixed(1)} ` +
      `(2 s.e. of the ${sessions} sessions' means; of the bursts alone ± ${(2 * standardError(pairs)).toFixed(1)}); after lower in ${pairs.filter((d) => d < 0).length} of ${pairs.length} burst pairs; ` +
      `after − before with after started first ${signed(mean(differences.filter((_, index) => index % 2 === 1)))}, second ${signed(mean(differences.filter((_, index) => index % 2 === 0)))}`,
  );
}
