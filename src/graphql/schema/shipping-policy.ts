import { builder } from '../builder.js';

export const ShippingPolicy = builder.drizzleObject('shippingPolicies', {
  name: 'ShippingPolicy',
  select: {},
  fields: (t) => ({
    id: t.exposeInt('id'),
    name: t.exposeString('name'),
    minDays: t.exposeInt('minDays'),
    maxDays: t.exposeInt('maxDays'),
    feeCents: t.exposeInt('feeCents'),
    regions: t.exposeStringList('regions'),
  }),
});
