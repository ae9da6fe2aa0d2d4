/**
 * The caller's orders: POST /orders (Mutation.createOrder), GET /orders and /orders/{id}
 * (Query.orders / Query.order), PATCH /orders/{id}?update_mask=… (Mutation.updateOrder).
 * Single-order responses carry the order's `ETag`; a PATCH with `If-Match` passes it to
 * updateOrder's `etag` argument, so the check and the write are one atomic step.
 */
import { coerceInputValue, getNamedType, isInputObjectType, type GraphQLSchema } from 'graphql';
import type { Response } from 'express';
import type { Runtime } from '../runtime.js';
import type { Principal } from '../tokens/access-token.js';
import { requireScope } from '../tokens/bearer.js';
import { OAuthError } from '../oauth/errors.js';
import { parseFields, WHOLE, type FieldTree, type ParsedFields } from './fields.js';
import { RestFailedPrecondition, fromGraphQLErrors, fromOAuthError, RestInvalidArgument, RestNotFound } from './errors.js';
import { GqlUserRequired } from '../graphql/errors.js';
import type { RestExecutor } from './execute.js';
import { authenticate, jsonObjectBody, onlyQueryParameters, principalOf, queryParameter, type RestRoute } from './http.js';
import { fetchPage, idOf, nextLink, pageOf } from './paging.js';
import { allowedFields, rootField, rootFieldType, type CompiledOperation } from './selection.js';
import { parseUpdateMask, planUpdate } from './update-mask.js';
import { schemaRef } from './openapi.js';

/** What the layer selects for itself when the resource has it: `etag` for ETag, `id` for Location. */
function internalFields(schema: GraphQLSchema, operation: 'query' | 'mutation', field: string, names: string[]): FieldTree {
  const allowed = allowedFields(rootFieldType(schema, operation, field));
  return new Map(names.filter((name) => allowed.has(name)).map((name) => [name, WHOLE]));
}

// ---------------------------------------------------------------- ETags (RFC 9110 §8.8.3, §13.1.1)

/**
 * The ETag header for an order's `etag` field. The schema already gives a strong entity tag
 * (`"…"`), which is also the form its updateOrder `etag` argument takes.
 */
export function etagHeader(etag: string): string {
  return /^"[\x21\x23-\x7e]*"$/.test(etag) ? etag : `"${etag.replace(/[^\x21\x23-\x7e]/g, '')}"`;
}

/** `If-Match`: `*`, or its strong entity tags, quotes included (weak ones never match, RFC 9110 §13.1.1). */
function parseIfMatch(header: string | undefined): '*' | string[] | undefined {
  if (header === undefined) return undefined;
  if (header.trim() === '*') return '*';
  const tags: string[] = [];
  const item = /[ \t]*(W\/)?("[\x21\x23-\x7e\x80-\xff]*")[ \t]*(?:,|$)/y;
  while (item.lastIndex < header.length) {
    const start = item.lastIndex;
    const match = item.exec(header);
    if (!match) {
      if (header.slice(start).trim() === '') break;
      throw new RestInvalidArgument('If-Match must be * or a list of entity tags such as "abc"');
    }
    if (!match[1]) tags.push(match[2]!);
    if (item.lastIndex === start) break;
  }
  return tags;
}

function etagOf(order: unknown): string | undefined {
  const etag = (order as { etag?: unknown } | null)?.etag;
  return typeof etag === 'string' ? etagHeader(etag) : undefined;
}

function setEtag(res: Response, order: unknown): void {
  const etag = etagOf(order);
  if (etag) res.setHeader('ETag', etag);
}

// ---------------------------------------------------------------- request bodies

function pathText(path: readonly (string | number)[]): string {
  return path.map((part, i) => (typeof part === 'number' ? `[${part}]` : i === 0 ? part : `.${part}`)).join('');
}

/**
 * The `input` of `createOrder` from a POST body, checked against the schema's input type.
 * Output-only order fields in the body are ignored (AIP-203); any other unknown field is a 400.
 */
function createInput(schema: GraphQLSchema, body: Record<string, unknown>): Record<string, unknown> {
  const arg = rootField(schema, 'mutation', 'createOrder').args.find((candidate) => candidate.name === 'input');
  const inputType = arg && getNamedType(arg.type);
  if (!arg || !inputType || !isInputObjectType(inputType)) throw new Error('createOrder has no input object argument');
  const outputOnly = allowedFields(rootFieldType(schema, 'mutation', 'createOrder'));
  const accepted = inputType.getFields();
  const input = Object.fromEntries(Object.entries(body).filter(([name]) => Object.hasOwn(accepted, name) || !outputOnly.has(name)));
  let problem: string | undefined;
  coerceInputValue(input, arg.type, (path, _value, error) => {
    problem ??= path.length ? `${pathText(path)}: ${error.message}` : error.message;
  });
  if (problem !== undefined) throw new RestInvalidArgument(`the order is not valid: ${problem}`);
  return input;
}

// ---------------------------------------------------------------- routes

export function orderRoutes(runtime: Runtime, rest: RestExecutor): RestRoute[] {
  const orderOperation = (route: string, operation: 'query' | 'mutation', field: string, args: string[], fields: ParsedFields): CompiledOperation =>
    rest.operation({ route, operation, field, args, fields, internal: internalFields(rest.schema, operation, field, ['id', 'etag']) });

  const readOrder = async (id: number, fields: ParsedFields, principal: Principal) => {
    const operation = orderOperation('orders.get', 'query', 'order', ['id'], fields);
    const order = await rest.run(operation, { id }, principal);
    if (order === null) throw new RestNotFound(`no order ${id}`);
    return { operation, order };
  };

  return [
    {
      method: 'post',
      path: '/orders',
      operationId: 'createOrder',
      summary: 'Place an order',
      description: 'Creates an order for the caller. Answers 201 with the order (shaped by `fields`), its `Location` and `ETag`.',
      scope: 'orders:write',
      query: ['fields'],
      requestBody: { description: 'The items to order and an optional memo.', schema: schemaRef('CreateOrderInput') },
      success: { status: 201, description: 'The new order.', schema: schemaRef('Order'), headers: ['Location', 'ETag'] },
      errors: [413, 415],
      handlers: [
        authenticate(runtime),
        onlyQueryParameters(['fields']),
        ...jsonObjectBody(),
        async function createOrder(req, res) {
          const fields = parseFields(queryParameter(req, 'fields'));
          const input = createInput(rest.schema, req.body as Record<string, unknown>);
          const operation = orderOperation('orders.create', 'mutation', 'createOrder', ['input'], fields);
          const order = (await rest.run(operation, { input }, principalOf(res))) as { id: number };
          res.status(201).setHeader('Location', `${runtime.config.issuer}/orders/${order.id}`);
          setEtag(res, order);
          res.json(operation.project(order));
        },
      ],
    },
    {
      method: 'get',
      path: '/orders',
      operationId: 'listOrders',
      summary: "List the caller's orders",
      description: 'The orders of the signed-in user, by id. Paged like /products.',
      scope: 'orders:read',
      query: ['fields', 'limit', 'offset'],
      success: { status: 200, description: 'The page of orders.', schema: { type: 'array', items: schemaRef('Order') }, headers: ['Link'] },
      errors: [],
      handlers: [
        authenticate(runtime),
        onlyQueryParameters(['fields', 'limit', 'offset']),
        async function listOrders(req, res) {
          const page = pageOf(req);
          const fields = parseFields(queryParameter(req, 'fields'));
          const operation = rest.operation({ route: 'orders.list', operation: 'query', field: 'orders', args: ['limit', 'offset'], fields });
          const { items, hasNext } = await fetchPage(rest, operation, page, principalOf(res));
          if (hasNext) res.setHeader('Link', nextLink(runtime, req, page));
          res.json(operation.project(items));
        },
      ],
    },
    {
      method: 'get',
      path: '/orders/:id',
      operationId: 'getOrder',
      summary: 'Get one of the caller’s orders',
      description: "Someone else's order is 404, exactly like a missing one.",
      scope: 'orders:read',
      query: ['fields'],
      success: { status: 200, description: 'The order.', schema: schemaRef('Order'), headers: ['ETag'] },
      errors: [404],
      handlers: [
        authenticate(runtime),
        onlyQueryParameters(['fields']),
        async function getOrder(req, res) {
          const id = idOf(req);
          const { operation, order } = await readOrder(id, parseFields(queryParameter(req, 'fields')), principalOf(res));
          setEtag(res, order);
          res.json(operation.project(order));
        },
      ],
    },
    {
      method: 'patch',
      path: '/orders/:id',
      operationId: 'updateOrder',
      summary: 'Change an order’s status or memo',
      description:
        'Applies the body fields named in `update_mask` (and present in the body); other fields keep their values. ' +
        'Output-only fields in the mask are ignored (AIP-203), so sending back a just-read order with its mask changes nothing. ' +
        '`If-Match` with the order’s ETag makes the change conditional: a stale one gets 412 and changes nothing. ' +
        'An illegal status move is 409.',
      scope: 'orders:write',
      query: ['update_mask', 'fields'],
      requestBody: { description: 'The order fields to change (only those named in `update_mask` are read).', schema: schemaRef('UpdateOrderInput') },
      success: { status: 200, description: 'The order after the change.', schema: schemaRef('Order'), headers: ['ETag'] },
      errors: [404, 409, 412, 413, 415],
      handlers: [
        authenticate(runtime),
        onlyQueryParameters(['update_mask', 'fields']),
        ...jsonObjectBody(),
        async function updateOrder(req, res) {
          const id = idOf(req);
          const mask = parseUpdateMask(queryParameter(req, 'update_mask'));
          const fields = parseFields(queryParameter(req, 'fields'));
          const ifMatch = parseIfMatch(req.headers['if-match']);
          const plan = planUpdate(rest.schema, 'updateOrder', mask, req.body as Record<string, unknown>);
          const principal = principalOf(res);

          if (plan.fields.length === 0) {
            // Nothing to write, so no mutation checks the scope: check it here, then answer as a read.
            if (principal.userId === null) throw fromGraphQLErrors([new GqlUserRequired('orders')]);
            try {
              requireScope(principal, 'orders:write');
            } catch (error) {
              throw error instanceof OAuthError ? fromOAuthError(error) : error;
            }
            const { operation, order } = await readOrder(id, fields, principal);
            const etag = etagOf(order);
            if (Array.isArray(ifMatch) && (etag === undefined || !ifMatch.includes(etag))) throw staleEtag();
            setEtag(res, order);
            res.json(operation.project(order));
            return;
          }

          let etag: string | undefined;
          if (Array.isArray(ifMatch)) {
            if (ifMatch.length === 1) {
              etag = ifMatch[0];
            } else {
              // Several candidates: the current one, if listed, becomes the atomic precondition.
              const current = etagOf((await readOrder(id, parseFields('id'), principal)).order);
              if (current === undefined || !ifMatch.includes(current)) throw staleEtag();
              etag = current;
            }
          }
          const operation = orderOperation('orders.update', 'mutation', 'updateOrder', etag === undefined ? ['id', 'input'] : ['id', 'input', 'etag'], fields);
          const order = await rest.run(operation, { id, input: plan.input, ...(etag === undefined ? {} : { etag }) }, principal);
          setEtag(res, order);
          res.json(operation.project(order));
        },
      ],
    },
  ];
}

function staleEtag(): RestFailedPrecondition {
  return new RestFailedPrecondition('the order has changed since the ETag in If-Match was issued', { httpStatus: 412 });
}
