/**
 * The Pothos schema builder: plugins and their options only. Types live under `schema/`, one
 * file per type with its queries and mutations (Pothos' app-layout guide).
 */
import SchemaBuilder from '@pothos/core';
import ComplexityPlugin from '@pothos/plugin-complexity';
import DrizzlePlugin from '@pothos/plugin-drizzle';
import { getTableConfig } from 'drizzle-orm/pg-core';
import { relations } from '../db/relations.js';
import type { GraphQLContext } from './context.js';

export interface SchemaTypes {
  Context: GraphQLContext;
  // Fields are non-null unless they say otherwise, as in the type listing.
  DefaultFieldNullability: false;
  DrizzleRelations: typeof relations;
  Scalars: {
    DateTime: { Input: Date; Output: Date };
  };
}

export const builder = new SchemaBuilder<SchemaTypes>({
  plugins: [ComplexityPlugin, DrizzlePlugin],
  defaultFieldNullability: false,
  drizzle: {
    // Each runtime (PGlite or PostgreSQL) brings its own client; the schema is built once.
    client: (context) => context.db,
    // With `select: {}` on every drizzleObject, this lets the plugin read only selected columns.
    getTableConfig,
    relations,
  },
  complexity: {
    defaultComplexity: 1,
    defaultListMultiplier: 10,
    // The cost limit is enforced by limits.ts before execution starts (a 400 for the whole
    // request), not by the plugin's resolver wrapper, which would fail only the root field.
    disabled: true,
  },
});
