import { CommandFailed, defineCommand, print, UsageError, withRuntime, type CommandGroup } from './command.js';

const list = defineCommand({
  summary: 'list what users have allowed clients',
  synopsis: 'consent list [--user NAME] [--client ID]',
  options: { user: { type: 'string' }, client: { type: 'string' } },
  async run({ io, values, config }) {
    const { ConsentStore } = await import('../oauth/stores/consents.js');
    await withRuntime(config(), async (runtime) => {
      const consents = await new ConsentStore(runtime.db).list({
        ...(values.user === undefined ? {} : { username: values.user }),
        ...(values.client === undefined ? {} : { clientId: values.client }),
      });
      print(
        io,
        values.json,
        { consents },
        consents.length === 0
          ? 'No consents.'
          : consents.map((c) => `${c.username}\t${c.clientId}\t${c.clientName}\t${c.scope}\t${c.liveGrants} live grant(s)`).join('\n'),
      );
    });
  },
});

const revoke = defineCommand({
  summary: "withdraw a user's consent to a client and revoke every token between them",
  synopsis: 'consent revoke --user NAME --client ID',
  details: ['Refresh tokens stop at once; access tokens within a second on every instance (the revocation cache).'],
  options: { user: { type: 'string' }, client: { type: 'string' } },
  async run({ io, values, config }) {
    if (!values.user || !values.client) throw new UsageError('consent revoke needs --user NAME and --client ID');
    const { ConsentStore } = await import('../oauth/stores/consents.js');
    await withRuntime(config(), async (runtime) => {
      const result = await new ConsentStore(runtime.db).revoke(values.user!, values.client!);
      if (!result) throw new CommandFailed(`no user ${values.user}`);
      if (!result.consentDeleted && result.grantsRevoked === 0) {
        throw new CommandFailed(`${values.user} has no consent or live grant for client ${values.client}`);
      }
      print(
        io,
        values.json,
        { user: values.user, client: values.client, ...result },
        `Revoked ${values.user}'s consent to ${values.client} and ${result.grantsRevoked} grant(s).`,
      );
    });
  },
});

export default {
  summary: 'see and withdraw what users have allowed clients',
  subcommands: { list, revoke },
} satisfies CommandGroup;
