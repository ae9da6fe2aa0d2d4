import { CommandFailed, defineCommand, onePositional, print, withRuntime, type CommandGroup } from './command.js';

const rotate = defineCommand({
  summary: 'make a new signing key current for each algorithm, ES256 and RS256 (the old ones stay published until their tokens expire)',
  synopsis: 'keys rotate',
  options: {},
  async run({ io, values, config }) {
    const loaded = config();
    const { rotateSigningKey } = await import('../tokens/signing-keys.js');
    await withRuntime(loaded, async (runtime) => {
      const rotated = await rotateSigningKey(runtime.db, loaded.accessTokenTtl);
      print(
        io,
        values.json,
        rotated,
        `New signing keys ${rotated.keys.map((key) => `${key.kid} (${key.alg})`).join(', ')}. Retired ${rotated.retired.join(', ') || 'none'}; retired keys stay published until their tokens expire.`,
      );
    });
  },
});

const list = defineCommand({
  summary: 'list the signing keys: current, published (retired, tokens may be live) or expired',
  synopsis: 'keys list',
  options: {},
  async run({ io, values, config }) {
    const loaded = config();
    const { listSigningKeys } = await import('../tokens/signing-keys.js');
    await withRuntime(loaded, async (runtime) => {
      const keys = await listSigningKeys(runtime.db, loaded.accessTokenTtl);
      print(
        io,
        values.json,
        { keys },
        keys.map((k) => `${k.kid}\t${k.alg}\t${k.state}\tcreated ${k.createdAt.toISOString()}${k.retiredAt ? `\tretired ${k.retiredAt.toISOString()}` : ''}`).join('\n'),
      );
    });
  },
});

const retire = defineCommand({
  summary: 'withdraw a key now (it leaked): tokens it signed stop working; a current key is replaced first by one of its algorithm',
  synopsis: 'keys retire KID',
  takesArguments: true,
  options: {},
  async run({ io, values, positionals, config }) {
    const kid = onePositional('keys retire', 'key id (see `fieldgate keys list`)', positionals);
    const loaded = config();
    const { retireSigningKey } = await import('../tokens/signing-keys.js');
    await withRuntime(loaded, async (runtime) => {
      const retired = await retireSigningKey(runtime.db, kid, loaded.accessTokenTtl);
      if (!retired) throw new CommandFailed(`no signing key ${kid}`);
      print(
        io,
        values.json,
        retired,
        `Withdrew signing key ${kid} (${retired.alg}); tokens it signed no longer verify. Current ${retired.alg} key: ${retired.current ?? 'none'}.`,
      );
    });
  },
});

export default {
  summary: 'manage the keys that sign access tokens (ES256) and ID Tokens (ES256, or RS256 for clients that ask)',
  subcommands: { rotate, list, retire },
} satisfies CommandGroup;
