/** The whole schema: importing a type file registers its types, queries and mutations. */
import { builder } from '../builder.js';
import './root.js';
import './seller.js';
import './shipping-policy.js';
import './review.js';
import './product.js';
import './order.js';

// Definition order, not alphabetical: OrderStatus then reads in lifecycle order.
export const schema = builder.toSchema({ sortSchema: false });
