/** GET /products and GET /products/{id}: each request becomes one GraphQL operation. */
import type { Runtime } from '../runtime.js';
import type { RestExecutor } from './execute.js';
import type { RestRoute } from './http.js';
import { itemRoute, listRoute, type Collection } from './collection.js';

const PRODUCTS: Collection = {
  name: 'products',
  schemaName: 'Product',
  scope: 'products:read',
  listField: 'products',
  connectionField: 'productsConnection',
  itemField: 'product',
};

export function productRoutes(runtime: Runtime, rest: RestExecutor): RestRoute[] {
  return [
    listRoute(runtime, rest, PRODUCTS, {
      operationId: 'listProducts',
      summary: 'List products',
      description:
        'Products, by id unless `order_by` says otherwise, restricted by `filter`. Paged by `page_size`/`page_token`: ' +
        'the next page’s token is in `Next-Page-Token` and in `Link: <…>; rel="next"`, absent on the last page. ' +
        '`limit`/`offset` still work (legacy: their pages drift when products are added or removed).',
    }),
    itemRoute(runtime, rest, PRODUCTS, { operationId: 'getProduct', summary: 'Get one product' }),
  ];
}
