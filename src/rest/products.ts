/**
 * GET /products and GET /products/{id}: the catalogue, with `fields` choosing what each
 * product carries. Each request becomes `Query.products` / `Query.product` with a selection
 * set built from `fields`.
 */
import type { Runtime } from '../runtime.js';
import { parseFields } from './fields.js';
import { RestNotFound } from './errors.js';
import type { RestExecutor } from './execute.js';
import { authenticate, onlyQueryParameters, principalOf, queryParameter, type RestRoute } from './http.js';
import { fetchPage, idOf, nextLink, pageOf } from './paging.js';
import { schemaRef } from './openapi.js';

export function productRoutes(runtime: Runtime, rest: RestExecutor): RestRoute[] {
  return [
    {
      method: 'get',
      path: '/products',
      operationId: 'listProducts',
      summary: 'List products',
      description: 'Products by id. `limit`/`offset` page the list; a `Link: <…>; rel="next"` header points to the next page when there is one.',
      scope: 'products:read',
      query: ['fields', 'limit', 'offset'],
      success: { status: 200, description: 'The page of products.', schema: { type: 'array', items: schemaRef('Product') }, headers: ['Link'] },
      errors: [],
      handlers: [
        authenticate(runtime),
        onlyQueryParameters(['fields', 'limit', 'offset']),
        async function listProducts(req, res) {
          const page = pageOf(req);
          const operation = rest.operation({
            route: 'products.list',
            operation: 'query',
            field: 'products',
            args: ['limit', 'offset'],
            fields: parseFields(queryParameter(req, 'fields')),
          });
          const { items, hasNext } = await fetchPage(rest, operation, page, principalOf(res));
          if (hasNext) res.setHeader('Link', nextLink(runtime, req, page));
          res.json(operation.project(items));
        },
      ],
    },
    {
      method: 'get',
      path: '/products/:id',
      operationId: 'getProduct',
      summary: 'Get one product',
      scope: 'products:read',
      query: ['fields'],
      success: { status: 200, description: 'The product.', schema: schemaRef('Product'), headers: [] },
      errors: [404],
      handlers: [
        authenticate(runtime),
        onlyQueryParameters(['fields']),
        async function getProduct(req, res) {
          const id = idOf(req);
          const operation = rest.operation({
            route: 'products.get',
            operation: 'query',
            field: 'product',
            args: ['id'],
            fields: parseFields(queryParameter(req, 'fields')),
          });
          const product = await rest.run(operation, { id }, principalOf(res));
          if (product === null) throw new RestNotFound(`no product ${id}`);
          res.json(operation.project(product));
        },
      ],
    },
  ];
}
