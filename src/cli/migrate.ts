import { defineCommand, print, withRuntime } from './command.js';

export default defineCommand({
  summary: 'apply database migrations',
  synopsis: 'migrate',
  options: {},
  async run({ io, values, config }) {
    await withRuntime(config(), async (runtime) => {
      print(io, values.json, { migrated: true, database: runtime.database.kind }, `Migrations applied (${runtime.database.kind}).`);
    });
  },
});
