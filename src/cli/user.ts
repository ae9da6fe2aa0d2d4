import { text } from 'node:stream/consumers';
import type { UserProfile } from '../oauth/stores/users.js';
import { CommandFailed, defineCommand, print, UsageError, withRuntime, type CommandGroup } from './command.js';

/** The password piped to standard input (one trailing newline dropped). */
export async function passwordFromStdin(stdin: NodeJS.ReadableStream): Promise<string> {
  const password = (await text(stdin)).replace(/\r?\n$/, '');
  if (!password) throw new UsageError('no password on standard input');
  return password;
}

const PROFILE_DETAILS = [
  '--name "Display Name"   the OpenID `name` claim (scope profile); "" clears it',
  '--email ADDRESS         the OpenID `email` claim (scope email); "" clears it',
  '--email-verified        mark the address verified (email_verified=true); a new address is unverified otherwise',
];
const PROFILE_OPTIONS = { name: { type: 'string' }, email: { type: 'string' }, 'email-verified': { type: 'boolean' } } as const;

function profileOf(values: { name?: string | undefined; email?: string | undefined; 'email-verified'?: boolean | undefined }): UserProfile {
  return {
    ...(values.name === undefined ? {} : { displayName: values.name }),
    ...(values.email === undefined ? {} : { email: values.email }),
    ...(values['email-verified'] === undefined ? {} : { emailVerified: values['email-verified'] }),
  };
}

const create = defineCommand({
  summary: 'add a user who can sign in',
  synopsis: 'user create --username NAME --password-stdin [--name "Display Name"] [--email ADDRESS [--email-verified]]',
  details: ['--password-stdin   read the password (at least 8 characters) from standard input', ...PROFILE_DETAILS],
  options: { username: { type: 'string' }, 'password-stdin': { type: 'boolean' }, ...PROFILE_OPTIONS },
  async run({ io, values, config }) {
    if (!values.username) throw new UsageError('user create needs --username NAME');
    if (!values['password-stdin']) throw new UsageError('user create needs --password-stdin (the password is read from standard input)');
    const password = await passwordFromStdin(io.stdin);
    await withRuntime(config(), async (runtime) => {
      const user = await runtime.users.create(values.username!, password, { profile: profileOf(values) });
      print(io, values.json, user, `Created user ${user.username} (id ${user.id}).`);
    });
  },
});

const list = defineCommand({
  summary: 'list the users (never their passwords)',
  synopsis: 'user list',
  options: {},
  async run({ io, values, config }) {
    await withRuntime(config(), async (runtime) => {
      const shown = (await runtime.users.list()).map((u) => ({ id: u.id, username: u.username, created_at: u.createdAt.toISOString() }));
      print(io, values.json, { users: shown }, shown.length === 0 ? 'No users.' : shown.map((u) => `${u.id}\t${u.username}\t${u.created_at}`).join('\n'));
    });
  },
});

function onlyUsername(positionals: string[], command: string): string {
  const [username] = positionals;
  if (!username || positionals.length > 1) throw new UsageError(`user ${command} needs exactly one USERNAME`);
  return username;
}

const remove = defineCommand({
  summary: 'delete an account; its grants end and its tokens stop working',
  synopsis: 'user delete USERNAME',
  options: {},
  takesArguments: true,
  async run({ io, values, positionals, config }) {
    const username = onlyUsername(positionals, 'delete');
    await withRuntime(config(), async (runtime) => {
      if (!(await runtime.users.delete(username))) throw new CommandFailed(`no user ${username}`);
      print(io, values.json, { deleted: username }, `Deleted user ${username} and every grant and token of theirs.`);
    });
  },
});

const passwd = defineCommand({
  summary: "set a new password; revokes the user's grants",
  synopsis: 'user passwd USERNAME --password-stdin',
  details: ['--password-stdin   read the new password (at least 8 characters) from standard input'],
  options: { 'password-stdin': { type: 'boolean' } },
  takesArguments: true,
  async run({ io, values, positionals, config }) {
    const username = onlyUsername(positionals, 'passwd');
    if (!values['password-stdin']) throw new UsageError('user passwd needs --password-stdin (the password is read from standard input)');
    const password = await passwordFromStdin(io.stdin);
    await withRuntime(config(), async (runtime) => {
      const userId = await runtime.users.setPassword(username, password);
      if (userId === undefined) throw new CommandFailed(`no user ${username}`);
      // The apps with a back-channel logout URI hear that every session of the user ended (failures are logged, as in the server).
      const [{ createOAuthContext }, { notifyBackchannelLogout }] = await Promise.all([import('../oauth/context.js'), import('../oauth/oidc/backchannel.js')]);
      await notifyBackchannelLogout(createOAuthContext(runtime), userId);
      print(io, values.json, { updated: username }, `Set a new password for ${username}; their existing grants are revoked.`);
    });
  },
});

const update = defineCommand({
  summary: "change a user's display name or email (OpenID profile and email claims)",
  synopsis: 'user update USERNAME [--name "Display Name"] [--email ADDRESS] [--email-verified]',
  details: PROFILE_DETAILS,
  options: PROFILE_OPTIONS,
  takesArguments: true,
  async run({ io, values, positionals, config }) {
    const username = onlyUsername(positionals, 'update');
    const profile = profileOf(values);
    if (Object.keys(profile).length === 0) throw new UsageError('user update needs something to change: --name, --email or --email-verified');
    await withRuntime(config(), async (runtime) => {
      if (!(await runtime.users.updateProfile(username, profile))) throw new CommandFailed(`no user ${username}`);
      print(io, values.json, { updated: username }, `Updated ${username}.`);
    });
  },
});

const unlock = defineCommand({
  summary: 'clear the failed sign-in lock of an account',
  synopsis: 'user unlock USERNAME',
  options: {},
  takesArguments: true,
  async run({ io, values, positionals, config }) {
    const username = onlyUsername(positionals, 'unlock');
    const { LoginThrottle } = await import('../oauth/browser/login-throttle.js');
    await withRuntime(config(), async (runtime) => {
      const unlocked = await new LoginThrottle(runtime.db).unlock(username);
      print(io, values.json, { unlocked: username, was_throttled: unlocked }, `Cleared the sign-in lock of ${username}${unlocked ? '' : ' (there was none)'}.`);
    });
  },
});

export default {
  summary: 'manage the people who sign in',
  subcommands: { create, list, update, delete: remove, passwd, unlock },
} satisfies CommandGroup;
