import { constants as osConstants } from 'node:os';
import { CommandFailed, defineCommand, type Io } from './command.js';
import type { Config } from '../config.js';
import type { DemoSeedResult } from '../demo/seed.js';
import type { ReservedPort } from '../http/reserved-port.js';

export async function describeDemo(config: Config, seeded: DemoSeedResult): Promise<string> {
  const [{ DEMO_PASSWORD, DEMO_USERNAME }, { demoAuthorizeLink }] = await Promise.all([
    import('../demo/seed.js'),
    import('../demo/authorize-link.js'),
  ]);
  return [
    `Demo client id:     ${seeded.client.client_id}`,
    `Demo client secret: ${seeded.client.client_secret}   (kept in the database: the same on every start and instance)`,
    `Demo login:         ${DEMO_USERNAME} / ${DEMO_PASSWORD}`,
    `Open to sign in:    ${demoAuthorizeLink(config.issuer)}`,
  ].join('\n');
}

/**
 * SIGTERM and SIGINT from the very start: one that arrives while the server starts (a migration, the demo seed) lets the
 * step under way finish, then closes the database and exits 0, as a stop of a running server does, instead of killing
 * the process with its data directory open. A second signal gives up at once.
 */
function stopSignals() {
  let received: NodeJS.Signals | undefined;
  let notify: (signal: NodeJS.Signals) => void = () => {};
  const signalled = new Promise<NodeJS.Signals>((resolve) => (notify = resolve));
  const onSignal = (signal: NodeJS.Signals) => {
    if (received !== undefined) process.exit(128 + (osConstants.signals[signal] ?? 15));
    received = signal;
    notify(signal);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  return {
    signalled,
    get received() {
      return received;
    },
  };
}

async function serve(io: Io, config: Config): Promise<void> {
  const stop = stopSignals();
  // The embedded database's thread takes longer to start than the app's modules take to load, so it starts first
  // (docs/PERFORMANCE.md, round 20). Except on a new data directory with the demo: there the demo user's password is
  // hashed before the database loads, so the two never hold memory at once (the first start's peak).
  const { closeEmbedded, isNewEmbeddedDataDir, openConfiguredEmbeddedThread } = await import('../db/embedded-open.js');
  const hashFirst = config.demo && !config.databaseUrl && isNewEmbeddedDataDir(config.dataDir);
  const startedThread = hashFirst ? undefined : openConfiguredEmbeddedThread(config);
  startedThread?.catch(() => {}); // awaited by openConfiguredDatabase below
  const [{ openConfiguredDatabase, openRuntime }, { demoPasswordHash, seedDemo, isEmptyDatabase }] = await Promise.all([
    import('../runtime.js'),
    import('../demo/seed.js'),
  ]).catch(async (error: unknown) => {
    if (startedThread) await closeEmbedded(startedThread);
    throw error;
  });
  const passwordHash = hashFirst ? await demoPasswordHash() : undefined;
  const opening = openConfiguredDatabase(config, { embeddedThread: startedThread ?? true });
  opening.catch(() => {}); // awaited below, once the modules are loaded
  /** Closes the database being opened when the start fails before the runtime owns it. */
  const abandonDatabase = async () => (await opening.catch(() => undefined))?.close();
  const [{ createLogger, flushLogger }, { startServer }, { reservePort }, { ListenError }, { loadConfig }] = await Promise.all([
    import('../logger.js'),
    import('../server.js'),
    import('../http/reserved-port.js'),
    import('../http/listen.js'),
    import('../config.js'),
  ]).catch(async (error: unknown) => {
    await abandonDatabase();
    throw error;
  });
  // PORT=0 picks a free port; tokens and links need to name it, so pick it before they are made.
  // The port stays reserved (listening; early clients wait) until the server takes it, so no other process can take it.
  let reserved: ReservedPort | undefined;
  if (config.port === 0 && !io.env.ISSUER?.trim()) {
    reserved = await reservePort(config.host).catch(async (error: unknown) => {
      await abandonDatabase();
      throw error instanceof ListenError ? new CommandFailed(error.message, { cause: error }) : error;
    });
    config = loadConfig({ ...io.env, PORT: String(reserved.port) });
  }
  const logger = createLogger(config.logLevel);
  const runtime = await openRuntime(config, logger, await opening).catch(async (error: unknown) => {
    await reserved?.release();
    throw error;
  });
  /** Closes what the start opened when it cannot go on. */
  const abandonStart = async () => {
    await runtime.close();
    await reserved?.release();
  };
  const stoppedWhileStarting = async () => {
    if (stop.received === undefined) return false;
    logger.info({ signal: stop.received }, 'stopped while starting');
    await abandonStart();
    await flushLogger(logger);
    return true;
  };
  if (await stoppedWhileStarting()) return;
  let demo: DemoSeedResult | undefined;
  try {
    // Demo data goes only into an embedded database, or wherever DEMO=true asks for it. The seed checks before it
    // writes, so instances starting together on one PostgreSQL database take turns, or all but one would fail.
    if (config.demo && (runtime.database.kind === 'postgres' || (await isEmptyDatabase(runtime.db)) || (await runtime.clients.find('demo-client')))) {
      demo = await runtime.database.exclusively(() => seedDemo(runtime, passwordHash === undefined ? {} : { passwordHash }));
    }
  } catch (error) {
    await abandonStart();
    throw error;
  }
  if (await stoppedWhileStarting()) return;
  // Prepared before listening, so the banner is out before the first request can be answered.
  const demoBanner = demo ? await describeDemo(config, demo) : undefined;
  let server;
  try {
    server = await startServer(runtime, reserved && { reserved });
  } catch (error) {
    // A port in use, or a setting only checkable against the built app (GRAPHQL_TRUSTED_DOCUMENTS
    // documents that do not validate): close the runtime so the process can exit with the message.
    await abandonStart();
    throw error instanceof ListenError ? new CommandFailed(error.message, { cause: error }) : error;
  }
  logger.info({ issuer: config.issuer, url: server.url, port: server.port, database: runtime.database.kind }, 'listening');
  // stdout carries only JSON log lines; the banner for people goes to stderr.
  io.stderr.write(
    [
      `Fieldgate is listening on ${config.issuer} (bound to ${server.url}, database: ${runtime.database.kind}, ${runtime.database.location})`,
      ...(demoBanner ? [demoBanner] : []),
      '',
    ].join('\n'),
  );
  const signal = await stop.signalled;
  logger.info({ signal }, 'shutting down');
  await server.close().catch((error) => logger.error({ err: error }, 'error during shutdown'));
  await flushLogger(logger);
}

export default defineCommand({
  summary: 'run the server (what `npm start` runs)',
  synopsis: 'serve',
  details: ['Configuration comes from the environment (PORT, ISSUER, DATABASE_URL, DATA_DIR…); see README.md.'],
  options: {},
  run: ({ io, config }) => serve(io, config()),
});
