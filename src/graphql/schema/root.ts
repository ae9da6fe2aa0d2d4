/** The root operation types and the scalars every other type file builds on. */
import { DateTimeISOResolver } from 'graphql-scalars';
import { builder } from '../builder.js';

builder.queryType({});
builder.mutationType({});

// Serialized as an ISO 8601 string (not a Date), so in-process callers see what HTTP clients see.
builder.addScalarType('DateTime', DateTimeISOResolver, {
  description: 'A date and time in UTC, as an ISO 8601 string such as 2007-12-03T10:15:30.000Z.',
});
