/**
 * The one path every GraphQL operation takes, from /graphql and from the REST layer alike:
 *
 *   prepareDocument → selectOperation → refuseMutationOverGet → authorize → checkCost →
 *   execute → finishResult
 *
 * Everything that depends only on the document is computed once and cached: the parse (by
 * text), the validation with the limit rules (by document object, and by text — printed
 * when the caller brings an AST), the chosen operation and the scopes it needs. Per request
 * remain the scope check against the caller's token, the cost (it depends on variables)
 * and execution: graphql-js' `execute`, or for a query seen before the code graphql-jit
 * compiled from it (performance/compiled-queries.ts).
 */
import { LRUCache } from 'lru-cache';
import {
  execute,
  getOperationAST,
  Kind,
  print,
  specifiedRules,
  validate,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLError,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type ValidationRule,
} from 'graphql';
import type { Db } from '../db/database.js';
import { RelationalQueryCache } from '../db/performance/relational-query-cache.js';
import type { Logger } from '../logger.js';
import { PageTokens } from '../api/page-token.js';
import { randomToken } from '../crypto/secrets.js';
import type { Principal } from '../tokens/access-token.js';
import type { GraphQLContext } from './context.js';
import { asFieldError, GqlError, GqlForbidden, GqlInternalServerError, GqlInvalidArgument, GqlUserRequired, maskError, rejectRequest } from './errors.js';
import { needsUser } from '../oauth/scopes.js';
import { CostCheck, limitRules, parseWithLimits, type GraphQLLimits } from './limits.js';
import { requiredScopes } from './scopes.js';
import { graphqlOperationCost } from '../http/metrics.js';
import { CompiledQueries, type CompiledQueriesOptions } from './performance/compiled-queries.js';

export interface OperationRequest {
  principal: Principal;
  /** The document as text (from HTTP) … */
  source?: string | undefined;
  /** … or as an AST (from the REST layer). */
  document?: DocumentNode | undefined;
  variables?: Record<string, unknown> | null | undefined;
  operationName?: string | null | undefined;
  /** The HTTP method when the request came over HTTP: GET may only query. */
  method?: string | undefined;
  /** Root lists return one item past `limit`, to tell whether another page follows (REST's Link). */
  pageLookahead?: boolean | undefined;
}

interface PreparedOperation {
  operation: OperationDefinitionNode;
  requiredScopes: readonly string[];
  cost: CostCheck;
}

interface PreparedDocument {
  document: DocumentNode;
  /** Syntax or validation errors (limits included); the document is never executed. */
  errors?: readonly GraphQLError[];
  operations: Map<string, PreparedOperation | GqlError>;
}

export interface ExecutorOptions {
  schema: GraphQLSchema;
  db: Db;
  logger: Logger;
  limits: GraphQLLimits;
  /** Signs list cursors; a random per-process key when absent (tests), the deployment's key in production. */
  pageTokens?: PageTokens;
  /** Characters of document text kept in the cache (each text counts its length). */
  cacheSize?: number;
  /** Run repeated queries compiled (see performance/compiled-queries.ts); on unless false. */
  compiledQueries?: CompiledQueriesOptions | false;
}

export class Executor {
  readonly schema: GraphQLSchema;
  /** Documents parsed and validated so far: each counts only cache misses. */
  readonly stats = { parsed: 0, validated: 0 };
  private readonly rules: readonly ValidationRule[];
  private readonly byText: LRUCache<string, PreparedDocument>;
  private readonly byNode = new WeakMap<DocumentNode, PreparedDocument>();
  private readonly queries = new RelationalQueryCache();
  private readonly pageTokens: PageTokens;
  readonly compiled: CompiledQueries | undefined;

  constructor(private readonly options: ExecutorOptions) {
    this.schema = options.schema;
    this.pageTokens = options.pageTokens ?? new PageTokens(randomToken(32));
    this.rules = [...specifiedRules, ...limitRules(options.limits)];
    if (options.compiledQueries !== false) this.compiled = new CompiledQueries(this.schema, options.logger, options.compiledQueries);
    this.byText = new LRUCache({ maxSize: options.cacheSize ?? 4_000_000, sizeCalculation: (_value, key) => key.length + 1 });
  }

  /** Runs one operation. Never throws: every failure is in `errors`, unexpected ones masked. */
  async run(request: OperationRequest): Promise<ExecutionResult> {
    try {
      const prepared = request.document ? this.prepareNode(request.document) : this.prepareSource(request.source ?? '');
      if (prepared.errors) return { errors: prepared.errors };
      // An empty name names no operation (GraphQL names are never empty), as yoga reads one in a GET's URL.
      const operationName = request.operationName || undefined;
      const operation = this.selectOperation(prepared, operationName);
      refuseMutationOverGet(operation, request.method);
      authorize(operation, request.principal);
      const context = (): GraphQLContext => ({
        principal: request.principal,
        db: this.options.db,
        queries: this.queries,
        logger: this.options.logger,
        pageTokens: this.pageTokens,
        ...(request.pageLookahead && { pageLookahead: true }),
      });
      const contextValue = context();
      const variables = request.variables ?? undefined;
      const cost = operation.cost.check(variables, contextValue);
      if (cost !== undefined) graphqlOperationCost.observe(cost);
      const compiled = await this.compiled?.run({ document: prepared.document, operation: operation.operation, variables, context });
      const result =
        compiled ??
        (await execute({
          schema: this.schema,
          document: prepared.document,
          operationName,
          variableValues: variables,
          contextValue,
          hideSuggestions: true,
        }));
      return this.finishResult(result);
    } catch (error) {
      if (error instanceof GqlError) return { errors: [error] };
      this.options.logger.error({ err: error }, 'graphql operation failed');
      return { errors: [new GqlInternalServerError('Unexpected error.', { http: { status: 500 } })] };
    }
  }

  /** The cached preparation of a document sent as text. */
  private prepareSource(source: string): PreparedDocument {
    let prepared = this.byText.get(source);
    if (!prepared) {
      prepared = this.prepare(() => {
        this.stats.parsed++;
        return parseWithLimits(source, this.options.limits);
      });
      this.byText.set(source, prepared);
    }
    return prepared;
  }

  /**
   * The cached preparation of a document built as an AST: found by the object itself, or
   * else by its printed text, so a caller that rebuilds the same shape each time still hits.
   */
  private prepareNode(document: DocumentNode): PreparedDocument {
    let prepared = this.byNode.get(document);
    if (prepared) return prepared;
    const text = print(document);
    prepared = this.byText.get(text);
    if (!prepared) {
      prepared = this.prepare(() => document);
      this.byText.set(text, prepared);
    }
    this.byNode.set(document, prepared);
    return prepared;
  }

  private prepare(parseDocument: () => DocumentNode): PreparedDocument {
    let document: DocumentNode;
    try {
      document = parseDocument();
    } catch (error) {
      if (error instanceof GqlError) return { document: EMPTY_DOCUMENT, errors: [error], operations: new Map() };
      throw error;
    }
    this.stats.validated++;
    const errors = validate(this.schema, document, this.rules, { hideSuggestions: true });
    return {
      document,
      operations: new Map(),
      ...(errors.length > 0 && {
        errors: errors.map((error) =>
          error instanceof GqlError ? error : rejectRequest('GRAPHQL_VALIDATION_FAILED', error.message, { locatedAt: error }),
        ),
      }),
    };
  }

  private selectOperation(prepared: PreparedDocument, operationName: string | undefined): PreparedOperation {
    const key = operationName ?? '';
    let entry = prepared.operations.get(key);
    if (!entry) {
      entry = this.prepareOperation(prepared.document, operationName);
      // Only names that exist are kept, so made-up names cannot grow the cache.
      if (!(entry instanceof GqlError)) prepared.operations.set(key, entry);
    }
    if (entry instanceof GqlError) throw entry;
    return entry;
  }

  private prepareOperation(document: DocumentNode, operationName: string | undefined): PreparedOperation | GqlError {
    const operation = getOperationAST(document, operationName);
    if (!operation) {
      return rejectRequest(
        'OPERATION_RESOLUTION_FAILURE',
        operationName ? `the document has no operation named "${operationName}"` : 'the document has several operations: give operationName',
      );
    }
    // graphql-js 16 validates a subscription against a schema without one and fails it at run time.
    if (!this.schema.getRootType(operation.operation)) {
      return rejectRequest('OPERATION_RESOLUTION_FAILURE', `this API has no ${operation.operation} operations: send a query or a mutation`);
    }
    return {
      operation,
      requiredScopes: requiredScopes(this.schema, document, operation),
      cost: new CostCheck(this.schema, document, operation, this.options.limits),
    };
  }

  private finishResult(result: ExecutionResult): ExecutionResult {
    if (!result.errors) return result;
    // Without `data`, execution never started: the variables did not fit the operation.
    if (!('data' in result)) {
      return { errors: result.errors.map((error) => rejectRequest('BAD_USER_INPUT', error.message, { locatedAt: error })) };
    }
    return {
      ...result,
      errors: result.errors.map((error) =>
        asFieldError(maskError(error, (original) => this.options.logger.error({ err: original, path: error.path }, 'graphql resolver failed'))),
      ),
    };
  }
}

const EMPTY_DOCUMENT: DocumentNode = { kind: Kind.DOCUMENT, definitions: [] };

function refuseMutationOverGet(operation: PreparedOperation, method: string | undefined): void {
  if (method === 'GET' && operation.operation.operation !== 'query') {
    throw new GqlInvalidArgument('only queries may be sent with GET; send mutations with POST', {
      extensions: { reason: 'METHOD_NOT_ALLOWED' },
      http: { status: 405, headers: { Allow: 'POST' } },
    });
  }
}

/**
 * Refuses the whole operation when the token lacks a scope any selected field needs, or has no
 * user while the operation touches a user's data.
 */
function authorize(operation: PreparedOperation, principal: Principal): void {
  if (principal.userId === null && operation.requiredScopes.some(needsUser)) throw new GqlUserRequired('orders');
  const missing = operation.requiredScopes.filter((scope) => !principal.scopes.has(scope));
  if (missing.length > 0) throw new GqlForbidden(missing, { dpop: principal.jkt !== undefined });
}
