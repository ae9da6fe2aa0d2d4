/**
 * The `fieldgate` command line. Every command works on the database the server uses (same
 * environment variables). `--json` prints exactly one JSON object on stdout; errors go to
 * stderr with a non-zero exit status.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { text } from 'node:stream/consumers';
import { ConfigError, loadConfig, type Config } from './config.js';
import { createLogger, flushLogger } from './logger.js';
import { openRuntime, type Runtime } from './runtime.js';
import { startServer } from './server.js';
import { rotateSigningKey } from './oauth/keys.js';
import { ClientRegistrationError, describeClient } from './oauth/clients.js';
import { UserRegistrationError } from './oauth/users.js';
import { LoginThrottle } from './oauth/login-throttle.js';
import { DataDirLockedError } from './db/data-dir-lock.js';
import { DEMO_PASSWORD, DEMO_USERNAME, seedDemo, isEmptyDatabase, type DemoSeedResult } from './demo/seed.js';
import { demoAuthorizeLink } from './demo/authorize-link.js';

export const USAGE = `Usage: fieldgate <command> [options]

Commands:
  serve                                 run the server (what \`npm start\` runs)
  migrate                               apply database migrations
  seed --demo                           add the demo catalogue, user and client
  client create --name NAME --redirect-uri URI [--redirect-uri URI …]
                [--public] [--scope "products:read orders:read orders:write"]
  client list
  client delete ID
  user create --username NAME --password-stdin
  user list
  user delete USERNAME                  delete the account; its tokens stop working
  user passwd USERNAME --password-stdin set a new password; revokes the user's grants
  user unlock USERNAME                  clear the failed sign-in lock of the account
  keys rotate                           make a new signing key current

Options:
  --json      print exactly one JSON object on stdout
  --help      show this help

Configuration comes from the environment; see README.md.`;

/** An error the user made, reported as one line without a stack trace. */
class UsageError extends Error {
  override readonly name = 'UsageError';
}

interface Io {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  stdin: NodeJS.ReadableStream;
  env: NodeJS.ProcessEnv;
}

type Options = NonNullable<ParseArgsConfig['options']>;

function parse<O extends Options>(args: string[], options: O) {
  try {
    const config = { args, options: { json: { type: 'boolean' as const }, ...options }, allowPositionals: true as const, strict: true as const };
    return parseArgs(config);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

function print(io: Io, json: boolean | undefined, value: object, human: string): void {
  io.stdout.write(json ? `${JSON.stringify(value)}\n` : `${human}\n`);
}

async function withRuntime<T>(config: Config, fn: (runtime: Runtime) => Promise<T>): Promise<T> {
  const runtime = await openRuntime(config, createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel, process.stderr));
  try {
    return await fn(runtime);
  } finally {
    await runtime.close();
  }
}

function describeDemo(config: Config, seeded: DemoSeedResult): string {
  return [
    `Demo client id:     ${seeded.client.client_id}`,
    `Demo client secret: ${seeded.client.client_secret}   (new on every start; stored only as a hash)`,
    `Demo login:         ${DEMO_USERNAME} / ${DEMO_PASSWORD}`,
    `Open to sign in:    ${demoAuthorizeLink(config.issuer)}`,
  ].join('\n');
}

async function serve(io: Io, config: Config): Promise<void> {
  const logger = createLogger(config.logLevel);
  const runtime = await openRuntime(config, logger);
  let demo: DemoSeedResult | undefined;
  try {
    // Demo data goes only into an embedded database, or wherever DEMO=true asks for it.
    if (config.demo && (runtime.database.kind === 'postgres' || (await isEmptyDatabase(runtime.db)) || (await runtime.clients.find('demo-client')))) {
      demo = await seedDemo(runtime);
    }
  } catch (error) {
    await runtime.close();
    throw error;
  }
  const server = await startServer(runtime);
  io.stdout.write(
    [
      `Fieldgate is listening on ${config.issuer} (bound to ${server.url}, database: ${runtime.database.kind}, ${runtime.database.location})`,
      ...(demo ? [describeDemo(config, demo)] : []),
      '',
    ].join('\n'),
  );
  await new Promise<void>((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      logger.info({ signal }, 'shutting down');
      server
        .close()
        .catch((error) => logger.error({ err: error }, 'error during shutdown'))
        .then(() => flushLogger(logger))
        .then(resolve);
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
}

/** Reads the password from standard input (one trailing newline dropped). */
async function passwordFromStdin(io: Io): Promise<string> {
  const password = (await text(io.stdin)).replace(/\r?\n$/, '');
  if (!password) throw new UsageError('no password on standard input');
  return password;
}

/** `user list | delete | passwd | unlock`; `user create` stays in `run`. */
async function userCommand(io: Io, config: Config, subcommand: string | undefined, args: string[]): Promise<void> {
  if (subcommand === 'list') {
    const { values } = parse(args, {});
    await withRuntime(config, async (runtime) => {
      const list = await runtime.users.list();
      const shown = list.map((u) => ({ id: u.id, username: u.username, created_at: u.createdAt.toISOString() }));
      print(io, values.json, { users: shown }, shown.length === 0 ? 'No users.' : shown.map((u) => `${u.id}\t${u.username}\t${u.created_at}`).join('\n'));
    });
    return;
  }
  if (subcommand !== 'delete' && subcommand !== 'passwd' && subcommand !== 'unlock') {
    throw new UsageError(`unknown user command "${subcommand ?? ''}"; use create, list, delete, passwd or unlock`);
  }
  const { values, positionals } = parse(args, subcommand === 'passwd' ? { 'password-stdin': { type: 'boolean' } } : {});
  const username = positionals[0];
  if (!username || positionals.length > 1) throw new UsageError(`user ${subcommand} needs exactly one USERNAME`);
  if (subcommand === 'passwd' && !values['password-stdin']) {
    throw new UsageError('user passwd needs --password-stdin (the password is read from standard input)');
  }
  const password = subcommand === 'passwd' ? await passwordFromStdin(io) : '';
  await withRuntime(config, async (runtime) => {
    if (subcommand === 'unlock') {
      const unlocked = await new LoginThrottle(runtime.db).unlock(username);
      print(io, values.json, { unlocked: username, was_throttled: unlocked }, `Cleared the sign-in lock of ${username}${unlocked ? '' : ' (there was none)'}.`);
      return;
    }
    if (subcommand === 'delete') {
      if (!(await runtime.users.delete(username))) throw new UsageError(`no user ${username}`);
      print(io, values.json, { deleted: username }, `Deleted user ${username} and every grant and token of theirs.`);
      return;
    }
    if (!(await runtime.users.setPassword(username, password))) throw new UsageError(`no user ${username}`);
    print(io, values.json, { updated: username }, `Set a new password for ${username}; their existing grants are revoked.`);
  });
}

async function run(argv: string[], io: Io): Promise<void> {
  const [command, subcommand, ...rest] = argv;
  if (!command || command === '--help' || command === 'help') {
    io.stdout.write(`${USAGE}\n`);
    return;
  }
  const config = loadConfig(io.env);

  switch (command) {
    case 'serve':
      parse(argv.slice(1), {});
      return serve(io, config);

    case 'migrate': {
      const { values } = parse(argv.slice(1), {});
      await withRuntime(config, async (runtime) => {
        print(io, values.json, { migrated: true, database: runtime.database.kind }, `Migrations applied (${runtime.database.kind}).`);
      });
      return;
    }

    case 'seed': {
      const { values } = parse(argv.slice(1), { demo: { type: 'boolean' } });
      if (!values.demo) throw new UsageError('seed needs --demo (the only data set there is)');
      await withRuntime(config, async (runtime) => {
        const seeded = await seedDemo(runtime);
        print(io, values.json, seeded, `Seeded ${seeded.productsCreated} products.\n${describeDemo(config, seeded)}`);
      });
      return;
    }

    case 'client': {
      if (subcommand === 'create') {
        const { values } = parse(rest, {
          name: { type: 'string' },
          'redirect-uri': { type: 'string', multiple: true },
          public: { type: 'boolean' },
          scope: { type: 'string' },
        });
        if (!values.name) throw new UsageError('client create needs --name NAME');
        if (!values['redirect-uri']?.length) throw new UsageError('client create needs at least one --redirect-uri URI');
        await withRuntime(config, async (runtime) => {
          const client = await runtime.clients.create({
            name: values.name as string,
            redirectUris: values['redirect-uri'] as string[],
            isPublic: Boolean(values.public),
            ...(values.scope === undefined ? {} : { scope: values.scope as string }),
          });
          const { client_name: _name, grant_types: _grants, ...shown } = client;
          print(
            io,
            values.json,
            shown,
            [
              `client_id:     ${client.client_id}`,
              ...(client.client_secret ? [`client_secret: ${client.client_secret}   (shown once; store it now)`] : []),
              `redirect_uris: ${client.redirect_uris.join(' ')}`,
              `scope:         ${client.scope}`,
              `auth method:   ${client.token_endpoint_auth_method}`,
            ].join('\n'),
          );
        });
        return;
      }
      if (subcommand === 'list') {
        const { values } = parse(rest, {});
        await withRuntime(config, async (runtime) => {
          const clients = await runtime.clients.list();
          print(
            io,
            values.json,
            { clients },
            clients.length === 0
              ? 'No clients.'
              : clients.map((c) => `${c.client_id}\t${c.client_name}\t${c.token_endpoint_auth_method}\t${c.redirect_uris.join(' ')}`).join('\n'),
          );
        });
        return;
      }
      if (subcommand === 'delete') {
        const { values, positionals } = parse(rest, {});
        const id = positionals[0];
        if (!id || positionals.length > 1) throw new UsageError('client delete needs exactly one client ID');
        await withRuntime(config, async (runtime) => {
          if (!(await runtime.clients.delete(id))) throw new UsageError(`no client with id ${id}`);
          print(io, values.json, { deleted: id }, `Deleted client ${id} and every token issued to it.`);
        });
        return;
      }
      throw new UsageError(`unknown client command "${subcommand ?? ''}"; use create, list or delete`);
    }

    case 'user': {
      if (subcommand !== 'create') return userCommand(io, config, subcommand, rest);
      const { values } = parse(rest, { username: { type: 'string' }, 'password-stdin': { type: 'boolean' } });
      if (!values.username) throw new UsageError('user create needs --username NAME');
      if (!values['password-stdin']) throw new UsageError('user create needs --password-stdin (the password is read from standard input)');
      const password = (await text(io.stdin)).replace(/\r?\n$/, '');
      if (!password) throw new UsageError('no password on standard input');
      await withRuntime(config, async (runtime) => {
        const user = await runtime.users.create(values.username as string, password);
        print(io, values.json, user, `Created user ${user.username} (id ${user.id}).`);
      });
      return;
    }

    case 'keys': {
      if (subcommand !== 'rotate') throw new UsageError(`unknown keys command "${subcommand ?? ''}"; use rotate`);
      const { values } = parse(rest, {});
      await withRuntime(config, async (runtime) => {
        const rotated = await rotateSigningKey(runtime.db, config.accessTokenTtl);
        print(
          io,
          values.json,
          rotated,
          `New signing key ${rotated.kid}. Retired ${rotated.retired.join(', ') || 'none'}; retired keys stay published until their tokens expire.`,
        );
      });
      return;
    }

    default:
      throw new UsageError(`unknown command "${command}"\n\n${USAGE}`);
  }
}

export async function main(argv: string[], io: Io): Promise<number> {
  try {
    await run(argv, io);
    return 0;
  } catch (error) {
    const known =
      error instanceof UsageError ||
      error instanceof ConfigError ||
      error instanceof DataDirLockedError ||
      error instanceof ClientRegistrationError ||
      error instanceof UserRegistrationError;
    io.stderr.write(`fieldgate: ${known ? (error as Error).message : `unexpected error: ${(error as Error)?.stack ?? error}`}\n`);
    return error instanceof UsageError ? 2 : 1;
  }
}

process.exitCode = await main(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
});
