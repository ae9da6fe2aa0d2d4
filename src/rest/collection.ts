/** `GET /<name>` and `GET /<name>/{id}` from one description, so every collection pages, filters and sorts alike. */
import type { Response } from 'express';
import type { GraphQLFormattedError } from 'graphql';
import type { Runtime } from '../runtime.js';
import type { Scope } from '../oauth/scopes.js';
import type { Principal } from '../tokens/access-token.js';
import { parseFields, type FieldTree, type ParsedFields } from './fields.js';
import { RestError, RestInvalidArgument, RestNotFound } from './errors.js';
import type { RestExecutor } from './execute.js';
import { authenticate, onlyQueryParameters, principalOf, queryParameter, type QueryParameter, type RestRoute } from './http.js';
import { fetchPage, idOf, nextLink, pagingOf } from './paging.js';
import { schemaRef } from './openapi.js';
import type { CompiledOperation } from './selection.js';

export interface Collection {
  name: string;
  schemaName: string;
  scope: Scope;
  listField: string;
  connectionField: string;
  itemField: string;
  /** Fields the layer selects for itself on a single item (e.g. `etag`), kept out of the body. */
  itemInternal?: () => FieldTree;
  decorateItem?: (res: Response, item: unknown) => void;
}

export const LIST_PARAMETERS: readonly QueryParameter[] = ['fields', 'page_size', 'page_token', 'order_by', 'filter', 'limit', 'offset'];

const REST_PARAMETER: Readonly<Record<string, string>> = { after: 'page_token', orderBy: 'order_by', filter: 'filter', first: 'page_size' };

/** A GraphQL argument error in REST terms: `orderBy …` becomes `order_by …`, `after: …` becomes `page_token: …`. */
function inRestTerms(error: unknown): unknown {
  if (!(error instanceof RestError) || error.status !== 'INVALID_ARGUMENT') return error;
  const field = ((error.cause as GraphQLFormattedError | undefined)?.extensions as { field?: unknown } | undefined)?.field;
  const parameter = typeof field === 'string' && Object.hasOwn(REST_PARAMETER, field) ? REST_PARAMETER[field]! : undefined;
  if (!parameter || typeof field !== 'string' || !error.message.startsWith(field)) return error;
  const message = `${parameter}${error.message.slice(field.length)}`;
  return new RestInvalidArgument(message, {
    cause: error.cause,
    reason: error.reason,
    metadata: { ...error.metadata },
    fieldViolations: [{ field: parameter, description: message }],
  });
}

async function runList(rest: RestExecutor, operation: CompiledOperation, variables: Record<string, unknown>, principal: Principal, lookahead = false) {
  try {
    return await rest.run(operation, variables, principal, lookahead ? { pageLookahead: true } : {});
  } catch (error) {
    throw inRestTerms(error);
  }
}

export function listRoute(runtime: Runtime, rest: RestExecutor, collection: Collection, doc: { operationId: string; summary: string; description: string }): RestRoute {
  const listOperation = (fields: ParsedFields, connection: boolean) =>
    rest.routeOperation(`${collection.name}.list${connection ? '' : '.offset'}`, fields, () => ({
      operation: 'query',
      field: connection ? collection.connectionField : collection.listField,
      args: connection ? ['first', 'after', 'orderBy', 'filter'] : ['limit', 'offset', 'orderBy', 'filter'],
      connection,
    }));

  return {
    method: 'get',
    path: `/${collection.name}`,
    ...doc,
    scope: collection.scope,
    query: LIST_PARAMETERS,
    success: {
      status: 200,
      description: 'The page, as a JSON array.',
      schema: { type: 'array', items: schemaRef(collection.schemaName) },
      headers: ['Link', 'Next-Page-Token'],
    },
    errors: [],
    handlers: [
      authenticate(runtime),
      onlyQueryParameters(LIST_PARAMETERS),
      async function listCollection(req, res) {
        const paging = pagingOf(req);
        const fields = parseFields(queryParameter(req, 'fields'));
        const query = { filter: queryParameter(req, 'filter'), orderBy: queryParameter(req, 'order_by') };
        const principal = principalOf(res);
        if (paging.kind === 'offset') {
          // `limit` is exact (out of range is a 400, not clamped) and legacy clients advance `offset` by it
          // themselves, so a shorter page would skip rows: a selection too large for it stays a 400.
          const operation = listOperation(fields, false);
          const { items, hasNext } = await fetchPage(rest, operation, paging, query, principal).catch((error: unknown) => {
            throw inRestTerms(error);
          });
          if (hasNext) res.setHeader('Link', nextLink(runtime, req, { limit: String(paging.limit), offset: String(paging.offset + paging.limit) }));
          res.json(operation.project(items));
          return;
        }
        const operation = listOperation(fields, true);
        // AIP-158: the page shrinks to what the cost limit allows; its token continues right after its last item.
        const first = rest.fittingPageSize(operation, paging.pageSize);
        const page = (await runList(rest, operation, { ...query, first, after: paging.pageToken }, principal)) as {
          nodes: unknown[];
          pageInfo: { hasNextPage: boolean; endCursor: string | null };
        };
        const next = page.pageInfo.hasNextPage ? page.pageInfo.endCursor : null;
        if (next) {
          res.setHeader('Next-Page-Token', next);
          res.setHeader('Link', nextLink(runtime, req, { page_token: next }));
        }
        res.json(operation.project(page.nodes));
      },
    ],
  };
}

export async function readItem(rest: RestExecutor, collection: Collection, id: number, fields: ParsedFields, principal: Principal) {
  const operation = rest.routeOperation(`${collection.name}.get`, fields, () => ({
    operation: 'query',
    field: collection.itemField,
    args: ['id'],
    ...(collection.itemInternal && { internal: collection.itemInternal() }),
  }));
  const item = await rest.run(operation, { id }, principal);
  if (item === null) throw new RestNotFound(`no ${collection.itemField} ${id}`);
  return { operation, item };
}

export function itemRoute(runtime: Runtime, rest: RestExecutor, collection: Collection, doc: { operationId: string; summary: string; description?: string }): RestRoute {
  return {
    method: 'get',
    path: `/${collection.name}/:id`,
    ...doc,
    scope: collection.scope,
    query: ['fields'],
    success: { status: 200, description: `The ${collection.itemField}.`, schema: schemaRef(collection.schemaName), headers: collection.decorateItem ? ['ETag'] : [] },
    errors: [404],
    handlers: [
      authenticate(runtime),
      onlyQueryParameters(['fields']),
      async function getItem(req, res) {
        const { operation, item } = await readItem(rest, collection, idOf(req), parseFields(queryParameter(req, 'fields')), principalOf(res));
        collection.decorateItem?.(res, item);
        res.json(operation.project(item));
      },
    ],
  };
}
