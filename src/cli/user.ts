import { text } from 'node:stream/consumers';
import { defineCommand, print, UsageError, withRuntime, type CommandGroup } from './command.js';

/** The password piped to standard input (one trailing newline dropped). */
export async function passwordFromStdin(stdin: NodeJS.ReadableStream): Promise<string> {
  const password = (await text(stdin)).replace(/\r?\n$/, '');
  if (!password) throw new UsageError('no password on standard input');
  return password;
}

const create = defineCommand({
  summary: 'add a user who can sign in',
  synopsis: 'user create --username NAME --password-stdin',
  details: ['--password-stdin   read the password (at least 8 characters) from standard input'],
  options: { username: { type: 'string' }, 'password-stdin': { type: 'boolean' } },
  async run({ io, values, config }) {
    if (!values.username) throw new UsageError('user create needs --username NAME');
    if (!values['password-stdin']) throw new UsageError('user create needs --password-stdin (the password is read from standard input)');
    const password = await passwordFromStdin(io.stdin);
    await withRuntime(config(), async (runtime) => {
      const user = await runtime.users.create(values.username!, password);
      print(io, values.json, user, `Created user ${user.username} (id ${user.id}).`);
    });
  },
});

export default {
  summary: 'manage the people who sign in',
  subcommands: { create },
} satisfies CommandGroup;
