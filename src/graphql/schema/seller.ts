import { builder } from '../builder.js';

export const Seller = builder.drizzleObject('sellers', {
  name: 'Seller',
  select: {},
  fields: (t) => ({
    id: t.exposeInt('id'),
    name: t.exposeString('name'),
    rating: t.exposeFloat('rating', { nullable: true, description: 'Average rating from 0 to 5; null until rated.' }),
  }),
});
