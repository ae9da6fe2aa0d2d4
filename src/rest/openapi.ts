/** GET /openapi.json, generated from the route records the router serves and the GraphQL schema, so it cannot drift. */
import {
  GraphQLNonNull,
  getNamedType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  type GraphQLType,
  type GraphQLNamedType,
  type GraphQLSchema,
} from 'graphql';
import type { RequestHandler } from 'express';
import type { Runtime } from '../runtime.js';
import { needsUser, SCOPES } from '../oauth/scopes.js';
import { authorizationServerMetadata, METADATA_PATH } from '../oauth/endpoints/metadata.js';
import { MAX_FIELDS_DEPTH, MAX_FIELDS_LENGTH } from './fields.js';
import type { RestExecutor } from './execute.js';
import { MAX_BODY_BYTES, type QueryParameter, type RestRoute } from './http.js';
import { MAX_URL_LENGTH } from '../http/client-error.js';
import { DEFAULT_LIMIT, DEFAULT_PAGE_SIZE, MAX_INT, MAX_LIMIT, MAX_PAGE_SIZE } from './paging.js';
import { MAX_FILTER_DEPTH, MAX_FILTER_LENGTH, MAX_FILTER_TERMS } from '../api/filter.js';
import { MAX_ORDER_BY_LENGTH } from '../api/order-by.js';
import { MAX_PAGE_TOKEN_LENGTH } from '../api/page-token.js';
import { BAD_REQUEST_TYPE, ERROR_DOMAIN, ERROR_INFO_TYPE } from './errors.js';
import { allowedFields, rootFieldType } from './selection.js';
import { fieldScopes } from '../graphql/scopes.js';
import { DPOP_ALGORITHMS } from '../tokens/dpop.js';
import { MAX_IDEMPOTENCY_KEY_LENGTH } from '../graphql/idempotency.js';
import { MAX_ITEM_QUANTITY, MAX_MEMO_LENGTH, MAX_ORDER_ITEMS } from '../graphql/schema/order.js';

type JsonSchema = Record<string, unknown>;

export const schemaRef = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });

const SCALARS: Record<string, JsonSchema> = {
  Int: { type: 'integer', format: 'int32' },
  Float: { type: 'number' },
  String: { type: 'string' },
  Boolean: { type: 'boolean' },
  ID: { type: 'string' },
  DateTime: { type: 'string', format: 'date-time' },
};

function nullable(schema: JsonSchema): JsonSchema {
  if (typeof schema.type === 'string') return { ...schema, type: [schema.type, 'null'] };
  return { oneOf: [schema, { type: 'null' }] };
}

function namedSchema(type: GraphQLNamedType): JsonSchema {
  if (isEnumType(type)) return { type: 'string', enum: type.getValues().map((value) => value.name.toLowerCase()) };
  if (isScalarType(type)) return { ...(SCALARS[type.name] ?? {}), ...(SCALARS[type.name] ? {} : { description: `${type.name} scalar` }) };
  return schemaRef(type.name);
}

function typeSchema(type: GraphQLType): JsonSchema {
  if (isNonNullType(type)) return typeSchema(type.ofType);
  if (isListType(type)) return nullable({ type: 'array', items: typeSchemaNonNull(type.ofType) });
  return nullable(namedSchema(type));
}

function typeSchemaNonNull(type: GraphQLType): JsonSchema {
  if (isNonNullType(type)) {
    const inner = type.ofType;
    if (isListType(inner)) return { type: 'array', items: typeSchemaNonNull(inner.ofType) };
    return namedSchema(inner);
  }
  return typeSchema(type);
}

/**
 * Bounds the order mutations enforce (src/graphql/schema/order.ts), as JSON Schema keywords a generated client can
 * check before sending; GraphQL's input types carry them only as text. `maxLength` counts code points, as the server does.
 */
const INPUT_BOUNDS: Record<string, Record<string, JsonSchema>> = {
  OrderItemInput: { quantity: { minimum: 1, maximum: MAX_ITEM_QUANTITY } },
  CreateOrderInput: { items: { minItems: 1, maxItems: MAX_ORDER_ITEMS }, memo: { maxLength: MAX_MEMO_LENGTH } },
  UpdateOrderInput: { memo: { maxLength: MAX_MEMO_LENGTH } },
};

// A body field the resource has is nullable only where the resource's field is (null clears it), whatever
// GraphQL's optional input type says.
function componentSchemas(
  schema: GraphQLSchema,
  roots: { operation: 'query' | 'mutation'; field: string }[],
  inputs: string[],
  resources: ReadonlyMap<string, string>,
): Record<string, JsonSchema> {
  const out: Record<string, JsonSchema> = {};
  const visit = (type: GraphQLNamedType): void => {
    if (out[type.name]) return;
    if (isObjectType(type)) {
      const properties: Record<string, JsonSchema> = {};
      const onlyWhenNamed: string[] = [];
      // No property is `required`: a sparse answer (AIP-157 `fields`) has exactly the named ones, and no others.
      out[type.name] = { type: 'object', properties, additionalProperties: false };
      const ownScopes = new Set(fieldScopes({ type, extensions: {} }));
      for (const [name, field] of allowedFields(type)) {
        // Mirrors selection.ts: a field needing another scope is left out unless named.
        const extra = fieldScopes(field).filter((scope) => !ownScopes.has(scope));
        if (extra.length) onlyWhenNamed.push(`\`${name}\``);
        const note = extra.length ? `Not in the default response: only when named in \`fields\`, and then it needs ${extra.join(', ')}.` : '';
        const description = [field.description, note].filter(Boolean).join(' ');
        properties[name] = { ...typeSchemaNonNull(field.type), ...(description ? { description } : {}) };
        visit(getNamedType(field.type));
      }
      const presence = onlyWhenNamed.length
        ? `Every field but ${onlyWhenNamed.join(', ')} is present unless \`fields\` leaves it out; ${onlyWhenNamed.join(', ')} only when named.`
        : 'Every field is present unless `fields` leaves it out.';
      out[type.name]!.description = `${type.description ? `${type.description} ` : ''}${presence}`;
    } else if (isInputObjectType(type)) {
      const properties: Record<string, JsonSchema> = {};
      const required: string[] = [];
      // Unknown members are not forbidden here: a PATCH body may carry any field and only masked ones are read.
      out[type.name] = { type: 'object', properties, required };
      if (type.description) out[type.name]!.description = type.description;
      const resource = resources.get(type.name);
      const written = resource === undefined ? undefined : schema.getType(resource);
      const outputs = written && isObjectType(written) ? allowedFields(written) : undefined;
      const bounds = INPUT_BOUNDS[type.name] ?? {};
      for (const field of Object.values(type.getFields())) {
        const output = outputs?.get(field.name);
        const nonNull = isNonNullType(field.type) || (output !== undefined && isNonNullType(output.type));
        const type = nonNull && !isNonNullType(field.type) ? new GraphQLNonNull(field.type) : field.type;
        properties[field.name] = {
          ...typeSchemaNonNull(type),
          ...bounds[field.name],
          ...(field.description ? { description: field.description } : {}),
        };
        if (isNonNullType(field.type) && field.defaultValue === undefined) required.push(field.name);
        visit(getNamedType(field.type));
      }
    }
  };
  for (const root of roots) visit(rootFieldType(schema, root.operation, root.field));
  for (const name of inputs) {
    const type = schema.getType(name);
    if (type) visit(type);
  }
  return out;
}

const PARAMETERS: Record<QueryParameter, JsonSchema> = {
  fields: {
    name: 'fields',
    in: 'query',
    required: false,
    description:
      'Which fields each resource carries (Google partial-response syntax). A comma-separated list of names; ' +
      'whitespace around names is ignored, duplicates collapse, order does not matter, an empty name between commas is skipped. ' +
      'Nested fields: `seller(name,rating)` or the path form `seller.name` (paths on one object merge); a bare object name (`seller`) returns it whole. ' +
      `Absent, empty or \`*\` means every field. Unknown names, list indexes and bad syntax are 400. At most ${MAX_FIELDS_LENGTH} characters and ${MAX_FIELDS_DEPTH} levels.`,
    schema: { type: 'string', maxLength: MAX_FIELDS_LENGTH },
    examples: { flat: { value: 'id,name,priceCents' }, nested: { value: 'id,seller(name,rating),reviews.rating' } },
  },
  limit: {
    name: 'limit',
    in: 'query',
    required: false,
    description:
      'Page size. A page whose selection would cost more than the GraphQL cost limit (GRAPHQL_MAX_COST; every order field on ' +
      `a page of 200 orders does) is refused with 400: ask for fewer fields or a smaller page (a \`limit\` is exact; \`page_size\` shrinks instead). Legacy (with \`offset\`; not with page tokens); ${DEFAULT_LIMIT} when absent.`,
    schema: { type: 'integer', minimum: 1, maximum: MAX_LIMIT },
  },
  page_size: {
    name: 'page_size',
    in: 'query',
    required: false,
    description:
      `The most items a page holds (AIP-158): absent or 0 means ${DEFAULT_PAGE_SIZE}, more than ${MAX_PAGE_SIZE} means ${MAX_PAGE_SIZE}. ` +
      'A page may hold fewer while more follow: besides the last page, one whose selection would cost more than the GraphQL cost limit ' +
      '(GRAPHQL_MAX_COST) holds as many items as fit. Continue with `Next-Page-Token` (never by counting items); ' +
      'only a selection too large for a single item is refused with 400.',
    schema: { type: 'integer', minimum: 0 },
  },
  page_token: {
    name: 'page_token',
    in: 'query',
    required: false,
    description:
      'The `Next-Page-Token` of the previous page; absent or empty for the first page. Opaque and signed; valid only with the same `filter` and `order_by` ' +
      '(and caller) as the request that returned it, otherwise 400. Pages read by token never repeat or skip an item, whatever is added or removed meanwhile.',
    schema: { type: 'string', maxLength: MAX_PAGE_TOKEN_LENGTH },
  },
  order_by: {
    name: 'order_by',
    in: 'query',
    required: false,
    description:
      'AIP-132 order, e.g. `price desc,name`: comma-separated sortable fields, each optionally followed by `asc` (the default) or `desc`; `id` breaks ties. ' +
      'Products sort by id, name, priceCents (or price), createdAt; orders by id, createdAt, totalCents. Anything else is 400.',
    schema: { type: 'string', maxLength: MAX_ORDER_BY_LENGTH },
  },
  filter: {
    name: 'filter',
    in: 'query',
    required: false,
    description:
      'AIP-160 filter, e.g. `price < 5000 AND seller.name = "Acme"`: comparisons (`=`, `!=`, `<`, `<=`, `>`, `>=`), `:` (has: substring for text, any item for lists, `field:*` for present), ' +
      '`AND`, `OR` (binds tighter than AND), `NOT` or `-`, parentheses; "strings" (no NUL), numbers (within the field\'s range), true/false, quoted RFC 3339 timestamps (years 0001–9999, UTC offsets up to ±15:59). ' +
      'Products: id, name, description, priceCents (price), currency, createdAt, updatedAt, seller.id, seller.name, seller.rating, reviews.rating, reviews.author. ' +
      'Orders: id, status, memo, totalCents, createdAt, updatedAt, items.productId, items.quantity. ' +
      `Errors are 400 with the position. At most ${MAX_FILTER_LENGTH} characters, ${MAX_FILTER_DEPTH} levels of nesting and ${MAX_FILTER_TERMS} comparisons.`,
    schema: { type: 'string', maxLength: MAX_FILTER_LENGTH },
  },
  offset: {
    name: 'offset',
    in: 'query',
    required: false,
    description: 'How many items to skip, 0 when absent (legacy, with `limit`: pages drift when items are added or removed; prefer page tokens).',
    schema: { type: 'integer', minimum: 0, maximum: MAX_INT },
  },
  update_mask: {
    name: 'update_mask',
    in: 'query',
    required: true,
    description:
      'The fields to change (AIP-161): comma-separated names, trimmed, duplicates collapse. Only fields both named here and present in the body change. ' +
      'Output-only fields (such as `id`, `items`, `totalCents`, `createdAt`, `updatedAt`) are ignored; an unknown name is 400. ' +
      'A masked field sent as `null` is cleared where the field is nullable (`memo`), otherwise 400.',
    schema: { type: 'string', minLength: 1, maxLength: MAX_FIELDS_LENGTH },
    example: 'status,memo',
  },
};

// `error.status` is a google.rpc.Code name; an HTTP status it has no code for says INVALID_ARGUMENT (the request is
// the client's to fix) and `details[0].reason` names what.
const ERROR_STATUS_TEXT: Record<number, string> = {
  400:
    'INVALID_ARGUMENT: a parameter, header or the body is not valid; the message names it (and a BadRequest detail, when a field is at fault). ' +
    'Also a query parameter or path segment whose percent-encoding is not UTF-8 (INVALID_URL_ENCODING), and a selection too large to answer (RESPONSE_TOO_LARGE).',
  401:
    'UNAUTHENTICATED: the access token is missing (MISSING_TOKEN), expired, revoked or not ours (INVALID_TOKEN). `WWW-Authenticate` carries the RFC 6750 ' +
    'challenge (a DPoP one for DPoP requests, RFC 9449).',
  403:
    'PERMISSION_DENIED: the token lacks the scope (INSUFFICIENT_SCOPE; `WWW-Authenticate` names it with `error="insufficient_scope"`), ' +
    'or has no user and asks for orders (USER_REQUIRED, a client_credentials token; no challenge).',
  404: 'NOT_FOUND: no such resource (or not the caller’s).',
  405: 'INVALID_ARGUMENT (reason METHOD_NOT_ALLOWED): the path does not serve this method. `Allow` lists those it serves. Answered before authentication.',
  409:
    'FAILED_PRECONDITION: the change is not allowed in the current state (ILLEGAL_STATUS_MOVE names both states in `metadata`); ' +
    'or ABORTED, to be retried after reading again: the `etag` in the body is no longer current (AIP-154; ETAG_MISMATCH, `metadata.etag` is the current one), ' +
    'the order kept changing under If-None-Match (CONCURRENT_UPDATE), or an `Idempotency-Key` changed while it was being used (IDEMPOTENCY_KEY_CONFLICT). Nothing changed.',
  412:
    'FAILED_PRECONDITION: `If-Match` does not match the current ETag (ETAG_MISMATCH, `metadata.etag` is the current one), or, on a PATCH, ' +
    '`If-None-Match` names the order’s current version or is `*` (ETAG_MATCH); nothing changed.',
  413: `INVALID_ARGUMENT (reason BODY_TOO_LARGE): the request body is larger than ${MAX_BODY_BYTES} bytes.`,
  414: `INVALID_ARGUMENT (reason URL_TOO_LONG): the URL is longer than ${MAX_URL_LENGTH} characters.`,
  415:
    'INVALID_ARGUMENT (reason UNSUPPORTED_MEDIA_TYPE): the request body is not application/json; or (UNSUPPORTED_ENCODING) its charset is not UTF-8 ' +
    'or its Content-Encoding is not one the server decodes.',
  422: 'FAILED_PRECONDITION: this `Idempotency-Key` was already used with a different request (IDEMPOTENCY_KEY_REUSED); nothing was created.',
  431: 'INVALID_ARGUMENT (reason HEADERS_TOO_LARGE): the request line and headers are larger than the server reads (16 KiB).',
  500: 'INTERNAL: the server failed; the cause is not shown. A GET, a PATCH with `If-Match` and a POST with `Idempotency-Key` are safe to retry.',
  503:
    'UNAVAILABLE (reason DATABASE_UNAVAILABLE): the database is out of reach for a moment (down, restarting). Retry after the `Retry-After` seconds; ' +
    'a GET, a PATCH with `If-Match` and a POST with `Idempotency-Key` are safe to retry.',
  504:
    'DEADLINE_EXCEEDED (reason STATEMENT_TIMEOUT): a database statement ran past the server’s limit (DATABASE_STATEMENT_TIMEOUT_MS, PostgreSQL only) and was cancelled. ' +
    'The same request is likely to take as long again: narrow its `filter` or ask for fewer items or fields. A write whose statement was cancelled did not happen.',
};

/**
 * Statuses every operation can answer, whatever it does: the app refuses long URLs, the HTTP server oversized heads,
 * and every operation reads the database (503 while it is out of reach, 504 for a statement past its timeout).
 */
const EVERY_OPERATION = [400, 401, 403, 414, 431, 500, 503, 504];

const HEADERS: Record<string, JsonSchema> = {
  ETag: {
    description:
      'Strong entity tag of this representation (a digest of the body; for an order, preceded by its version). ' +
      'Send it in `If-None-Match` to revalidate (304), or for an order in `If-Match` / the body `etag` to update only this version.',
    required: true,
    schema: { type: 'string', pattern: '^"[^"]*"$' },
  },
  'Cache-Control': {
    description: '`private, no-cache`: the answer depends on the bearer token; revalidate with `If-None-Match`.',
    required: true,
    schema: { type: 'string' },
  },
  Vary: { description: 'Names `Authorization`: the answer depends on the token.', required: true, schema: { type: 'string' } },
  Link: {
    description: 'RFC 8288 link to the next page (`rel="next"`), present only when there is one; it keeps the other query parameters.',
    schema: { type: 'string', pattern: 'rel="next"' },
  },
  'Next-Page-Token': {
    description:
      'The `page_token` of the next page (AIP-158), present only when there is one. A page may hold fewer items than `page_size` and still have one: ' +
      'its absence, not a short page, marks the last page.',
    schema: { type: 'string', minLength: 1 },
  },
  Location: { description: 'The URL of the new order.', required: true, schema: { type: 'string', format: 'uri' } },
  'Idempotent-Replayed': {
    description: '`true` on an answer replayed for a repeated `Idempotency-Key` (the first answer, byte for byte); absent otherwise.',
    schema: { type: 'string', enum: ['true'] },
  },
  'WWW-Authenticate': {
    description: 'RFC 6750 Bearer challenge with `resource_metadata` (RFC 9728); without a token, a DPoP challenge beside it (RFC 9449 §7.1); a refused DPoP token gets a DPoP challenge.',
    schema: { type: 'string' },
  },
  'DPoP-Nonce': {
    description: 'With `error="use_dpop_nonce"` (when the server requires nonces on resource requests, DPOP_NONCE=all): the nonce to put in the next DPoP proof (RFC 9449 §9).',
    schema: { type: 'string' },
  },
  'Retry-After': {
    description: 'Seconds to wait before trying again (RFC 9110 §10.2.3).',
    required: true,
    schema: { type: 'string', pattern: '^[0-9]+$' },
  },
  Allow: { description: 'The methods this path serves (RFC 9110 §10.2.1), e.g. `GET, HEAD, PATCH, OPTIONS`.', required: true, schema: { type: 'string' } },
};

/** Per error status, the headers it carries; `required` where every such answer has it. */
const ERROR_HEADERS: Record<number, Record<string, JsonSchema>> = {
  401: { 'WWW-Authenticate': { ...HEADERS['WWW-Authenticate'], required: true }, 'DPoP-Nonce': HEADERS['DPoP-Nonce']! },
  403: { 'WWW-Authenticate': { ...HEADERS['WWW-Authenticate'], description: `${String(HEADERS['WWW-Authenticate']!.description)} Absent for USER_REQUIRED.` } },
  405: { Allow: HEADERS.Allow! },
  503: { 'Retry-After': HEADERS['Retry-After']! },
};

/** The `Allow` of a path, as router.ts answers it: GET implies HEAD, OPTIONS is always served. */
function allowHeader(methods: readonly string[]): string {
  const served = new Set(methods.flatMap((method) => (method === 'GET' ? ['GET', 'HEAD'] : [method])));
  return [...['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'].filter((method) => served.has(method)), 'OPTIONS'].join(', ');
}

function referencedSchemas(schema: unknown): string[] {
  if (typeof schema !== 'object' || schema === null) return [];
  const ref = (schema as { $ref?: unknown }).$ref;
  const own = typeof ref === 'string' && ref.startsWith('#/components/schemas/') ? [ref.slice('#/components/schemas/'.length)] : [];
  return [...own, ...Object.values(schema).flatMap(referencedSchemas)];
}

export function openApiPath(path: string): string {
  return path.replace(/:([A-Za-z_]+)/g, '{$1}');
}

export function openApiDocument(runtime: Runtime, schema: GraphQLSchema, routes: readonly RestRoute[]): JsonSchema {
  const issuer = runtime.config.issuer;
  const oauth = authorizationServerMetadata(issuer) as { authorization_endpoint: string; token_endpoint: string; grant_types_supported: readonly string[] };
  const grants = new Set(oauth.grant_types_supported);
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const route of routes) {
    const path = openApiPath(route.path);
    const parameters: JsonSchema[] = [];
    if (route.path.includes(':id')) parameters.push({ $ref: '#/components/parameters/id' });
    for (const name of route.query) parameters.push({ $ref: `#/components/parameters/${name}` });
    if (route.method === 'patch') parameters.push({ $ref: '#/components/parameters/If-Match' }, { $ref: '#/components/parameters/If-None-Match-write' });
    if (route.method === 'get') parameters.push({ $ref: '#/components/parameters/If-Match-read' }, { $ref: '#/components/parameters/If-None-Match' });
    if (route.method === 'post') parameters.push({ $ref: '#/components/parameters/Idempotency-Key' });
    // Every answer is tagged (src/rest/etag.ts); reads are private and revalidated. Headers sent only sometimes
    // (Link, Next-Page-Token, `Idempotent-Replayed` on a replay) are listed without `required`.
    const successHeaders = [
      ...new Set([...route.success.headers, 'ETag', ...(route.method === 'get' ? ['Cache-Control', 'Vary'] : []), ...(route.method === 'post' ? ['Idempotent-Replayed'] : [])]),
    ];
    const paged = route.success.headers.includes('Next-Page-Token');
    const responses: Record<string, JsonSchema> = {
      [String(route.success.status)]: {
        description: paged
          ? `${route.success.description} It may hold fewer items than \`page_size\` while more follow: read on while \`Next-Page-Token\` is present.`
          : route.success.description,
        headers: Object.fromEntries(successHeaders.map((name) => [name, HEADERS[name]!])),
        content: { 'application/json': { schema: route.success.schema } },
      },
    };
    if (route.method === 'get') {
      responses['304'] = {
        description: 'Not Modified: `If-None-Match` holds the current ETag. No body.',
        // A list's 304 keeps its paging headers: the page it confirms still has the same next page.
        headers: {
          ETag: HEADERS.ETag,
          'Cache-Control': HEADERS['Cache-Control'],
          Vary: HEADERS.Vary,
          ...(paged ? { Link: HEADERS.Link, 'Next-Page-Token': HEADERS['Next-Page-Token'] } : {}),
        },
      };
    }
    // POST: 409 IDEMPOTENCY_KEY_CONFLICT and 422 IDEMPOTENCY_KEY_REUSED; GET: 412 for If-Match.
    const errors = [...route.errors, ...(route.method === 'post' ? [409, 422] : []), ...(route.method === 'get' ? [412] : [])];
    for (const status of [...new Set([...EVERY_OPERATION, ...errors])].sort()) responses[String(status)] = { $ref: `#/components/responses/Error${status}` };
    responses.default = { $ref: '#/components/responses/ErrorOther' };
    // A method the path does not serve never reaches an operation, so its 405 is told in each operation of the path.
    const allow = allowHeader(routes.filter((other) => other.path === route.path).map((other) => other.method.toUpperCase()));
    const otherMethods =
      `Other methods on this path are answered 405 with \`Allow: ${allow}\` (\`#/components/responses/Error405\`), ` +
      'and OPTIONS 204 with the same `Allow`; neither needs a token.';
    (paths[path] ??= {})[route.method] = {
      operationId: route.operationId,
      summary: route.summary,
      description: route.description ? `${route.description}\n\n${otherMethods}` : otherMethods,
      security: [{ oauth2: [route.scope] }, { dpop: [route.scope] }],
      parameters,
      ...(route.requestBody
        ? { requestBody: { required: true, description: route.requestBody.description, content: { 'application/json': { schema: route.requestBody.schema } } } }
        : {}),
      responses,
    };
  }
  const inputs = routes.flatMap((route) => [...referencedSchemas(route.success.schema), ...referencedSchemas(route.requestBody?.schema)]);
  const resources = new Map(
    routes.flatMap((route) => referencedSchemas(route.requestBody?.schema).map((input) => [input, referencedSchemas(route.success.schema)[0]!] as const)),
  );
  return {
    openapi: '3.1.0',
    info: {
      title: 'Fieldgate REST API',
      version: '1',
      description:
        'A REST face of the Fieldgate GraphQL API: every request is translated into a GraphQL operation and run in-process, ' +
        'so both share authorization, validation and column-level loading. Errors use Google’s JSON shape (AIP-193).',
    },
    servers: [{ url: issuer }],
    paths,
    components: {
      schemas: {
        ...componentSchemas(schema, [{ operation: 'query', field: 'product' }, { operation: 'query', field: 'order' }], inputs, resources),
        Error: {
          type: 'object',
          required: ['error'],
          properties: {
            error: {
              type: 'object',
              required: ['code', 'status', 'message', 'details'],
              properties: {
                code: { type: 'integer', description: 'The HTTP status.' },
                status: { type: 'string', description: 'The canonical status, e.g. INVALID_ARGUMENT.' },
                message: { type: 'string', description: 'What is wrong, naming the offending field.' },
                details: {
                  type: 'array',
                  description: 'First an ErrorInfo (always), then a BadRequest when parameters or body fields are at fault (AIP-193).',
                  items: { oneOf: [schemaRef('ErrorInfo'), schemaRef('BadRequest')] },
                },
              },
            },
          },
        },
        ErrorInfo: {
          type: 'object',
          required: ['@type', 'reason', 'domain', 'metadata'],
          properties: {
            '@type': { type: 'string', const: ERROR_INFO_TYPE },
            reason: { type: 'string', description: 'UPPER_SNAKE_CASE cause, e.g. ETAG_MISMATCH, ILLEGAL_STATUS_MOVE, UNKNOWN_FIELD, INVALID_TOKEN.', pattern: '^[A-Z][A-Z0-9_]*$' },
            domain: { type: 'string', const: ERROR_DOMAIN },
            metadata: { type: 'object', additionalProperties: { type: 'string' }, description: 'Facts to act on, e.g. `etag` (the current one), `path`, `requiredScope`.' },
          },
        },
        BadRequest: {
          type: 'object',
          required: ['@type', 'fieldViolations'],
          properties: {
            '@type': { type: 'string', const: BAD_REQUEST_TYPE },
            fieldViolations: {
              type: 'array',
              items: {
                type: 'object',
                required: ['field', 'description'],
                properties: { field: { type: 'string', description: 'The parameter, header or body field.' }, description: { type: 'string' } },
              },
            },
          },
        },
      },
      parameters: {
        ...PARAMETERS,
        id: { name: 'id', in: 'path', required: true, description: 'A positive integer.', schema: { type: 'integer', minimum: 1, maximum: MAX_INT } },
        'If-Match': {
          name: 'If-Match',
          in: 'header',
          required: false,
          description:
            'Apply the change only if the order’s current version is one of these tags (an ETag or the order’s `etag`; or `*`); otherwise 412 and nothing changes. ' +
            'A body `etag` (AIP-154) does the same but answers 409 ABORTED; if both are given they must agree.',
          schema: { type: 'string' },
        },
        'If-Match-read': {
          name: 'If-Match',
          in: 'header',
          required: false,
          description: 'Answer only if the ETag of this representation (strong comparison; for an order, any strong tag of its current version, such as its `etag` field) is one of these tags, or `*`; otherwise 412 without the body.',
          schema: { type: 'string' },
        },
        'If-None-Match-write': {
          name: 'If-None-Match',
          in: 'header',
          required: false,
          description:
            'Apply the change only if the order’s current version is none of these tags (ETags or the order’s `etag`, weak comparison); `*` refuses any ' +
            'existing order. Otherwise 412 and nothing changes. Checked against the version the UPDATE itself requires, so it holds under concurrent writes.',
          schema: { type: 'string' },
        },
        'If-None-Match': {
          name: 'If-None-Match',
          in: 'header',
          required: false,
          description: 'ETags the client holds (weak comparison, or `*`): if the current one is among them, the answer is 304 without a body.',
          schema: { type: 'string' },
        },
        'Idempotency-Key': {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description:
            'Makes the request safe to retry (draft-ietf-httpapi-idempotency-key-header): 1 to 255 printable ASCII characters, bare or as a ' +
            'quoted string (RFC 8941 sf-string, where `\\"` and `\\\\` stand for `"` and `\\`), per user and client, kept 24 hours. The same key with the same body and `fields` replays the first answer; ' +
            'with another body it is 422; a concurrent duplicate waits for the first and gets its order.',
          // The longest is a quoted string of 255 escaped characters.
          schema: { type: 'string', minLength: 1, maxLength: 2 + 2 * MAX_IDEMPOTENCY_KEY_LENGTH },
        },
      },
      responses: {
        ...Object.fromEntries(
          Object.entries(ERROR_STATUS_TEXT).map(([status, description]) => [
            `Error${status}`,
            {
              description,
              ...(ERROR_HEADERS[Number(status)] ? { headers: ERROR_HEADERS[Number(status)] } : {}),
              content: { 'application/json': { schema: schemaRef('Error') } },
            },
          ]),
        ),
        ErrorOther: {
          description:
            'Refusals of the HTTP server itself, in the same shape: 408 (REQUEST_TIMEOUT) when the request does not arrive in time, ' +
            '413 (CHUNK_EXTENSIONS_TOO_LARGE) on a body without one; or whatever a proxy in front of the server answers.',
          content: { 'application/json': { schema: schemaRef('Error') } },
        },
      },
      securitySchemes: {
        oauth2: {
          type: 'oauth2',
          description:
            `Access tokens from this server (metadata at ${issuer}${METADATA_PATH}), sent as \`Authorization: Bearer …\`: authorization code with PKCE` +
            (grants.has('client_credentials') ? '; or client credentials, whose tokens act for no user and so are never granted the scopes of orders' : '') +
            (grants.has('urn:ietf:params:oauth:grant-type:device_code') ? '; or the device authorization grant (RFC 8628), which OpenAPI cannot describe' : '') +
            '.',
          // The flows the server advertises in its metadata (`grant_types_supported`) that OpenAPI can describe.
          flows: {
            authorizationCode: {
              authorizationUrl: oauth.authorization_endpoint,
              tokenUrl: oauth.token_endpoint,
              ...(grants.has('refresh_token') ? { refreshUrl: oauth.token_endpoint } : {}),
              scopes: { ...SCOPES },
            },
            ...(grants.has('client_credentials')
              ? { clientCredentials: { tokenUrl: oauth.token_endpoint, scopes: Object.fromEntries(Object.entries(SCOPES).filter(([scope]) => !needsUser(scope))) } }
              : {}),
          },
        },
        dpop: {
          type: 'http',
          scheme: 'DPoP',
          description:
            'The same access tokens bound to a key (RFC 9449): sent as `Authorization: DPoP …` with a `DPoP` proof header signed by that key ' +
            `(${DPOP_ALGORITHMS.join(', ')}); the token endpoint may first answer \`use_dpop_nonce\` with a \`DPoP-Nonce\`, and so may this API (401) ` +
            'when the server requires nonces on resource requests (DPOP_NONCE=all): send the proof again with that nonce (RFC 9449 §9).',
        },
      },
    },
  };
}

export function serveOpenApi(runtime: Runtime, rest: RestExecutor, routes: () => readonly RestRoute[]): RequestHandler {
  const built = new WeakMap<GraphQLSchema, JsonSchema>();
  return function openApiJson(_req, res) {
    const schema = rest.schema;
    let document = built.get(schema);
    if (!document) {
      document = openApiDocument(runtime, schema, routes());
      built.set(schema, document);
    }
    res.json(document);
  };
}
