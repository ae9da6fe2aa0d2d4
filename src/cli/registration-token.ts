import { CommandFailed, defineCommand, onePositional, parseDuration, print, withRuntime, type CommandGroup } from './command.js';

const create = defineCommand({
  summary: 'make an initial access token for POST /register (REGISTRATION=token), shown once',
  synopsis: 'registration-token create [--label TEXT] [--ttl 30d]',
  details: [
    '--label TEXT     a note to recognise the token by in `registration-token list`',
    '--ttl DURATION   how long it works: 90s, 15m, 1h, 2d…; at most 365 days; default: until deleted',
    'A token may register any number of clients until it expires or is deleted; only its hash is stored.',
  ],
  options: { label: { type: 'string' }, ttl: { type: 'string' } },
  async run({ io, values, config }) {
    const ttlSeconds = values.ttl === undefined ? undefined : parseDuration('--ttl', values.ttl, 365 * 86_400);
    const { RegistrationTokenStore } = await import('../oauth/stores/registration-tokens.js');
    await withRuntime(config(), async (runtime) => {
      const { token, record } = await new RegistrationTokenStore(runtime.db).create({
        ...(values.label === undefined ? {} : { label: values.label }),
        ...(ttlSeconds === undefined ? {} : { ttlSeconds }),
      });
      print(
        io,
        values.json,
        { token, id: record.id, label: record.label, expires_at: record.expiresAt?.toISOString() ?? null },
        [
          `token:   ${token}   (shown once; give it to the client as "Authorization: Bearer <token>" at /register)`,
          `id:      ${record.id}`,
          `expires: ${record.expiresAt?.toISOString() ?? 'never (until deleted)'}`,
        ].join('\n'),
      );
    });
  },
});

const list = defineCommand({
  summary: 'list initial access tokens (ids and labels, never the tokens)',
  synopsis: 'registration-token list',
  options: {},
  async run({ io, values, config }) {
    const { RegistrationTokenStore } = await import('../oauth/stores/registration-tokens.js');
    await withRuntime(config(), async (runtime) => {
      const tokens = await new RegistrationTokenStore(runtime.db).list();
      print(
        io,
        values.json,
        { tokens },
        tokens.length === 0
          ? 'No initial access tokens.'
          : tokens.map((t) => `${t.id}\t${t.label ?? ''}\tcreated ${t.createdAt.toISOString()}\texpires ${t.expiresAt?.toISOString() ?? 'never'}`).join('\n'),
      );
    });
  },
});

const remove = defineCommand({
  summary: 'delete an initial access token (clients it registered stay)',
  synopsis: 'registration-token delete ID',
  takesArguments: true,
  options: {},
  async run({ io, values, positionals, config }) {
    const id = onePositional('registration-token delete', 'token id (see `fieldgate registration-token list`)', positionals);
    const { RegistrationTokenStore } = await import('../oauth/stores/registration-tokens.js');
    await withRuntime(config(), async (runtime) => {
      if (!(await new RegistrationTokenStore(runtime.db).delete(id))) throw new CommandFailed(`no initial access token ${id}`);
      print(io, values.json, { id, deleted: true }, `Deleted initial access token ${id}.`);
    });
  },
});

export default {
  summary: 'manage initial access tokens for dynamic client registration',
  subcommands: { create, list, delete: remove },
} satisfies CommandGroup;
