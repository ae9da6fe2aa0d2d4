/**
 * The caller's orders. A PATCH with `If-Match` passes it to updateOrder's `etag` argument, so the check and the
 * write are one atomic step; with `If-None-Match` or several `If-Match` tags, the version it checked is passed the same way.
 */
import { coerceInputValue, getNamedType, getNullableType, isInputObjectType, isListType, isNonNullType, type GraphQLInputType, type GraphQLSchema } from 'graphql';
import type { Response } from 'express';
import type { Runtime } from '../runtime.js';
import type { Principal } from '../tokens/access-token.js';
import { requireScope } from '../tokens/bearer.js';
import { OAuthError } from '../oauth/errors.js';
import { parseFields, WHOLE, type FieldTree, type ParsedFields } from './fields.js';
import { RestAborted, RestError, RestFailedPrecondition, fromGraphQLErrors, fromOAuthError, RestInvalidArgument, RestNotFound } from './errors.js';
import { GqlUserRequired } from '../graphql/errors.js';
import type { RestExecutor } from './execute.js';
import { authenticate, jsonObjectBody, onlyQueryParameters, principalOf, queryParameter, type RestRoute } from './http.js';
import { idOf } from './paging.js';
import { itemRoute, listRoute, readItem, type Collection } from './collection.js';
import { allowedFields, rootField, rootFieldType, type CompiledOperation } from './selection.js';
import { inJsonTerms, jsonType, parseUpdateMask, planUpdate } from './update-mask.js';
import { schemaRef } from './openapi.js';
import { parseTagList, representationTag, setResourceVersion, versionOf } from './etag.js';
import { idempotencyKeyOf, namingTheHeader } from './idempotency.js';
import { findKey, noticingReplay, orderRequestHash, storeResponse } from '../graphql/idempotency.js';

function internalFields(schema: GraphQLSchema, operation: 'query' | 'mutation', field: string, names: string[]): FieldTree {
  const allowed = allowedFields(rootFieldType(schema, operation, field));
  return new Map(names.filter((name) => allowed.has(name)).map((name) => [name, WHOLE]));
}

export function etagHeader(etag: string): string {
  return /^"[\x21\x23-\x7e]*"$/.test(etag) ? etag : `"${etag.replace(/[^\x21\x23-\x7e]/g, '')}"`;
}

/**
 * Weak tags never match (RFC 9110 §13.1.1); both an ETag header (`"v.digest"`) and the `etag` field (`"v"`) are
 * accepted: the condition is on the order, not on one view of it.
 */
function parseIfMatch(header: string | undefined): '*' | string[] | undefined {
  const listed = parseTagList('If-Match', header);
  return listed === undefined || listed === '*' ? listed : listed.filter((tag) => !tag.weak).map((tag) => versionOf(tag.opaque));
}

/** Weak comparison (RFC 9110 §13.1.2), on the order's version like If-Match: `W/` tags count. */
function parseIfNoneMatch(header: string | undefined): '*' | string[] | undefined {
  const listed = parseTagList('If-None-Match', header);
  return listed === undefined || listed === '*' ? listed : listed.map((tag) => versionOf(tag.opaque));
}

/** Whether If-None-Match refuses a write to the order at `version` (`*`: any existing order). */
function noneMatchRefuses(noneMatch: '*' | string[] | undefined, version: string | undefined): boolean {
  return noneMatch === '*' || (noneMatch !== undefined && version !== undefined && noneMatch.includes(version));
}

function etagOf(order: unknown): string | undefined {
  const etag = (order as { etag?: unknown } | null)?.etag;
  return typeof etag === 'string' ? etagHeader(etag) : undefined;
}

function setEtag(res: Response, order: unknown): void {
  setResourceVersion(res, etagOf(order));
}

/** AIP-154: a body `etag` is the If-Match precondition, but a mismatch is 409 ABORTED rather than 412. */
function bodyEtag(body: Record<string, unknown>): string | undefined {
  const etag = body.etag;
  if (etag === undefined || etag === null) return undefined;
  if (typeof etag !== 'string' || !/^"[\x21\x23-\x7e]{0,400}"$/.test(etag)) {
    throw new RestInvalidArgument('etag must be an entity tag as read from the order, such as "abc"', {
      reason: 'INVALID_ETAG',
      fieldViolations: [{ field: 'etag', description: 'not an entity tag' }],
    });
  }
  return versionOf(etag);
}

function pathText(path: readonly (string | number)[]): string {
  return path.map((part, i) => (typeof part === 'number' ? `[${part}]` : i === 0 ? part : `.${part}`)).join('');
}

/**
 * What GraphQL's coercion would let through, or report without naming the field: a lone value where a list belongs
 * (GraphQL reads `"items": {…}` as a one-item list; in JSON it is no list), a missing required member, and a member the
 * input type does not have.
 */
function jsonShapeProblem(value: unknown, type: GraphQLInputType, path: (string | number)[]): { field: string; message: string } | undefined {
  const nullable = getNullableType(type);
  if (value === null || value === undefined) return undefined;
  if (isListType(nullable)) {
    if (!Array.isArray(value)) return { field: pathText(path), message: `${pathText(path)}: must be a JSON array; got a JSON ${jsonType(value)}` };
    for (const [index, item] of value.entries()) {
      const problem = jsonShapeProblem(item, nullable.ofType, [...path, index]);
      if (problem) return problem;
    }
    return undefined;
  }
  if (!isInputObjectType(nullable) || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const fields = nullable.getFields();
  for (const field of Object.values(fields)) {
    if (isNonNullType(field.type) && field.defaultValue === undefined && !Object.hasOwn(value, field.name)) {
      const missing = pathText([...path, field.name]);
      return { field: missing, message: `${missing}: is required` };
    }
  }
  for (const [name, member] of Object.entries(value)) {
    const field = pathText([...path, name]);
    if (!Object.hasOwn(fields, name)) return { field, message: `${field}: no such field` };
    const problem = jsonShapeProblem(member, fields[name]!.type, [...path, name]);
    if (problem) return problem;
  }
  return undefined;
}

/** Output-only order fields in the body are ignored (AIP-203); any other unknown field is a 400. */
function createInput(schema: GraphQLSchema, body: Record<string, unknown>): Record<string, unknown> {
  const arg = rootField(schema, 'mutation', 'createOrder').args.find((candidate) => candidate.name === 'input');
  const inputType = arg && getNamedType(arg.type);
  if (!arg || !inputType || !isInputObjectType(inputType)) throw new Error('createOrder has no input object argument');
  const outputOnly = allowedFields(rootFieldType(schema, 'mutation', 'createOrder'));
  const accepted = inputType.getFields();
  const input = Object.fromEntries(Object.entries(body).filter(([name]) => Object.hasOwn(accepted, name) || !outputOnly.has(name)));
  let problem: { field: string | undefined; message: string } | undefined = jsonShapeProblem(input, arg.type, []);
  coerceInputValue(input, arg.type, (path, value, error) => {
    const message = inJsonTerms(error.message, value);
    problem ??= { field: path.length ? pathText(path) : undefined, message: path.length ? `${pathText(path)}: ${message}` : message };
  });
  if (problem !== undefined) {
    const description = `the order is not valid: ${problem.message}`;
    throw new RestInvalidArgument(description, problem.field === undefined ? {} : { fieldViolations: [{ field: problem.field, description }] });
  }
  return input;
}

export function orderRoutes(runtime: Runtime, rest: RestExecutor): RestRoute[] {
  const orderOperation = (route: string, operation: 'query' | 'mutation', field: string, args: string[], fields: ParsedFields): CompiledOperation =>
    rest.operation({ route, operation, field, args, fields, internal: internalFields(rest.schema, operation, field, ['id', 'etag']) });

  const ORDERS: Collection = {
    name: 'orders',
    schemaName: 'Order',
    scope: 'orders:read',
    listField: 'orders',
    connectionField: 'ordersConnection',
    itemField: 'order',
    itemInternal: () => internalFields(rest.schema, 'query', 'order', ['id', 'etag']),
    decorateItem: setEtag,
  };
  const readOrder = async (id: number, fields: ParsedFields, principal: Principal) => {
    const { operation, item } = await readItem(rest, ORDERS, id, fields, principal);
    return { operation, order: item };
  };

  return [
    {
      method: 'post',
      path: '/orders',
      operationId: 'createOrder',
      summary: 'Place an order',
      description:
        'Creates an order for the caller. Answers 201 with the order (shaped by `fields`), its `Location` and `ETag`. ' +
        'With an `Idempotency-Key`, a retry with the same body (and `fields`) within 24 hours gets the first answer again ' +
        '(`Idempotent-Replayed: true`) instead of a second order; the same key with another body is 422. A duplicate sent ' +
        'while the first is still running waits for it and then gets its order.',
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
          const fieldsParameter = queryParameter(req, 'fields');
          const fields = parseFields(fieldsParameter);
          const input = createInput(rest.schema, req.body as Record<string, unknown>);
          const key = idempotencyKeyOf(req);
          const principal = principalOf(res);
          if (principal.userId === null) throw fromGraphQLErrors([new GqlUserRequired('orders')]);
          const owner = { userId: principal.userId, clientId: principal.clientId };
          const operation = orderOperation('orders.create', 'mutation', 'createOrder', key === undefined ? ['input'] : ['input', 'idempotencyKey'], fields);
          if (key !== undefined) {
            // The replay below skips the mutation, and with it the scope check.
            try {
              requireScope(principal, 'orders:write');
            } catch (error) {
              throw error instanceof OAuthError ? fromOAuthError(error) : error;
            }
            const first = await findKey(runtime.db, owner, key);
            const items = input.items as { productId: number; quantity: number }[];
            const response = first?.response;
            const sameRequest = response?.fields === (fieldsParameter ?? null) && first?.requestHash === orderRequestHash(items, input.memo as string | null | undefined);
            // A retry: the first answer, byte for byte; a token without a scope its `fields` need (`items.product`) gets
            // the mutation's own answer to the key instead, which refuses what the token may not read.
            if (response && sameRequest && [...operation.scopes].every((scope) => principal.scopes.has(scope))) {
              res.status(response.status).set(response.headers).set('Idempotent-Replayed', 'true').type('application/json').send(response.body);
              return;
            }
          }
          const variables = { input, ...(key === undefined ? {} : { idempotencyKey: key }) };
          // A duplicate that waited for the first request (or came after a GraphQL one) gets its order from the mutation.
          const { result, replayed } = await noticingReplay(() => rest.run(operation, variables, principal)).catch((error: unknown) => {
            throw namingTheHeader(error);
          });
          const order = result as { id: number };
          const location = `${runtime.config.issuer}/orders/${order.id}`;
          const body = operation.project(order);
          if (key !== undefined) {
            const text = JSON.stringify(body);
            const headers = { Location: location, ETag: representationTag(text, etagOf(order)) };
            await storeResponse(runtime.db, owner, key, order.id, { status: 201, headers, fields: fieldsParameter ?? null, body: text }).catch((error: unknown) => {
              // The order exists and its key names it: a retry still gets it, only not byte for byte.
              runtime.logger.warn({ err: error, reqId: req.id }, 'could not keep the answer of an idempotent request');
            });
          }
          res.status(201).setHeader('Location', location);
          if (replayed) res.setHeader('Idempotent-Replayed', 'true');
          setEtag(res, order);
          res.json(body);
        },
      ],
    },
    listRoute(runtime, rest, ORDERS, {
      operationId: 'listOrders',
      summary: "List the caller's orders",
      description: 'The orders of the signed-in user, newest first unless `order_by` says otherwise. Filtered and paged like /products.',
    }),
    itemRoute(runtime, rest, ORDERS, {
      operationId: 'getOrder',
      summary: 'Get one of the caller’s orders',
      description: "Someone else's order is 404, exactly like a missing one.",
    }),
    {
      method: 'patch',
      path: '/orders/:id',
      operationId: 'updateOrder',
      summary: 'Change an order’s status or memo',
      description:
        'Applies the body fields named in `update_mask` (and present in the body); other fields keep their values. ' +
        'Output-only fields in the mask are ignored (AIP-203), so sending back a just-read order with its mask changes nothing. ' +
        'A body object naming a member twice is 400 (DUPLICATE_JSON_MEMBER). ' +
        '`If-Match` with the order’s ETag makes the change conditional: a stale one gets 412 and changes nothing. ' +
        '`If-None-Match` refuses the change (412) when the order is in a state it names, or with `*`. ' +
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
          const noneMatch = parseIfNoneMatch(req.headers['if-none-match']);
          const inBody = bodyEtag(req.body as Record<string, unknown>);
          if (inBody !== undefined && Array.isArray(ifMatch) && !ifMatch.includes(inBody)) {
            throw new RestInvalidArgument('If-Match and the etag in the body name different versions of the order; send one of them', {
              reason: 'CONFLICTING_PRECONDITIONS',
              fieldViolations: [{ field: 'etag', description: 'not among the tags of If-Match' }],
            });
          }
          const source: EtagSource = inBody === undefined ? 'If-Match' : 'body';
          const wanted = inBody === undefined ? ifMatch : [inBody];
          /** RFC 9110 §13.2.2: If-Match (or the body etag) first, then If-None-Match, on the order's current version. */
          const requirePreconditions = (current: string | undefined): void => {
            if (Array.isArray(wanted) && (current === undefined || !wanted.includes(current))) throw staleEtag(source, current);
            if (noneMatchRefuses(noneMatch, current)) throw versionListed(current);
          };
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
            const { operation, order } = await readOrder(id, fields, readingAsWriter(principal));
            requirePreconditions(etagOf(order));
            setEtag(res, order);
            res.json(operation.project(order));
            return;
          }

          // updateOrder can require one version; any other condition is checked on the version the write reports.
          const onOneVersion = noneMatch === undefined && (inBody !== undefined || !Array.isArray(ifMatch) || ifMatch.length === 1);
          if (!onOneVersion) {
            const operation = orderOperation('orders.update', 'mutation', 'updateOrder', ['id', 'input', 'etag'], fields);
            const write = (version: string) => rest.run(operation, { id, input: plan.input, etag: version }, principal).catch(throwInRestTerms);
            const order = await writeOnCheckedVersion(write, requirePreconditions);
            setEtag(res, order);
            res.json(operation.project(order));
            return;
          }

          const etag = inBody ?? (Array.isArray(ifMatch) ? ifMatch[0] : undefined);
          const operation = orderOperation('orders.update', 'mutation', 'updateOrder', etag === undefined ? ['id', 'input'] : ['id', 'input', 'etag'], fields);
          let order: unknown;
          try {
            order = await rest.run(operation, { id, input: plan.input, ...(etag === undefined ? {} : { etag }) }, principal).catch(throwInRestTerms);
          } catch (error) {
            if (error instanceof RestError && error.reason === 'ETAG_MISMATCH') throw staleEtag(source, error.metadata.etag, error);
            throw error;
          }
          setEtag(res, order);
          res.json(operation.project(order));
        },
      ],
    },
  ];
}

type EtagSource = 'If-Match' | 'body';

/** An illegal status move names both states as the REST resource spells them (`paid`), not as GraphQL does (`PAID`). */
function throwInRestTerms(error: unknown): never {
  if (!(error instanceof RestFailedPrecondition) || error.reason !== 'ILLEGAL_STATUS_MOVE') throw error;
  const metadata = Object.fromEntries(Object.entries(error.metadata).map(([name, value]) => [name, name === 'from' || name === 'to' ? value.toLowerCase() : value]));
  throw new RestFailedPrecondition(error.message, { cause: error.cause, reason: error.reason, metadata, fieldViolations: [...error.fieldViolations] });
}

/**
 * The caller as a reader of its own order, for a PATCH that writes nothing. The answer is the order, as updateOrder
 * answers under orders:write alone, so a writer must not need orders:read for it; call only after orders:write is checked.
 */
function readingAsWriter(principal: Principal): Principal {
  return principal.scopes.has('orders:read') ? principal : { ...principal, scopes: new Set([...principal.scopes, 'orders:read']) };
}

/** Never an order's etag (those are base64url of `id:updated_at`), so a write with it only reports the current one. */
const NO_VERSION = '""';
/** Each lost round means another request's write succeeded, so this many concurrent writers all get through. */
const MAX_WRITE_ROUNDS = 10;

/**
 * A write under If-None-Match (RFC 9110 §13.1.2) or an If-Match listing several tags, as atomic as a single If-Match:
 * updateOrder can only require the one version it is given, so learn the current version from its ETAG_MISMATCH
 * answer (which needs no more scope than the write, where reading the order first would need orders:read), evaluate
 * the preconditions on it (`check`: If-Match first, §13.2.2), then write requiring exactly that version. If another
 * write lands in between, the UPDATE matches no row, and the new version is checked again.
 */
async function writeOnCheckedVersion(write: (version: string) => Promise<unknown>, check: (current: string) => void): Promise<unknown> {
  let current: string | undefined;
  for (let round = 0; round <= MAX_WRITE_ROUNDS; round++) {
    if (current !== undefined) check(current);
    try {
      return await write(current ?? NO_VERSION);
    } catch (error) {
      const reported = error instanceof RestError && error.reason === 'ETAG_MISMATCH' ? error.metadata.etag : undefined;
      if (reported === undefined) throw error;
      current = reported;
    }
  }
  throw new RestAborted('the order kept changing while it was being updated; try again', { reason: 'CONCURRENT_UPDATE' });
}

/** If-None-Match names the order's current version (or is `*`): 412, as RFC 9110 §13.1.2 says for a write. */
function versionListed(current: string | undefined) {
  return new RestFailedPrecondition('the order is in a state that If-None-Match names; nothing was changed', {
    httpStatus: 412,
    reason: 'ETAG_MATCH',
    metadata: current === undefined ? {} : { etag: current },
  });
}

/** 412 for If-Match (RFC 9110 §13.1.1), 409 ABORTED for a body `etag` (AIP-154). */
function staleEtag(source: EtagSource, current: string | undefined, cause?: unknown) {
  const metadata: Record<string, string> = current === undefined ? {} : { etag: current };
  const options = { cause, reason: 'ETAG_MISMATCH', metadata };
  return source === 'If-Match'
    ? new RestFailedPrecondition('the order has changed since the ETag in If-Match was issued', { ...options, httpStatus: 412 })
    : new RestAborted('the order has changed since the etag in the body was read; read it again and retry', options);
}
