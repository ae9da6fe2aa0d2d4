/**
 * The read-path scenarios (a)–(e) of issue 7 and (f), the nested list of issue 19. Each is one HTTP request shape, checked once
 * with a probe before it is measured, so a wrong answer (404, 401, a body with extra keys)
 * is reported as such instead of being measured as fast.
 */
export type ReadScenarioId = 'a' | 'b' | 'c' | 'd' | 'e' | 'f';

export interface ReadScenario {
  id: ReadScenarioId;
  label: string;
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** Returns what is wrong with a probe's answer, or undefined when it is right. */
  check(status: number, body: string): string | undefined;
}

const PRODUCT_QUERY = 'query Product($id: Int!) { product(id: $id) { id name } }';

/** Target 5: the nested list, in Fieldgate's schema and in PostGraphile's (Amber inflection). */
export const NESTED_LIST_QUERY = '{ products(limit: 20) { id name seller { name } reviews { rating } } }';
/** Fieldgate's `reviews` defaults to the first 10 by id; PostGraphile gets the same limit and order. */
export const POSTGRAPHILE_NESTED_LIST_QUERY =
  '{ allProducts(first: 20, orderBy: PRIMARY_KEY_ASC) { nodes { rowId name sellerBySellerId { name } reviewsByProductId(first: 10, orderBy: PRIMARY_KEY_ASC) { nodes { rating } } } } }';

export interface NestedProduct {
  id: number;
  name: string;
  seller: { name: string };
  reviews: { rating: number }[];
}

/** Fieldgate's answer to NESTED_LIST_QUERY as plain rows, or what is wrong with it. */
export function nestedFromFieldgate(body: string): NestedProduct[] | string {
  const value = json(body) as { data?: { products?: NestedProduct[] }; errors?: unknown } | undefined;
  if (!value) return `not JSON: ${body.slice(0, 200)}`;
  if (value.errors) return `GraphQL errors: ${JSON.stringify(value.errors).slice(0, 200)}`;
  const rows = value.data?.products;
  if (!Array.isArray(rows)) return 'no products list';
  return rows;
}

/** PostGraphile's answer to POSTGRAPHILE_NESTED_LIST_QUERY in Fieldgate's shape, or what is wrong with it. */
export function nestedFromPostGraphile(body: string): NestedProduct[] | string {
  type Row = { rowId: number; name: string; sellerBySellerId: { name: string }; reviewsByProductId: { nodes: { rating: number }[] } };
  const value = json(body) as { data?: { allProducts?: { nodes?: Row[] } }; errors?: unknown } | undefined;
  if (!value) return `not JSON: ${body.slice(0, 200)}`;
  if (value.errors) return `GraphQL errors: ${JSON.stringify(value.errors).slice(0, 200)}`;
  const rows = value.data?.allProducts?.nodes;
  if (!Array.isArray(rows)) return 'no allProducts.nodes list';
  return rows.map((row) => ({ id: row.rowId, name: row.name, seller: { name: row.sellerBySellerId?.name }, reviews: row.reviewsByProductId?.nodes ?? [] }));
}

/** What is wrong with a nested-list answer: not 20 products, or other keys than asked for. */
export function checkNested(rows: NestedProduct[]): string | undefined {
  if (rows.length !== 20) return `${rows.length} products, expected 20`;
  for (const row of rows) {
    const keys = Object.keys(row).sort().join(',');
    if (keys !== 'id,name,reviews,seller') return `keys are ${keys}, expected id,name,reviews,seller`;
    if (typeof row.id !== 'number' || typeof row.name !== 'string' || typeof row.seller?.name !== 'string') return `unexpected values ${JSON.stringify(row).slice(0, 120)}`;
    if (!Array.isArray(row.reviews) || row.reviews.some((review) => Object.keys(review).join(',') !== 'rating' || typeof review.rating !== 'number')) {
      return `reviews are not [{rating}]: ${JSON.stringify(row.reviews).slice(0, 100)}`;
    }
  }
  return undefined;
}

function json(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}

function exactlyIdName(value: unknown, productId: number): string | undefined {
  if (typeof value !== 'object' || value === null) return 'not a JSON object';
  const keys = Object.keys(value).sort().join(',');
  if (keys !== 'id,name') return `keys are ${keys}, expected id,name`;
  const row = value as { id: unknown; name: unknown };
  if (row.id !== productId || typeof row.name !== 'string') return `unexpected values ${JSON.stringify(value)}`;
  return undefined;
}

function expectOk(status: number, body: string, then: (value: unknown) => string | undefined): string | undefined {
  if (status !== 200) return `HTTP ${status}: ${body.slice(0, 200)}`;
  const value = json(body);
  if (value === undefined) return `not JSON: ${body.slice(0, 200)}`;
  return then(value);
}

export function readScenarios(productId: number, accessToken: string): ReadScenario[] {
  const bearer = { authorization: `Bearer ${accessToken}` };
  return [
    {
      id: 'a',
      label: '(a) bare Express 5 route, fixed JSON',
      method: 'GET',
      path: '/bench/bare',
      headers: {},
      check: (status, body) => expectOk(status, body, (value) => (typeof value === 'object' && value ? undefined : 'not an object')),
    },
    {
      id: 'b',
      label: '(b) Express + Drizzle `SELECT id, name … WHERE id = $1`',
      method: 'GET',
      path: `/bench/direct/${productId}`,
      headers: {},
      check: (status, body) => expectOk(status, body, (value) => exactlyIdName(value, productId)),
    },
    {
      id: 'c',
      label: '(c) REST `GET /products/{id}?fields=id,name` + bearer',
      method: 'GET',
      path: `/products/${productId}?fields=id,name`,
      headers: bearer,
      check: (status, body) => expectOk(status, body, (value) => exactlyIdName(value, productId)),
    },
    {
      id: 'd',
      label: '(d) `POST /graphql` `product(id) { id name }` + bearer',
      method: 'POST',
      path: '/graphql',
      headers: { ...bearer, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ query: PRODUCT_QUERY, variables: { id: productId } }),
      check: (status, body) =>
        expectOk(status, body, (value) => {
          const result = value as { data?: { product?: unknown }; errors?: unknown };
          if (result.errors) return `GraphQL errors: ${JSON.stringify(result.errors).slice(0, 200)}`;
          return exactlyIdName(result.data?.product, productId);
        }),
    },
    {
      id: 'e',
      label: '(e) REST `GET /products?fields=id,name,reviews(rating)&limit=20` + bearer',
      method: 'GET',
      path: '/products?fields=id,name,reviews(rating)&limit=20',
      headers: bearer,
      check: (status, body) =>
        expectOk(status, body, (value) => {
          if (!Array.isArray(value)) return 'not a JSON array';
          if (value.length !== 20) return `${value.length} products, expected 20`;
          for (const item of value as Record<string, unknown>[]) {
            const keys = Object.keys(item).sort().join(',');
            if (keys !== 'id,name,reviews') return `keys are ${keys}, expected id,name,reviews`;
            const reviews = item.reviews as Record<string, unknown>[];
            if (!Array.isArray(reviews) || reviews.some((review) => Object.keys(review).join(',') !== 'rating')) {
              return `reviews are not [{rating}]: ${JSON.stringify(item.reviews).slice(0, 100)}`;
            }
          }
          return undefined;
        }),
    },
    {
      id: 'f',
      label: '(f) `POST /graphql` `products(limit: 20) { id name seller { name } reviews { rating } }` + bearer',
      method: 'POST',
      path: '/graphql',
      headers: { ...bearer, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ query: NESTED_LIST_QUERY }),
      check: (status, body) => {
        if (status !== 200) return `HTTP ${status}: ${body.slice(0, 200)}`;
        const rows = nestedFromFieldgate(body);
        return typeof rows === 'string' ? rows : checkNested(rows);
      },
    },
  ];
}
