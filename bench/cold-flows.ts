/**
 * How a fresh server's cost per code flow falls while V8 warms up — what the bench's cold round
 * averages into one number (its `--quick` window of 2 s sees mostly the first seconds):
 *
 *   node bin/run-ts.js bench/cold-flows.ts [postgres|pglite] [SECONDS]
 *
 * Sets up a database and a bench user and client as `npm run bench` does, starts bench/server.ts
 * afresh, signs in through the pages, then prints the server's CPU time of each of five single
 * flows and, for SECONDS (default 6) of 16 concurrent undici flows, flows/s, server CPU µs per
 * flow (user + system, all threads: V8's compiler threads included) and the event loop's busy µs per
 * flow, for every second and in total. Wrap it in `flock /tmp/fieldgate-bench.lock`.
 */
import os from 'node:os';
import type { EventLoopUtilization } from 'node:perf_hooks';
import path from 'node:path';
import { Child } from './lib/child.js';
import { signInAndConsent } from './lib/browser.js';
import { oauthTarget, runFlow, type OAuthTarget, type ServerInfo } from './lib/oauth-client.js';
import { createBenchStorage } from './lib/storage.js';
import { createUndiciAgent, undiciSender } from './lib/undici.js';
import { freePort } from '../test/support/processes.js';

const kind = process.argv[2] ?? 'postgres';
const seconds = Number(process.argv[3] ?? 6);
const concurrency = 16;

const created = await createBenchStorage(kind === 'postgres' ? 'postgres' : 'pglite');
if ('skipped' in created) throw new Error(created.skipped);
const { env: storage, drop: cleanup } = created;

const port = await freePort();
const env = { PORT: String(port), HOST: '127.0.0.1', ISSUER: `http://127.0.0.1:${port}`, LOG_LEVEL: 'info', NODE_ENV: 'production', ...storage };
const setup = Child.start({ entry: 'bench/server.ts', env: { ...env, BENCH_PHASE: 'setup' } });
const credentials = (await setup.ready) as unknown as Omit<ServerInfo, 'url'>;
await setup.stop();

const server = Child.start({ entry: 'bench/server.ts', env, stdoutFile: path.join(os.tmpdir(), 'fieldgate-cold-flows.log') });
const agent = createUndiciAgent(concurrency);
try {
  const { url } = (await server.ready) as unknown as { url: string };
  const base = oauthTarget(`Fieldgate · ${kind}`, { ...credentials, url });
  const target: OAuthTarget = { ...base, cookie: (await signInAndConsent(base, credentials.username, credentials.password)).cookie };
  const send = undiciSender(agent);
  const cpu = () => server.call<NodeJS.CpuUsage>('cpu');

  const singles: string[] = [];
  for (let i = 0; i < 5; i++) {
    const before = await cpu();
    await runFlow(target, send);
    const after = await cpu();
    singles.push(`${((after.user + after.system - before.user - before.system) / 1000).toFixed(1)} ms`);
  }
  console.log(`first five flows, one at a time (server CPU, IPC included): ${singles.join(', ')}`);

  const end = Date.now() + seconds * 1000;
  let done = 0;
  const loops = Array.from({ length: concurrency }, async () => {
    while (Date.now() < end) {
      await runFlow(target, send);
      done++;
    }
  });
  const eventLoopBusyMs = async () => (await server.call<EventLoopUtilization>('elu')).active;
  let last = await cpu();
  let lastBusy = await eventLoopBusyMs();
  let lastDone = 0;
  const total = { user: 0, system: 0, busyMs: 0, flows: 0 };
  let second = 0;
  while (Date.now() < end) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const now = await cpu();
    const busy = await eventLoopBusyMs();
    const flows = done - lastDone;
    const user = now.user - last.user;
    const system = now.system - last.system;
    const busyMs = busy - lastBusy;
    second++;
    console.log(
      `second ${second}: ${flows} flows/s, ${(user / flows).toFixed(0)} µs user + ${(system / flows).toFixed(0)} µs system per flow, event loop busy ${((busyMs * 1000) / flows).toFixed(0)} µs per flow`,
    );
    Object.assign(total, { user: total.user + user, system: total.system + system, busyMs: total.busyMs + busyMs, flows: total.flows + flows });
    last = now;
    lastBusy = busy;
    lastDone = done;
  }
  await Promise.all(loops);
  console.log(
    `total: ${total.flows} flows, ${((total.user + total.system) / total.flows).toFixed(0)} µs server CPU per flow (${(total.user / total.flows).toFixed(0)} user + ${(total.system / total.flows).toFixed(0)} system), event loop busy ${((total.busyMs * 1000) / total.flows).toFixed(0)} µs per flow`,
  );
} finally {
  await agent.close();
  await server.stop();
  await cleanup();
}
