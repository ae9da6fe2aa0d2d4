import { builder } from '../builder.js';

export const Review = builder.drizzleObject('reviews', {
  name: 'Review',
  select: {},
  fields: (t) => ({
    id: t.exposeInt('id'),
    author: t.exposeString('author'),
    rating: t.exposeInt('rating'),
    body: t.exposeString('body', { nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});
