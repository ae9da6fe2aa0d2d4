/**
 * The `fieldgate` command line: `--json` prints exactly one JSON object; exit status 0 done, 1 failed, 2 usage. Each
 * command is one file under src/cli/, loaded only when named, so `client list` never loads the GraphQL schema.
 */
import { CommandFailed, didYouMean, nearest, parseCommandLine, UsageError, type Command, type CommandGroup, type Io } from './cli/command.js';

type Entry = Command | CommandGroup;

const COMMANDS: Record<string, () => Promise<Entry>> = {
  serve: async () => (await import('./cli/serve.js')).default,
  migrate: async () => (await import('./cli/migrate.js')).default,
  seed: async () => (await import('./cli/seed.js')).default,
  client: async () => (await import('./cli/client.js')).default,
  user: async () => (await import('./cli/user.js')).default,
  consent: async () => (await import('./cli/consent.js')).default,
  keys: async () => (await import('./cli/keys.js')).default,
  'registration-token': async () => (await import('./cli/registration-token.js')).default,
  janitor: async () => (await import('./cli/janitor.js')).default,
  backup: async () => (await import('./cli/backup.js')).backup,
  restore: async () => (await import('./cli/backup.js')).restore,
};

const isGroup = (entry: Entry): entry is CommandGroup => 'subcommands' in entry;

async function usage(): Promise<string> {
  const lines: [string, string][] = [];
  for (const [name, load] of Object.entries(COMMANDS)) {
    const entry = await load();
    if (isGroup(entry)) {
      for (const [sub, command] of Object.entries(entry.subcommands)) lines.push([`${name} ${sub}`, command.summary]);
    } else {
      lines.push([name, entry.summary]);
    }
  }
  const width = Math.max(...lines.map(([name]) => name.length)) + 2;
  return [
    'Usage: fieldgate <command> [options]',
    '',
    'Commands:',
    ...lines.map(([name, summary]) => `  ${name.padEnd(width)}${summary}`),
    '',
    'Options:',
    '  --json      print exactly one JSON object on stdout',
    '  --help      show help (also after any command: fieldgate client update --help)',
    '',
    'Exit status: 0 done, 1 failed, 2 usage error. Configuration comes from the environment; see README.md.',
  ].join('\n');
}

function commandHelp(command: Command): string {
  return [`Usage: fieldgate ${command.synopsis} [--json]`, '', command.summary, ...(command.details?.length ? ['', ...command.details.map((d) => `  ${d}`)] : [])].join('\n');
}

function groupHelp(name: string, group: CommandGroup): string {
  return [
    `Usage: fieldgate ${name} <${Object.keys(group.subcommands).join('|')}> [options]`,
    '',
    group.summary,
    '',
    ...Object.values(group.subcommands).map((c) => `  ${c.synopsis}\n      ${c.summary}`),
    '',
    `Run fieldgate ${name} <subcommand> --help for its options.`,
  ].join('\n');
}

const wantsHelp = (args: string[]) => args.includes('--help') || args.includes('-h');

async function run(argv: string[], io: Io): Promise<void> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || (name === 'help' && rest.length === 0)) {
    io.stdout.write(`${await usage()}\n`);
    return;
  }
  if (name === 'help') return run([...rest, '--help'], io);
  const load = COMMANDS[name];
  if (!load) {
    throw new UsageError(`unknown command "${name}"${didYouMean(nearest(name, Object.keys(COMMANDS)))}\n\n${await usage()}`);
  }
  const entry = await load();
  let command: Command;
  let label = name;
  let args = rest;
  if (isGroup(entry)) {
    const [sub, ...subArgs] = rest;
    if (sub === undefined || sub === '--help' || sub === '-h') {
      if (sub === undefined) throw new UsageError(`${name} needs a subcommand: ${Object.keys(entry.subcommands).join(', ')}\n\n${groupHelp(name, entry)}`);
      io.stdout.write(`${groupHelp(name, entry)}\n`);
      return;
    }
    const found = Object.hasOwn(entry.subcommands, sub) ? entry.subcommands[sub] : undefined;
    if (!found) {
      const names = Object.keys(entry.subcommands);
      throw new UsageError(`unknown ${name} command "${sub}" (use ${names.join(", ")})${didYouMean(nearest(sub, names))}`);
    }
    command = found;
    label = `${name} ${sub}`;
    args = subArgs;
  } else {
    command = entry;
  }
  if (wantsHelp(args)) {
    io.stdout.write(`${commandHelp(command)}\n`);
    return;
  }
  const { values, positionals } = parseCommandLine(label, args, command.options);
  if (positionals.length > 0 && !command.takesArguments) {
    // Not quoted: the word may be a password typed after `--password-stdin`.
    throw new UsageError(`${label} takes no arguments (${positionals.length} given)`);
  }
  const { loadConfig } = await import('./config.js');
  await command.run({ io, values: values as never, positionals, config: () => loadConfig(io.env) });
}

/** Errors whose message is meant for the user as it is (no stack trace). */
async function isExpected(error: unknown): Promise<boolean> {
  if (error instanceof CommandFailed) return true;
  const [{ ConfigError }, { DataDirLockedError }, { DatabaseUnavailableError }, { ClientRegistrationError }, { UserRegistrationError }] = await Promise.all([
    import('./config.js'),
    import('./db/data-dir-lock.js'),
    import('./db/errors.js'),
    import('./oauth/stores/clients.js'),
    import('./oauth/stores/users.js'),
  ]);
  return (
    error instanceof ConfigError ||
    error instanceof DataDirLockedError ||
    error instanceof DatabaseUnavailableError ||
    error instanceof ClientRegistrationError ||
    error instanceof UserRegistrationError
  );
}

/** What a failed command prints: the message of an expected error, PostgreSQL's reason, or the stack of a bug. */
async function failureLine(error: unknown): Promise<string> {
  if (await isExpected(error)) return (error as Error).message;
  // A statement PostgreSQL refused (no right to create a schema, a read-only server): its reason, not a stack trace.
  const refusal = (await import('./db/errors.js')).databaseRefusal(error);
  if (refusal) return `the database refused a statement: ${refusal}`;
  return `unexpected error: ${(error as Error)?.stack ?? error}`;
}

export async function main(argv: string[], io: Io): Promise<number> {
  try {
    await run(argv, io);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`fieldgate: ${error.message}\n`);
      return 2;
    }
    io.stderr.write(`fieldgate: ${await failureLine(error)}\n`);
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
});

// A finished command has closed what it opened. What may still hold the process is a database connection the driver
// could only half-close while its backend finishes a statement (cancelled by DATABASE_STATEMENT_TIMEOUT_MS, or never
// without one): nothing the command waits for, so it does not delay the exit past a moment.
setTimeout(() => process.exit(), 1_000).unref();
