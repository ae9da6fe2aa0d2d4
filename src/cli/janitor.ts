import { defineCommand, print, withRuntime } from './command.js';

export default defineCommand({
  summary: 'delete expired codes, refresh tokens, grants, ended sessions and throttle rows now',
  synopsis: 'janitor',
  details: ['What is kept and for how long: JANITOR_RETENTION and JANITOR_BATCH_SIZE, see README.md.'],
  options: {},
  async run({ io, values, config }) {
    const loaded = config();
    const { sweep, janitorPolicy } = await import('../oauth/janitor.js');
    await withRuntime(loaded, async (runtime) => {
      const result = await sweep(runtime.db, janitorPolicy(loaded));
      const { skipped, ...deleted } = result;
      print(
        io,
        values.json,
        result,
        skipped
          ? 'Another instance is sweeping right now; nothing more to do here.'
          : `Deleted ${Object.entries(deleted).map(([table, n]) => `${n} ${table}`).join(', ')}.`,
      );
    });
  },
});
