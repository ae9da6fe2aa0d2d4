import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // graphql 16 ships both an ESM and a CJS build. Node (and so Pothos and yoga at run time)
    // loads the CJS one; without this alias Vite would hand our sources the ESM one, and
    // graphql refuses to mix the two ("Cannot use GraphQLSchema from another module").
    alias: [{ find: /^graphql$/, replacement: 'graphql/index.js' }],
  },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default'],
  },
});
