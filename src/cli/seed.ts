import { defineCommand, print, UsageError, withRuntime } from './command.js';
import { describeDemo } from './serve.js';

export default defineCommand({
  summary: 'add the demo catalogue, user and client',
  synopsis: 'seed --demo',
  details: ['--demo   the demo data set (the only one there is); running it again adds nothing twice'],
  options: { demo: { type: 'boolean' } },
  async run({ io, values, config }) {
    if (!values.demo) throw new UsageError('seed needs --demo (the only data set there is)');
    const loaded = config();
    const { seedDemo } = await import('../demo/seed.js');
    await withRuntime(loaded, async (runtime) => {
      const seeded = await runtime.database.exclusively(() => seedDemo(runtime));
      print(io, values.json, seeded, `Seeded ${seeded.productsCreated} products.\n${await describeDemo(loaded, seeded)}`);
    });
  },
});
